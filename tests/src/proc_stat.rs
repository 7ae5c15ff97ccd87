//! What a process consumes, read from `/proc/<pid>`: CPU time, resident
//! memory and open file descriptors.
//!
//! Used to check behaviour, not speed: a cancelled call must stop consuming
//! CPU, which shows as the process's CPU time no longer growing; a server
//! under load for long must keep its memory and descriptors flat.

/// User + system CPU time of the whole process (all threads), in clock ticks
/// (`USER_HZ`, 100 per second on Linux).
pub fn cpu_ticks(pid: u32) -> u64 {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    // The command name (field 2) is in parentheses and may contain spaces:
    // split after the last ')'. Then field 3 (state) is index 0, so utime
    // (field 14) is index 11 and stime (field 15) is index 12.
    let after = &stat[stat.rfind(')').expect("/proc/<pid>/stat has a ')'") + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields[11].parse().expect("utime is a number");
    let stime: u64 = fields[12].parse().expect("stime is a number");
    utime + stime
}

/// Clock ticks per second in `/proc/<pid>/stat` (`USER_HZ`).
pub const TICKS_PER_SECOND: u64 = 100;

/// How long each CPU sample of [`StdioServer::wait_for_cpu`] lasts.
pub const CPU_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);

/// A window's worth of ticks at full use of one core.
pub fn full_core() -> u64 {
    CPU_WINDOW.as_millis() as u64 * TICKS_PER_SECOND / 1000
}

impl crate::StdioServer {
    /// Samples the server's CPU use window by window (handling its output
    /// meanwhile) until `done(ticks)` holds; fails with `what` and the samples
    /// if it never does within the harness timeout.
    pub fn wait_for_cpu(&mut self, what: &str, done: impl Fn(u64) -> bool) {
        let deadline = std::time::Instant::now() + crate::timeout();
        let mut samples = Vec::new();
        loop {
            let before = self.cpu_ticks();
            self.drain_until(std::time::Instant::now() + CPU_WINDOW);
            let ticks = self.cpu_ticks() - before;
            samples.push(ticks);
            if done(ticks) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: never seen within {:?}; CPU ticks per {CPU_WINDOW:?} window ({TICKS_PER_SECOND}/s): \
                 {samples:?}\nstderr:\n{}",
                crate::timeout(),
                self.stderr()
            );
        }
    }
}

/// Resident memory of the process (`VmRSS` in `/proc/<pid>/status`), in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{path} has no VmRSS line"))
}

/// File descriptors the process has open (entries of `/proc/<pid>/fd`).
pub fn open_fds(pid: u32) -> usize {
    let path = format!("/proc/{pid}/fd");
    std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("read {path}: {e}"))
        .count()
}
