//! What the numbers were measured on: CPU model, cores, memory, kernel, and
//! the git commit of the code measured.

use std::process::Command;

pub fn description() -> Vec<(&'static str, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
        .map_or_else(
            || "unknown".into(),
            |kb| format!("{:.1} GiB", kb as f64 / (1 << 20) as f64),
        );
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    vec![
        ("CPU", cpu),
        ("cores", cores.to_string()),
        ("memory", memory),
        ("kernel", kernel.trim().to_string()),
        (
            "load average at start",
            load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        ),
        ("commit", git(&["rev-parse", "--short=12", "HEAD"]) + &dirty()),
    ]
}

fn git(args: &[&str]) -> String {
    Command::new("git")
        .args(args)
        .current_dir(wasm_mcp_tests::workspace_root())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn dirty() -> String {
    if git(&["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        String::new()
    } else {
        " (with uncommitted changes)".into()
    }
}

/// The resident set size of process `pid`, in bytes.
pub fn rss_bytes(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// The largest resident set size process `pid` has had, in bytes.
pub fn peak_rss_bytes(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:")
}

/// A `kB` line of `/proc/<pid>/status`, in bytes (0 when missing).
fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}
