//! The rate limit of failed authentications: a fixed table of the addresses that sent wrong
//! proofs lately, and how long to wait before refusing the next one.

use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Failed authentications from one address within [`AUTH_FAIL_WINDOW`] answered at once; each
/// further wrong proof from it is answered only after a delay that doubles with every failure
/// ([`AUTH_DELAY_FIRST`] .. [`AUTH_DELAY_MAX`]). A right proof is never delayed or refused: a
/// collector behind the same address as a guesser (NAT, the same desktop) is not locked out.
pub(crate) const AUTH_FAIL_LIMIT: u32 = 3;
pub(crate) const AUTH_FAIL_WINDOW: Duration = Duration::from_secs(60);
/// Delay of the refusal of the first wrong proof over the limit.
pub(crate) const AUTH_DELAY_FIRST: Duration = Duration::from_millis(250);
/// Longest delay of a refusal (below the handshake deadline).
pub(crate) const AUTH_DELAY_MAX: Duration = Duration::from_secs(1);
/// Addresses the rate limiter remembers (the oldest entry is forgotten first).
const LIMITER_SLOTS: usize = 16;

#[derive(Clone, Copy)]
struct FailEntry {
    ip: IpAddr,
    window_start: Instant,
    failures: u32,
}

/// Remembers failed authentications (per failed nonce pair, counted by address) in a fixed
/// table; see [`AUTH_FAIL_LIMIT`].
pub(crate) struct AuthLimiter {
    slots: [Option<FailEntry>; LIMITER_SLOTS],
}

impl Default for AuthLimiter {
    fn default() -> Self {
        AuthLimiter {
            slots: [None; LIMITER_SLOTS],
        }
    }
}

impl AuthLimiter {
    /// A right proof from `ip`: its failures are forgotten.
    pub(crate) fn succeed(&mut self, ip: IpAddr) {
        for e in self.slots.iter_mut() {
            if e.is_some_and(|e| e.ip == ip) {
                *e = None;
            }
        }
    }

    /// Records a wrong proof; returns how long to wait before refusing it (None: at once).
    pub(crate) fn fail(&mut self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let idx = match self
            .slots
            .iter()
            .position(|e| e.is_some_and(|e| e.ip == ip))
        {
            Some(i) => i,
            None => {
                // A free slot, else forget the entry with the oldest window.
                let i = self
                    .slots
                    .iter()
                    .position(|e| e.is_none())
                    .unwrap_or_else(|| {
                        (0..LIMITER_SLOTS)
                            .min_by_key(|&i| self.slots[i].map(|e| e.window_start))
                            .unwrap_or(0)
                    });
                self.slots[i] = Some(FailEntry {
                    ip,
                    window_start: now,
                    failures: 0,
                });
                i
            }
        };
        let e = self.slots[idx].as_mut()?;
        if now.duration_since(e.window_start) > AUTH_FAIL_WINDOW {
            e.window_start = now;
            e.failures = 0;
        }
        e.failures = e.failures.saturating_add(1);
        let over = e.failures.checked_sub(AUTH_FAIL_LIMIT + 1)?;
        Some(
            AUTH_DELAY_FIRST
                .saturating_mul(1u32 << over.min(16))
                .min(AUTH_DELAY_MAX),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_delays_wrong_proofs_after_three_and_forgets_on_success() {
        let mut l = AuthLimiter::default();
        let ip: IpAddr = "127.0.0.2".parse().unwrap();
        let other: IpAddr = "127.0.0.3".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..AUTH_FAIL_LIMIT {
            assert_eq!(l.fail(ip, t0), None);
        }
        let ms = |d: Option<Duration>| d.map(|d| d.as_millis());
        assert_eq!(ms(l.fail(ip, t0)), Some(250));
        assert_eq!(ms(l.fail(ip, t0)), Some(500));
        assert_eq!(ms(l.fail(ip, t0)), Some(1000));
        assert_eq!(ms(l.fail(ip, t0)), Some(1000), "capped");
        assert_eq!(l.fail(other, t0), None, "per address");
        l.succeed(ip);
        assert_eq!(l.fail(ip, t0), None, "a right proof resets");
    }

    #[test]
    fn limiter_window_expires() {
        let mut l = AuthLimiter::default();
        let ip: IpAddr = "127.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..AUTH_FAIL_LIMIT {
            l.fail(ip, t0);
        }
        assert_eq!(
            l.fail(ip, t0 + AUTH_FAIL_WINDOW + Duration::from_secs(1)),
            None
        );
    }

    #[test]
    fn limiter_table_is_bounded() {
        let mut l = AuthLimiter::default();
        let t0 = Instant::now();
        for i in 0..100u32 {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            l.fail(ip, t0 + Duration::from_millis(i as u64));
        }
        assert_eq!(l.slots.iter().flatten().count(), LIMITER_SLOTS);
    }
}
