//! A minimal collector for the agent's server tests: start the built agent on loopback, connect,
//! authenticate, resume and read frames with `nasprobe_proto::frame` (sealed with the
//! session's MACs after the handshake, as the protocol wants).
//!
//! `NASPROBE_AGENT_BIN` runs another agent binary (e.g. a cross-built one) and
//! `NASPROBE_AGENT_RUNNER` puts a runner in front of it (e.g. `qemu-arm`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nasprobe_proto::frame::{
    MAX_FRAME_LEN, decode_frame, decode_sealed_frame, encode_sealed_frame,
};
use nasprobe_proto::handshake::{ClientAction, ClientHandshake};
use nasprobe_proto::session::FrameMac;
use nasprobe_proto::{Hello, Message, Record, Resume, encode_frame};

/// Every wait in these tests is bounded by this unless said otherwise.
pub const STEP: Duration = Duration::from_secs(10);

pub fn agent_bin() -> PathBuf {
    std::env::var_os("NASPROBE_AGENT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_nasprobe-agent")))
}

/// A command that runs the agent binary (through `NASPROBE_AGENT_RUNNER` when set).
pub fn agent_command() -> Command {
    match std::env::var("NASPROBE_AGENT_RUNNER") {
        Ok(r) if !r.is_empty() => {
            let mut c = Command::new(r);
            c.arg(agent_bin());
            c
        }
        _ => Command::new(agent_bin()),
    }
}

/// A running agent, killed on drop.
pub struct Agent {
    pub child: Child,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub token: Vec<u8>,
    log: Arc<Mutex<String>>,
}

pub struct AgentBuilder {
    args: Vec<String>,
    pre_exec: Option<Box<dyn FnMut() -> std::io::Result<()> + Send + Sync>>,
    name: String,
}

impl AgentBuilder {
    pub fn new(name: &str) -> AgentBuilder {
        AgentBuilder {
            args: Vec::new(),
            pre_exec: None,
            name: name.to_string(),
        }
    }

    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_string());
        self
    }

    pub fn args(mut self, a: &[&str]) -> Self {
        self.args.extend(a.iter().map(|s| s.to_string()));
        self
    }

    /// Runs `f` in the child between fork and exec (e.g. to install a seccomp filter).
    pub fn pre_exec(
        mut self,
        f: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.pre_exec = Some(Box::new(f));
        self
    }

    pub fn start(self) -> Agent {
        let dir = std::env::temp_dir().join(format!(
            "nasprobe-agent-test-{}-{}",
            std::process::id(),
            self.name
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let token_file = dir.join("token");
        let mut cmd = agent_command();
        cmd.args(["--listen", "127.0.0.1:0", "--nice", "0", "--token-file"])
            .arg(&token_file)
            .args(&self.args)
            .env("NASPROBE_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut user = self.pre_exec;
        // SAFETY: only raw syscalls (prctl, and the caller's seccomp setup) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // The agent dies with the test thread that started it, even if the test aborts.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                match user.as_mut() {
                    Some(f) => f(),
                    None => Ok(()),
                }
            });
        }
        let mut child = cmd.spawn().expect("spawn agent");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
        let log2 = log.clone();
        let name = self.name.clone();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if std::env::var_os("NASPROBE_TEST_ECHO").is_some() {
                    eprintln!("[agent {name}] {line}");
                }
                if !sent
                    && let Some(rest) = line.split("listening on ").nth(1)
                    && let Some(a) = rest.split_whitespace().next().and_then(|a| a.parse().ok())
                {
                    let _ = tx.send(a);
                    sent = true;
                }
                let mut l = log2.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(100));
                panic!("agent did not start; log:\n{}", log.lock().unwrap());
            }
        };
        let token = std::fs::read(&token_file).unwrap().trim_ascii().to_vec();
        Agent {
            child,
            addr,
            dir,
            token,
            log,
        }
    }
}

impl Agent {
    pub fn start(name: &str, args: &[&str]) -> Agent {
        AgentBuilder::new(name).args(args).start()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until the agent's log contains `needle`.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Connects, authenticates and returns the connection with the agent's `Hello`.
    pub fn connect(&self) -> (Conn, Hello) {
        let mut c = Conn::connect(self.addr);
        let h = c
            .handshake(&self.token)
            .unwrap_or_else(|e| panic!("{e}\nlog:\n{}", self.log()));
        (c, h)
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill on our own child.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    /// Waits for the agent to exit; its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One collector connection.
pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
    /// The session's MACs (to the agent, from it) once the agent proved the token.
    pub tx_mac: Option<FrameMac>,
    pub rx_mac: Option<FrameMac>,
    /// The session key, once the agent proved the token.
    pub session_key: Option<[u8; 32]>,
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect_timeout(&addr, STEP).expect("connect");
        Conn::from_stream(stream)
    }

    pub fn from_stream(stream: TcpStream) -> Conn {
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
            tx_mac: None,
            rx_mac: None,
            session_key: None,
        }
    }

    pub fn send(&mut self, msg: &Message) {
        let mut out = [0u8; 512];
        let n = match self.tx_mac.as_mut() {
            Some(mac) => encode_sealed_frame(msg, &mut out, mac).unwrap(),
            None => encode_frame(msg, &mut out).unwrap(),
        };
        self.stream.write_all(&out[..n]).unwrap();
    }

    /// The next message, within `timeout`. `Err` on EOF, reset, timeout or a bad frame.
    pub fn recv_within(&mut self, timeout: Duration) -> Result<Message, String> {
        let end = Instant::now() + timeout;
        loop {
            let got = match self.rx_mac.as_mut() {
                Some(mac) => decode_sealed_frame(&self.buf, MAX_FRAME_LEN, mac),
                None => decode_frame(&self.buf, MAX_FRAME_LEN),
            };
            match got {
                Ok(Some((m, used))) => {
                    self.buf.drain(..used);
                    return Ok(m);
                }
                Ok(None) => {}
                Err(e) => return Err(format!("bad frame from agent: {e}")),
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("timeout".into());
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            let mut chunk = [0u8; 16384];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("eof".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return Err("timeout".into());
                }
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }

    pub fn recv(&mut self) -> Result<Message, String> {
        self.recv_within(STEP)
    }

    /// Challenge → Auth → AuthOk (checked) → Hello, driven by the protocol's own handshake
    /// machine.
    pub fn handshake(&mut self, token: &[u8]) -> Result<Hello, String> {
        let mut client_nonce = [0u8; 32];
        for (i, b) in client_nonce.iter_mut().enumerate() {
            *b = (i as u8)
                .wrapping_mul(31)
                .wrapping_add(std::process::id() as u8);
        }
        let mut hs = ClientHandshake::new(client_nonce);
        loop {
            match hs.on_message(token, self.recv()?) {
                Ok(ClientAction::SendAuth(a)) => self.send(&Message::Auth(a)),
                Ok(ClientAction::Wait) => {
                    let (tx, rx) = hs.frame_macs(token).expect("the agent's proof checked");
                    self.tx_mac = Some(tx);
                    self.rx_mac = Some(rx);
                    self.session_key = hs.session_key(token);
                }
                Ok(ClientAction::Hello(h)) => return Ok(h),
                Err(e) => return Err(format!("handshake: {e:?}")),
            }
        }
    }

    pub fn resume(&mut self, instance_id: u64, after_seq: u64) {
        self.send(&Message::Resume(Resume {
            instance_id,
            after_seq,
        }));
    }

    /// The next `Record`, skipping `KeepAlive`s; panics on anything else.
    pub fn record(&mut self) -> Record {
        loop {
            match self.recv() {
                Ok(Message::Record(r)) => return r,
                Ok(Message::KeepAlive(_)) => continue,
                other => panic!("expected a Record, got {other:?}"),
            }
        }
    }

    /// True when the agent closed the connection (EOF or reset) within `timeout`, after
    /// possibly sending some frames (returned).
    pub fn closed_within(&mut self, timeout: Duration) -> (bool, Vec<Message>) {
        let end = Instant::now() + timeout;
        let mut got = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return (false, got);
            }
            match self.recv_within(left) {
                Ok(m) => got.push(m),
                Err(e) if e == "timeout" => return (false, got),
                Err(_) => return (true, got),
            }
        }
    }
}

/// Connects from a chosen local address (e.g. 127.0.0.2) with an optional small SO_RCVBUF set
/// before the connection is made (so the advertised window is small from the start).
pub fn connect_from(local: Option<&str>, rcvbuf: Option<usize>, to: SocketAddr) -> Conn {
    use nix::sys::socket::{
        AddressFamily, SockFlag, SockType, SockaddrIn, bind, connect, setsockopt, socket, sockopt,
    };
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .unwrap();
    if let Some(n) = rcvbuf {
        setsockopt(&fd, sockopt::RcvBuf, &n).unwrap();
    }
    use std::os::fd::AsRawFd;
    if let Some(ip) = local {
        let a: std::net::SocketAddrV4 = format!("{ip}:0").parse().unwrap();
        bind(fd.as_raw_fd(), &SockaddrIn::from(a)).unwrap();
    }
    let SocketAddr::V4(to4) = to else {
        panic!("v4 only")
    };
    connect(fd.as_raw_fd(), &SockaddrIn::from(to4)).unwrap();
    Conn::from_stream(TcpStream::from(fd))
}

/// Reads records until `seq >= until`, asserting that seqs are contiguous from `first`.
pub fn read_contiguous(c: &mut Conn, first: u64, until: u64) -> Vec<Record> {
    let mut out = Vec::new();
    let mut expect = first;
    while expect <= until {
        let r = c.record();
        assert_eq!(r.seq, expect, "records must be contiguous");
        expect += 1;
        out.push(r);
    }
    out
}

pub use nasprobe_testkit::big_stack;
