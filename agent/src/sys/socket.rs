//! TCP socket facts std does not give: the kernel's `tcp_info`.

use std::os::fd::AsRawFd;

/// The socket's total retransmissions (`tcpi_total_retrans`), 0 when unreadable.
pub(crate) fn total_retransmits(s: &std::net::TcpStream) -> u32 {
    // SAFETY: getsockopt fills at most `len` bytes of a zeroed tcp_info we own.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let r = libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if r == 0 { info.tcpi_total_retrans } else { 0 }
    }
}
