//! The handshake as a sans-I/O state machine, one per side; the agent's server, the collector's
//! client and every test peer drive these instead of writing the steps by hand:
//!
//! ```text
//! agent                         collector
//! Challenge(agent_nonce)   →
//!                          ←    Auth(client_nonce, client proof)
//! AuthOk(agent proof)      →    (checked in constant time: mutual authentication)
//! Hello                    →
//!                          ←    Resume(instance_id, after_seq)
//! ```
//!
//! Each side feeds every message it receives to [`AgentHandshake::on_message`] or
//! [`ClientHandshake::on_message`] and does what the returned action says; a message out of
//! order, a wrong proof, a `Refused` or a Hello of another protocol version is a typed
//! [`HandshakeError`]. Neither side does any I/O here. Once the proofs check, `frame_macs`
//! gives the connection's per-frame MACs ([`crate::session`]): the agent seals every frame
//! after `AuthOk`, the collector every frame after `Auth`.

use heapless::String;

use crate::auth::{agent_proof, client_proof, proofs_equal};
use crate::session::{Direction, FrameMac};
use crate::{Auth, AuthOk, Challenge, Hello, Message, PROTOCOL_VERSION, REASON_LEN, ResumeWith};

/// Why a handshake failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandshakeError {
    /// A message the protocol does not allow at this step.
    Unexpected {
        /// The step: "Auth", "Resume", "Challenge", "AuthOk", "Hello" awaited, or "streaming".
        awaiting: &'static str,
        /// The message that came instead (its [`crate::Message::name`]).
        got: &'static str,
    },
    /// The peer's proof of the token is wrong (a wrong token, or a peer that is not one of
    /// ours).
    BadProof,
    /// The agent refused, with its reason.
    Refused(String<REASON_LEN>),
    /// The agent's Hello speaks another protocol version.
    Version(u8),
}

impl core::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HandshakeError::Unexpected { awaiting, got } => {
                write!(f, "unexpected {got} (awaiting {awaiting})")
            }
            HandshakeError::BadProof => write!(f, "authentication failed (wrong token?)"),
            HandshakeError::Refused(r) => write!(f, "refused: {r}"),
            HandshakeError::Version(v) => write!(
                f,
                "protocol version {v} is not supported (this side speaks {PROTOCOL_VERSION})"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for HandshakeError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentState {
    AwaitAuth,
    AwaitResume,
    /// A test runs for this connection.
    Testing,
    Streaming,
}

/// The agent's side of one connection.
#[derive(Debug, Clone)]
pub struct AgentHandshake {
    agent_nonce: [u8; 32],
    /// The collector's nonce, once its proof checked.
    client_nonce: Option<[u8; 32]>,
    state: AgentState,
}

/// What the agent does with a message it received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentAction {
    /// The collector proved the token: send `Message::AuthOk` of this, then the agent's
    /// `Hello`.
    SendAuthOk(AuthOk),
    /// The handshake is complete: stream from this point of the history (a plain `Resume`
    /// arrives as a `ResumeWith` that accepts nothing newer).
    Resume(ResumeWith),
    /// Nothing to do (a `KeepAlive`).
    Nothing,
    /// The collector asked for a test instead of a stream: run it (or refuse), send its
    /// `TestResult`, close.
    Test(crate::TestRequest),
}

impl AgentHandshake {
    /// A new connection with a fresh random nonce.
    pub fn new(agent_nonce: [u8; 32]) -> Self {
        AgentHandshake {
            agent_nonce,
            client_nonce: None,
            state: AgentState::AwaitAuth,
        }
    }

    /// Once the collector proved the token: the MACs of (frames to it, frames from it).
    pub fn frame_macs(&self, token: &[u8]) -> Option<(FrameMac, FrameMac)> {
        let c = self.client_nonce.as_ref()?;
        Some((
            FrameMac::new(token, &self.agent_nonce, c, Direction::ToCollector),
            FrameMac::new(token, &self.agent_nonce, c, Direction::ToAgent),
        ))
    }

    /// Once the collector proved the token: the connection's session key (a test's run key
    /// is derived from it, [`crate::test_stream`]).
    pub fn session_key(&self, token: &[u8]) -> Option<[u8; 32]> {
        let c = self.client_nonce.as_ref()?;
        Some(crate::session::session_key(token, &self.agent_nonce, c))
    }

    /// The first frame of the connection.
    pub fn challenge(&self) -> Message {
        Message::Challenge(Challenge {
            agent_nonce: self.agent_nonce,
        })
    }

    /// True once `Resume` has arrived.
    pub fn is_streaming(&self) -> bool {
        self.state == AgentState::Streaming
    }

    /// True once a `TestRequest` has arrived (the connection waits for its result).
    pub fn is_testing(&self) -> bool {
        self.state == AgentState::Testing
    }

    /// The step awaited, for messages and logs ("Auth", "Resume", "streaming").
    pub fn awaiting(&self) -> &'static str {
        match self.state {
            AgentState::AwaitAuth => "Auth",
            AgentState::AwaitResume => "Resume",
            AgentState::Streaming => "streaming",
            AgentState::Testing => "the test's end",
        }
    }

    /// Feeds one message from the collector. After an error the connection must be dropped.
    #[allow(clippy::result_large_err)] // the refusal's reason is a fixed-capacity string
    pub fn on_message(
        &mut self,
        token: &[u8],
        msg: &Message,
    ) -> Result<AgentAction, HandshakeError> {
        match (self.state, msg) {
            (AgentState::AwaitAuth, Message::Auth(a)) => {
                let expect = client_proof(token, &self.agent_nonce, &a.client_nonce);
                if !proofs_equal(&expect, &a.mac) {
                    return Err(HandshakeError::BadProof);
                }
                self.state = AgentState::AwaitResume;
                self.client_nonce = Some(a.client_nonce);
                Ok(AgentAction::SendAuthOk(AuthOk {
                    mac: agent_proof(token, &self.agent_nonce, &a.client_nonce),
                }))
            }
            (AgentState::AwaitResume, Message::Resume(r)) => {
                self.state = AgentState::Streaming;
                Ok(AgentAction::Resume(ResumeWith::from(r)))
            }
            (AgentState::AwaitResume, Message::ResumeWith(r)) => {
                self.state = AgentState::Streaming;
                Ok(AgentAction::Resume(r.clone()))
            }
            (AgentState::AwaitResume, Message::TestRequest(t)) => {
                self.state = AgentState::Testing;
                Ok(AgentAction::Test(t.clone()))
            }
            (
                AgentState::AwaitResume | AgentState::Streaming | AgentState::Testing,
                Message::KeepAlive(_),
            ) => Ok(AgentAction::Nothing),
            (_, other) => Err(HandshakeError::Unexpected {
                awaiting: self.awaiting(),
                got: other.name(),
            }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientState {
    AwaitChallenge,
    AwaitAuthOk { agent_nonce: [u8; 32] },
    AwaitHello,
    Done,
}

/// The collector's side of one connection.
#[derive(Debug, Clone)]
pub struct ClientHandshake {
    client_nonce: [u8; 32],
    /// The agent's nonce, once its proof checked.
    agent_nonce: Option<[u8; 32]>,
    state: ClientState,
}

/// What the collector does with a message it received.
#[allow(clippy::large_enum_variant)] // no_std, no alloc: nothing to box into
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAction {
    /// Send `Message::Auth` of this.
    SendAuth(Auth),
    /// The agent proved the token; wait for its Hello.
    Wait,
    /// The agent's Hello: the handshake is done, send `Resume` next.
    Hello(Hello),
}

impl ClientHandshake {
    /// A new connection with a fresh random nonce.
    pub fn new(client_nonce: [u8; 32]) -> Self {
        ClientHandshake {
            client_nonce,
            agent_nonce: None,
            state: ClientState::AwaitChallenge,
        }
    }

    /// Once the agent proved the token: the MACs of (frames to it, frames from it).
    pub fn frame_macs(&self, token: &[u8]) -> Option<(FrameMac, FrameMac)> {
        let a = self.agent_nonce.as_ref()?;
        Some((
            FrameMac::new(token, a, &self.client_nonce, Direction::ToAgent),
            FrameMac::new(token, a, &self.client_nonce, Direction::ToCollector),
        ))
    }

    /// Once the agent proved the token: the connection's session key.
    pub fn session_key(&self, token: &[u8]) -> Option<[u8; 32]> {
        let a = self.agent_nonce.as_ref()?;
        Some(crate::session::session_key(token, a, &self.client_nonce))
    }

    /// True once the Hello has arrived.
    pub fn is_done(&self) -> bool {
        self.state == ClientState::Done
    }

    /// The step awaited ("Challenge", "AuthOk", "Hello", "streaming").
    pub fn awaiting(&self) -> &'static str {
        match self.state {
            ClientState::AwaitChallenge => "Challenge",
            ClientState::AwaitAuthOk { .. } => "AuthOk",
            ClientState::AwaitHello => "Hello",
            ClientState::Done => "streaming",
        }
    }

    /// Feeds one message from the agent. After an error the connection must be dropped.
    #[allow(clippy::result_large_err)] // the refusal's reason is a fixed-capacity string
    pub fn on_message(
        &mut self,
        token: &[u8],
        msg: Message,
    ) -> Result<ClientAction, HandshakeError> {
        match (self.state, msg) {
            (ClientState::Done, other) => Err(HandshakeError::Unexpected {
                awaiting: "streaming",
                got: other.name(),
            }),
            (_, Message::Refused(r)) => Err(HandshakeError::Refused(r.reason)),
            (ClientState::AwaitChallenge, Message::Challenge(c)) => {
                self.state = ClientState::AwaitAuthOk {
                    agent_nonce: c.agent_nonce,
                };
                Ok(ClientAction::SendAuth(Auth {
                    client_nonce: self.client_nonce,
                    mac: client_proof(token, &c.agent_nonce, &self.client_nonce),
                }))
            }
            (ClientState::AwaitAuthOk { agent_nonce }, Message::AuthOk(ok)) => {
                let want = agent_proof(token, &agent_nonce, &self.client_nonce);
                if !proofs_equal(&ok.mac, &want) {
                    return Err(HandshakeError::BadProof);
                }
                self.state = ClientState::AwaitHello;
                self.agent_nonce = Some(agent_nonce);
                Ok(ClientAction::Wait)
            }
            (ClientState::AwaitHello, Message::Hello(h)) => {
                if h.protocol_version != PROTOCOL_VERSION {
                    return Err(HandshakeError::Version(h.protocol_version));
                }
                self.state = ClientState::Done;
                Ok(ClientAction::Hello(h))
            }
            (_, other) => Err(HandshakeError::Unexpected {
                awaiting: self.awaiting(),
                got: other.name(),
            }),
        }
    }
}
