//! mysqld's CPU time, when it runs on this host: user + system time from `/proc/PID/stat`, so a
//! phase can report server CPU per statement — the figure that matters when the server is not
//! saturated and throughput cannot show the cost.

/// Where to find mysqld's pid: given once, or read from its pid file each time (it changes when
/// the server restarts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PidSource {
    Fixed(u32),
    File(std::path::PathBuf),
}

impl PidSource {
    pub(crate) fn pid(&self) -> Option<u32> {
        match self {
            PidSource::Fixed(pid) => Some(*pid),
            PidSource::File(path) => std::fs::read_to_string(path).ok()?.trim().parse().ok(),
        }
    }
}

/// CPU time (user + system) of process `pid` in milliseconds, `None` if it cannot be read.
pub(crate) fn cpu_ms(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) * 1000 / clock_ticks())
}

fn clock_ticks() -> u64 {
    // sysconf(_SC_CLK_TCK) is 100 on every Linux platform psprobe targets.
    100
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_own_cpu_time() {
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed().as_millis() < 30 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        assert!(x != 1);
        assert!(super::cpu_ms(std::process::id()).is_some());
        assert_eq!(super::cpu_ms(u32::MAX), None);
    }
}
