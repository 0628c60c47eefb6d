//! The top processes of a sample: which they are, their run_delay, hottest thread and command
//! line.

use super::*;

impl Procs {
    pub(super) fn select_top(&mut self) {
        self.top.clear();
        let n = self.top_n;
        if n == 0 {
            return;
        }
        for i in 0..self.table.len() {
            let p = &self.table[i];
            if p.read_at != self.sample_no || p.ticks() == 0 {
                continue;
            }
            let t = p.ticks();
            // Insertion into a short sorted list (busiest first, then lower pid).
            let pos = self
                .top
                .iter()
                .position(|&k| {
                    let q = &self.table[k];
                    t > q.ticks() || (t == q.ticks() && p.pid < q.pid)
                })
                .unwrap_or(self.top.len());
            if pos >= n {
                continue;
            }
            if self.top.len() == n {
                self.top.pop();
            }
            let _ = self.top.insert(pos, i);
        }
    }

    pub(super) fn fill_top(&mut self, root: &Root, buf: &mut [u8], out: &mut Sample) {
        self.threads_next.clear();
        for k in 0..self.top.len() {
            let i = self.top[k];
            self.table[i].flags |= F_WAS_TOP;
            let run_delay_us = self.run_delay(root, buf, i);
            let hottest = if k < HOT_THREAD_PROCS {
                self.hottest_thread(root, buf, i)
            } else {
                None
            };
            let p = &self.table[i];
            let mut comm = Comm::new();
            crate::parse::to_label(p.comm(), COMM_LEN, &mut comm);
            let cmdline = if p.flags & F_CMDLINE_SENT == 0 {
                self.capture_cmdline(root, buf, i);
                self.table[i].flags |= F_CMDLINE_SENT;
                Some(self.info(i).cmdline)
            } else {
                None
            };
            let p = &self.table[i];
            let _ = out.top.push(ProcSample {
                pid: p.pid,
                comm,
                state: p.state,
                threads: p.threads.min(u16::MAX as u32) as u16,
                utime: p.d_utime,
                stime: p.d_stime,
                run_delay_us,
                hottest_thread: hottest,
                cmdline,
            });
        }
        self.threads_next.sort_unstable_by_key(|t| (t.pid, t.tid));
        std::mem::swap(&mut self.threads, &mut self.threads_next);
    }

    pub(super) fn run_delay(&mut self, root: &Root, buf: &mut [u8], i: usize) -> Option<u32> {
        let pid = self.table[i].pid;
        self.path.clear().num(pid).bytes(b"/schedstat");
        let ns = match root.read_once(self.path.as_cstr(), buf) {
            Ok(b) => parse_schedstat(b).ok()?,
            Err(_) => return None,
        };
        let p = &mut self.table[i];
        let r = if p.rd_at > 0 {
            let elapsed = self.sample_no.saturating_sub(p.rd_at).max(1) as u64;
            step(p.run_delay, ns).map(|d| u32s(avg(d, elapsed) / 1000))
        } else {
            None
        };
        p.run_delay = ns;
        p.rd_at = self.sample_no;
        r
    }

    /// The busiest thread of process `i` in the interval. Single-threaded: the process itself.
    /// Otherwise /proc/PID/task/*/stat is read and compared with the previous sample's reads
    /// (a process that just entered the top has no previous reads: None this time).
    pub(super) fn hottest_thread(
        &mut self,
        root: &Root,
        buf: &mut [u8],
        i: usize,
    ) -> Option<ThreadSample> {
        let p = &self.table[i];
        if p.threads <= 1 {
            return Some(ThreadSample {
                tid: p.pid,
                comm: None,
                ticks: p.d_utime + p.d_stime,
            });
        }
        let (pid, proc_comm, proc_comm_len) = (p.pid, p.comm, p.comm_len as usize);
        self.path.clear().num(pid).bytes(b"/task");
        let dir = io::open_raw(
            root.fd(),
            self.path.as_cstr(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        )
        .ok()?;
        let mut tids = std::mem::take(&mut self.tids);
        match io::list_numeric(
            Some(dir.as_fd()),
            &mut self.dents,
            &mut tids,
            THREADS_PER_PROC_MAX,
        ) {
            Ok(true) => {}
            Ok(false) => self.log_threads.warn(format_args!(
                "process {} has more than THREADS_PER_PROC_MAX={THREADS_PER_PROC_MAX} threads: the rest are not read",
                pid
            )),
            Err(_) => {}
        }
        let mut best: Option<(u64, u32, [u8; COMM_LEN], u8)> = None;
        for &tid in &tids {
            self.path.clear().num(tid).bytes(b"/stat");
            let Ok(b) = root_read(dir.as_fd(), self.path.as_cstr(), buf) else {
                continue;
            };
            let Ok(st) = parse_pid_stat(b) else { continue };
            let ticks = st.utime + st.stime;
            let prev = self
                .threads
                .binary_search_by_key(&(pid, tid), |t| (t.pid, t.tid))
                .ok()
                .map(|k| self.threads[k]);
            if self.threads_next.len() < THREAD_TABLE_CAP {
                self.threads_next.push(Thr {
                    pid,
                    tid,
                    ticks,
                    at: self.sample_no,
                });
            }
            let Some(prev) = prev.filter(|t| t.at + 1 == self.sample_no) else {
                continue;
            };
            let d = step(prev.ticks, ticks).unwrap_or(0);
            if best.is_none_or(|b| d > b.0) {
                let mut c = [0u8; COMM_LEN];
                let n = st.comm().len().min(COMM_LEN);
                c[..n].copy_from_slice(&st.comm()[..n]);
                best = Some((d, tid, c, n as u8));
            }
        }
        self.tids = tids;
        let (d, tid, c, n) = best?;
        let name = &c[..n as usize];
        let comm = if name == &proc_comm[..proc_comm_len] {
            None
        } else {
            let mut s = Comm::new();
            crate::parse::to_label(name, COMM_LEN, &mut s);
            Some(s)
        };
        Some(ThreadSample {
            tid,
            comm,
            ticks: u32s(d),
        })
    }

    /// Reads, formats and keeps the command line of process `i` (once).
    pub(super) fn capture_cmdline(&mut self, root: &Root, buf: &mut [u8], i: usize) {
        if self.table[i].slot != NO_SLOT {
            return;
        }
        let Some(slot) = self.cmd_free.pop() else {
            self.log_slots.warn(format_args!(
                "CMDLINE_SLOTS={CMDLINE_SLOTS} command lines held: exit events of further processes carry none"
            ));
            return;
        };
        let pid = self.table[i].pid;
        self.path.clear().num(pid).bytes(b"/cmdline");
        let n = CMDLINE_READ.min(buf.len());
        let raw: &[u8] = match io::open_raw(root.fd(), self.path.as_cstr(), libc::O_RDONLY) {
            Ok(f) => match io::read_at(f.as_fd(), &mut buf[..n]) {
                Ok(b) => b,
                Err(ReadError::Full) => &buf[..n],
                Err(_) => &[],
            },
            Err(_) => &[],
        };
        let mut s = Cmdline::new();
        format_cmdline(
            raw,
            self.patterns.iter().map(|p| p.as_slice()),
            self.cmdline_bytes,
            &mut s,
        );
        let k = slot as usize;
        self.cmd_slots[k][..s.len()].copy_from_slice(s.as_bytes());
        self.cmd_lens[k] = s.len() as u16;
        self.table[i].slot = slot;
    }
}
