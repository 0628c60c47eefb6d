//! The kernel's event sources of the server's poll loop, each a descriptor to poll and a
//! bounded drain: the process connector (how processes end) and the kernel log (OOM kills,
//! segfaults, NIC and TCP-memory messages).

pub mod connector;
pub mod kmsg;
