//! Plausibility of an agent's traffic-control caps (`Event::Shaping`).

use nasprobe_proto::{Hello, Shaping};

/// Every shaped NIC is in the inventory and every cap is above 0 and at most
/// `max_link_mbit`, the fastest link the collector believes in.
pub(super) fn check(hello: &Hello, s: &Shaping, max_link_mbit: u32) -> Result<(), String> {
    for n in &s.nics {
        if usize::from(n.nic) >= hello.nics.len() {
            return Err(format!("shaping of nic {} not in the inventory", n.nic));
        }
        for c in &n.classes {
            if c.cap_bit_s == 0 || c.cap_bit_s > u64::from(max_link_mbit) * 1_000_000 {
                return Err(format!(
                    "shaping of nic {} cap {} bit/s",
                    n.nic, c.cap_bit_s
                ));
            }
        }
    }
    Ok(())
}
