//! What a process costs, from /proc: open descriptors, resident memory, CPU time; whether a
//! process with a given command line runs.

use std::fs;

/// Whether any process's command line holds `text` (NUL separates its arguments).
pub fn any_process_with(text: &str) -> bool {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
        .any(|cmd| String::from_utf8_lossy(&cmd).contains(text))
}

/// Open file descriptors of `pid`.
pub fn open_fds(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("list /proc/{pid}/fd: {e}"))
        .count()
}

/// Resident set size of `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// User + system CPU time `pid` has used, in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).expect("read stat");
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the state field.
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks as f64 / hz
}

/// Each thread of `pid` by name (`comm`, 15 bytes at most), with the seconds it has run on a
/// CPU (schedstat's nanoseconds, not clock ticks: a thread that ran 5 ms still shows).
pub fn threads_cpu_seconds(pid: u32) -> Vec<(String, f64)> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap_or_else(|e| panic!("list /proc/{pid}/task: {e}"));
    tasks
        .flatten()
        .filter_map(|task| {
            let comm = fs::read_to_string(task.path().join("comm")).ok()?;
            let schedstat = fs::read_to_string(task.path().join("schedstat")).ok()?;
            let ns: u64 = schedstat.split_whitespace().next()?.parse().ok()?;
            Some((comm.trim_end().to_string(), ns as f64 / 1e9))
        })
        .collect()
}

/// Raises this process's soft RLIMIT_NOFILE to its hard limit (load tests hold thousands of
/// sockets); returns the soft limit in effect.
pub fn raise_own_fd_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur = l.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
    }
    l.rlim_cur
}
