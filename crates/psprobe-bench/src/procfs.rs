//! What the benchmark reads from the kernel about processes and the machine: a process's CPU
//! time (/proc/PID/stat), its RSS and peak RSS (/proc/PID/status, reset through clear_refs),
//! its threads' context switches, the machine's CPU ticks (/proc/stat), and the CPU time and
//! context switches of this process's finished children (getrusage). Parsing is split from
//! reading so the parsers are tested on fixtures.

use std::fs;
use std::io;

use anyhow::{Context, Result};

/// Clock ticks per second (`_SC_CLK_TCK`): the unit of /proc/PID/stat and /proc/stat.
pub fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a constant; no memory is passed.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// CPUs online (`_SC_NPROCESSORS_ONLN`, what Python's os.cpu_count() reports).
pub fn cpus_online() -> Option<u64> {
    // SAFETY: as above.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u64::try_from(n).ok().filter(|n| *n > 0)
}

/// (utime, stime) of a whole process (every thread, living and exited), in clock ticks.
pub fn cpu_split(pid: u32) -> Result<(u64, u64)> {
    let path = format!("/proc/{pid}/stat");
    let text = fs::read_to_string(&path)
        .with_context(|| format!("cannot read {path} (is process {pid} still running?)"))?;
    parse_stat_cpu(&text).with_context(|| format!("{path}: no utime/stime fields"))
}

/// utime and stime of a /proc/PID/stat line. The command name in parentheses may hold spaces
/// and parentheses, so the fields are counted after the last ')'.
pub fn parse_stat_cpu(text: &str) -> Option<(u64, u64)> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is the state (field 3 of stat); utime is field 14, stime field 15.
    Some((fields.get(11)?.parse().ok()?, fields.get(12)?.parse().ok()?))
}

/// A "Key:   123 kB" line of /proc/PID/status, in KiB; `None` if the process or key is gone.
pub fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_kib(&text, key)
}

/// `status_kib` of a status file's text.
pub fn parse_status_kib(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Resets VmHWM to the current RSS (Linux >= 4.0, writing "5" to clear_refs). `false` when not
/// allowed (another user's process without CAP_SYS_PTRACE): the peak then covers the whole
/// life of the process.
pub fn reset_peak_rss(pid: u32) -> bool {
    fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Voluntary + involuntary context switches of the process's threads alive now (a proxy's
/// worker threads live as long as it does): how often its threads went to sleep or were
/// preempted. `None` when the process is gone.
pub fn context_switches(pid: u32) -> Option<u64> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    for task in tasks.flatten() {
        // A thread may exit between listing and reading: it then counts nothing.
        if let Ok(text) = fs::read_to_string(task.path().join("status")) {
            total += parse_context_switches(&text);
        }
    }
    Some(total)
}

/// voluntary_ctxt_switches + nonvoluntary_ctxt_switches of a status file's text.
pub fn parse_context_switches(text: &str) -> u64 {
    ["voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"]
        .iter()
        .filter_map(|key| parse_status_kib(text, key))
        .sum()
}

/// Clock ticks of all CPUs since boot, from the "cpu" line of /proc/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MachineTicks {
    /// user + nice + system: time in processes.
    pub tasks: u64,
    /// irq + softirq (the loopback network stack does much of its work in softirq).
    pub irq: u64,
    /// Time other guests on the host took.
    pub steal: u64,
    /// All of the above plus idle and iowait.
    pub total: u64,
}

impl MachineTicks {
    /// `self - earlier`, field by field.
    pub fn since(&self, earlier: &MachineTicks) -> MachineTicks {
        MachineTicks {
            tasks: self.tasks.saturating_sub(earlier.tasks),
            irq: self.irq.saturating_sub(earlier.irq),
            steal: self.steal.saturating_sub(earlier.steal),
            total: self.total.saturating_sub(earlier.total),
        }
    }
}

/// The machine's ticks now.
pub fn machine_ticks() -> Result<MachineTicks> {
    let text = fs::read_to_string("/proc/stat").context("cannot read /proc/stat")?;
    parse_machine_ticks(&text).context("/proc/stat: no cpu line")
}

/// The first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal ...".
/// Older kernels print fewer columns; the missing ones count 0.
pub fn parse_machine_ticks(text: &str) -> Option<MachineTicks> {
    let line = text.lines().next()?;
    let mut parts = line.split_whitespace();
    if parts.next()? != "cpu" {
        return None;
    }
    let mut v = [0u64; 8];
    for (slot, part) in v.iter_mut().zip(parts) {
        *slot = part.parse().ok()?;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    let tasks = user + nice + system;
    Some(MachineTicks {
        tasks,
        irq: irq + softirq,
        steal,
        total: tasks + irq + softirq + steal + idle + iowait,
    })
}

/// CPU seconds (user + system) and context switches of this process's finished, waited-for
/// children.
pub fn children_usage() -> io::Result<(f64, u64)> {
    // SAFETY: getrusage fills the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = secs(usage.ru_utime) + secs(usage.ru_stime);
    let ctxsw = (usage.ru_nvcsw + usage.ru_nivcsw).max(0) as u64;
    Ok((cpu, ctxsw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        // A real /proc/PID/stat of haproxy, with a command name holding ") (" to trip a parser
        // that splits on the first ')'.
        let stat = "7717 (ha) (proxy) S 7631 7631 7580 0 -1 4194560 1779 0 0 0 54 212 0 0 20 0 2 0 \
                    3273350 40726528 3728 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(parse_stat_cpu(stat), Some((54, 212)));
        assert_eq!(parse_stat_cpu("12 (x) S 1 2"), None);
    }

    const STATUS: &str = "Name:\tpsprobe
VmPeak:\t  123456 kB
VmHWM:\t   11676 kB
VmRSS:\t   11400 kB
Threads:\t3
voluntary_ctxt_switches:\t150
nonvoluntary_ctxt_switches:\t7
";

    #[test]
    fn status_values_by_exact_key() {
        assert_eq!(parse_status_kib(STATUS, "VmHWM"), Some(11676));
        assert_eq!(parse_status_kib(STATUS, "VmRSS"), Some(11400));
        // "voluntary_ctxt_switches" must not match inside "nonvoluntary_...".
        assert_eq!(
            parse_status_kib(STATUS, "voluntary_ctxt_switches"),
            Some(150)
        );
        assert_eq!(parse_status_kib(STATUS, "VmSwap"), None);
        assert_eq!(parse_context_switches(STATUS), 157);
    }

    #[test]
    fn machine_ticks_from_the_cpu_line() {
        let stat = "cpu  100 5 50 1000 10 3 7 2 0 0\ncpu0 50 2 25 500 5 1 3 1 0 0\n";
        let t = parse_machine_ticks(stat).unwrap();
        assert_eq!(
            t,
            MachineTicks {
                tasks: 155,
                irq: 10,
                steal: 2,
                total: 155 + 10 + 2 + 1000 + 10
            }
        );
        // An old kernel without steal: counted as 0.
        let old = parse_machine_ticks("cpu 1 2 3 4 5 6 7\n").unwrap();
        assert_eq!((old.steal, old.irq, old.total), (0, 13, 28));
        assert_eq!(parse_machine_ticks("intr 1 2\n"), None);
        let later = MachineTicks {
            tasks: 200,
            irq: 20,
            steal: 2,
            total: 1500,
        };
        assert_eq!(later.since(&t).tasks, 45);
    }
}
