//! CPU lists and placement for duet runs: the CPUs this process may use, lists as `taskset -c`
//! takes them, two sides' halves, and running a thread (and the threads it starts) on a list.
//!
//! Must not: change any other thread's or process's placement.

use anyhow::{bail, Context};

/// The two sides' CPU lists `flag` asks for: `auto` (this process's CPUs in two halves;
/// `None` below two CPUs), `off` (`None`: shared), or `A/B`.
pub(crate) fn pins(flag: &str, pin: &str) -> anyhow::Result<Option<[String; 2]>> {
    match pin {
        "off" => Ok(None),
        "auto" => Ok(split_in_halves(&allowed())),
        _ => {
            let (pa, pb) = pin
                .split_once('/')
                .filter(|(x, y)| parse_list(x).is_ok() && parse_list(y).is_ok())
                .with_context(|| {
                    format!("{flag} {pin}: give auto, off, or two CPU lists as A/B, e.g. 0/1 or 0-3/4-7")
                })?;
            Ok(Some([pa.to_string(), pb.to_string()]))
        }
    }
}

/// The CPUs of a list as `taskset -c` takes it (`0-3,6`).
pub(crate) fn parse_list(list: &str) -> anyhow::Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (from, to) = part.split_once('-').unwrap_or((part, part));
        let number = |n: &str| -> anyhow::Result<usize> {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                bail!("{part} is not a CPU number or range");
            }
            n.parse()
                .with_context(|| format!("{part} is not a CPU number"))
        };
        let (from, to) = (number(from)?, number(to)?);
        if from > to || to >= libc::CPU_SETSIZE as usize {
            bail!("{part} is not a CPU range");
        }
        cpus.extend(from..=to);
    }
    Ok(cpus)
}

/// The CPUs this process may run on.
pub(crate) fn allowed() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it for this
    // thread and reads nothing else.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let got =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if got != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the set's size.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Two equal halves of `cpus` as CPU lists (an odd one out is left over); `None` below two
/// CPUs.
fn split_in_halves(cpus: &[usize]) -> Option<[String; 2]> {
    let half = cpus.len() / 2;
    if half == 0 {
        return None;
    }
    let list = |c: &[usize]| c.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    Some([list(&cpus[..half]), list(&cpus[half..2 * half])])
}

/// Runs the calling thread (and the threads it starts from now on) on `cpus` only.
pub(crate) fn pin_this_thread(cpus: &[usize]) -> anyhow::Result<()> {
    if let Some(bad) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
        bail!("CPU {bad} is beyond what this system can address");
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it for CPUs below
    // CPU_SETSIZE (checked above); sched_setaffinity(0) reads it for this thread only.
    let got = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if got != 0 {
        bail!(
            "cannot run on CPUs {cpus:?}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Async worker threads for one side of a duet on `cpus` (`None`: half of this process's).
pub(crate) fn side_workers(cpus: Option<&str>) -> anyhow::Result<usize> {
    Ok(match cpus {
        Some(list) => parse_list(list)?.len().max(1),
        None => (allowed().len() / 2).max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_halves() {
        assert_eq!(pins("--pin", "off").unwrap(), None);
        assert_eq!(
            pins("--pin", "0-1/2,3").unwrap(),
            Some(["0-1".to_string(), "2,3".to_string()])
        );
        for bad in ["0", "0/", "a/b", "0-/1", "0//1"] {
            let err = pins("--pin", bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("--pin {bad}:")), "{err}");
        }
        assert_eq!(parse_list("0").unwrap(), vec![0]);
        assert_eq!(parse_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        for bad in ["", "a", "2-1", "0-", "99999", "+1"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
        assert_eq!(split_in_halves(&[0]), None);
        assert_eq!(
            split_in_halves(&[0, 1]),
            Some(["0".to_string(), "1".to_string()])
        );
        assert_eq!(
            split_in_halves(&[0, 1, 2, 5, 7]),
            Some(["0,1".to_string(), "2,5".to_string()])
        );
        assert!(!allowed().is_empty());
        assert_eq!(side_workers(Some("0-2")).unwrap(), 3);
    }

    #[test]
    fn a_pinned_thread_runs_on_its_cpus_and_so_do_its_children() {
        let first = allowed()[0];
        let seen = std::thread::spawn(move || {
            pin_this_thread(&[first]).unwrap();
            std::thread::spawn(allowed).join().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, vec![first]);
        assert!(pin_this_thread(&[usize::MAX]).is_err());
    }
}
