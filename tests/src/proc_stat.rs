//! CPU time consumed by a process, read from `/proc/<pid>/stat`.
//!
//! Used to check behaviour, not speed: a cancelled call must stop consuming
//! CPU, which shows as the process's CPU time no longer growing.

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
