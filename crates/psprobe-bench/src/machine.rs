//! `machine`: what the benchmark ran on, as one JSON object on stdout (bench.sh writes it to
//! machine.json; the reports quote its summary): CPUs, CPU model, RAM, kernel, load average.

use std::fs;

use anyhow::Result;
use serde::Serialize;

use crate::procfs;
use crate::pyfmt;

/// machine.json, keys in the order the Python script wrote them.
#[derive(Debug, Serialize, PartialEq)]
struct Machine {
    cpus: Option<u64>,
    cpu_model: String,
    mem_gib: Option<f64>,
    kernel: String,
    loadavg_at_start: Vec<String>,
    summary: String,
}

pub fn run() -> Result<()> {
    let read = |path: &str| fs::read_to_string(path).unwrap_or_default();
    let machine = describe(
        procfs::cpus_online(),
        &read("/proc/cpuinfo"),
        &read("/proc/meminfo"),
        read("/proc/sys/kernel/osrelease").trim(),
        &read("/proc/loadavg"),
    );
    println!("{}", pyfmt::line(&machine)?);
    eprintln!("bench: machine: {}", machine.summary);
    Ok(())
}

fn describe(
    cpus: Option<u64>,
    cpuinfo: &str,
    meminfo: &str,
    kernel: &str,
    loadavg: &str,
) -> Machine {
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let mem_gib = meminfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemTotal:")?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .map(|kib| pyfmt::round(kib as f64 / 1024.0 / 1024.0, 1));
    let loadavg: Vec<String> = loadavg
        .split_whitespace()
        .take(3)
        .map(String::from)
        .collect();
    let cpus_text = cpus.map_or("None".to_string(), |n| n.to_string());
    let mem_text = mem_gib.map_or("None".to_string(), pyfmt::repr);
    let kernel = if kernel.is_empty() { "unknown" } else { kernel };
    let summary = format!(
        "{cpus_text} CPUs ({cpu_model}), {mem_text} GiB RAM, Linux {kernel}, load average at start {}",
        loadavg.join(" ")
    );
    Machine {
        cpus,
        cpu_model,
        mem_gib,
        kernel: kernel.to_string(),
        loadavg_at_start: loadavg,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_from_proc_files() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        let meminfo = "MemTotal:       24641584 kB\nMemFree:         1000000 kB\n";
        let m = describe(
            Some(2),
            cpuinfo,
            meminfo,
            "6.1.0",
            "2.55 2.94 2.73 3/456 7890\n",
        );
        assert_eq!(m.cpu_model, "AMD EPYC 7B13");
        assert_eq!(m.mem_gib, Some(23.5));
        assert_eq!(m.loadavg_at_start, ["2.55", "2.94", "2.73"]);
        assert_eq!(
            m.summary,
            "2 CPUs (AMD EPYC 7B13), 23.5 GiB RAM, Linux 6.1.0, load average at start 2.55 2.94 2.73"
        );
        assert_eq!(
            pyfmt::line(&m).unwrap(),
            r#"{"cpus": 2, "cpu_model": "AMD EPYC 7B13", "mem_gib": 23.5, "kernel": "6.1.0", "loadavg_at_start": ["2.55", "2.94", "2.73"], "summary": "2 CPUs (AMD EPYC 7B13), 23.5 GiB RAM, Linux 6.1.0, load average at start 2.55 2.94 2.73"}"#
        );
    }

    #[test]
    fn unreadable_files_give_unknowns_not_a_failure() {
        let m = describe(None, "", "", "", "");
        assert_eq!(m.cpu_model, "unknown");
        assert_eq!(m.mem_gib, None);
        assert!(m
            .summary
            .starts_with("None CPUs (unknown), None GiB RAM, Linux unknown"));
    }
}
