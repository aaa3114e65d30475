//! `psprobe proxy --duet-upstream`: a duet run on an operator's two instances (their server
//! and a clone of it on the same host: same version, same data, same accounts). One process
//! serves two proxies: side a in front of `--upstream` (clients at `--listen`), side b in
//! front of `--duet-upstream` (clients at `--duet-listen`). The two controllers restart their
//! servers, each with its own restart command, at the same moments into the two scenarios of
//! every pair, measure the same seconds and swap the roles at the next phase
//! (`controller::schedule::duet`); `psprobe report A B` reads the two phase logs as one duet.
//! The flags are `DuetProxyArgs` in config.rs; side b runs in src/app/duet_side.rs.
//!
//! Must not: start a duet that cannot be one (one server twice, a side without its restart
//! command), or talk to a server (the controllers do).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::config::{DuetProxyArgs, ProxyConfig};
use crate::controller::client::dsn::ControllerDsn;
use crate::controller::client::server_cpu::PidSource;
use crate::controller::model::startup::twin_name;
use crate::controller::paths;
use crate::controller::schedule::args::ScheduleArgs;
use crate::controller::schedule::duet::DuetSide;
use crate::controller::schedule::settings::ControllerSettings;

/// The second side of a duet: its proxy and its controller.
pub(crate) struct SideB {
    pub config: ProxyConfig,
    pub settings: ControllerSettings,
    /// Each side's CPUs (`--duet-cpus`; `None`: not pinned).
    pub pins: Option<[String; 2]>,
}

/// Without `--duet-upstream`: `controller` as it is. With it: side a's settings (the duet's
/// side a) and side b's proxy and controller, checked.
pub(crate) fn split(
    args: &DuetProxyArgs,
    schedule: &ScheduleArgs,
    config: &ProxyConfig,
    controller: Option<ControllerSettings>,
) -> anyhow::Result<(Option<ControllerSettings>, Option<SideB>)> {
    let Some(upstream_b) = &args.duet_upstream else {
        return Ok((controller, None));
    };
    let Some(mut a) = controller else {
        bail!("--duet-upstream runs --scenarios as a duet: give the scenarios to compare, the reference first (e.g. --scenarios pfson_conoff_insoff,pfsoff)");
    };
    if a.attribution.is_some() {
        bail!("--attribute and --duet-upstream do not go together: what each instrument group costs is measured on one server's fast schedule");
    }
    if a.scenarios.len() < 2 {
        bail!("--duet-upstream compares scenarios: --scenarios needs the reference and at least one scenario to compare with it");
    }
    let (host_b, port_b) = host_port(upstream_b)?;
    let (host_a, port_a) = host_port(&a.upstream)?;
    if same_server((&host_a, port_a), (&host_b, port_b)) {
        bail!("--duet-upstream {upstream_b} is --upstream's server: a duet needs a second instance (a clone of the first on another port)");
    }
    if !on_one_host(&host_a, &host_b) {
        tracing::warn!(
            "the duet's servers are on different hosts ({host_a}, {host_b}): each host's own noise then stays in the comparison, which the duet cannot cancel; run the clone on --upstream's host (docs/measurement.md, \"When a duet is not valid\")"
        );
    }
    let Some(restart_a) = &a.restart_cmd else {
        bail!("a duet restarts both servers into every phase: give --restart-cmd for --upstream's server (and --duet-restart-cmd for the second)");
    };
    let restart_b = args.duet_restart_cmd.clone().context(
        "--duet-upstream needs --duet-restart-cmd: the command that restarts the second instance",
    )?;
    if let Some(name) = a.scenarios.iter().find(|n| twin_name(n).is_some()) {
        for (flag, cmd) in [
            ("--restart-cmd", restart_a),
            ("--duet-restart-cmd", &restart_b),
        ] {
            if !cmd.contains("{opts}") {
                bail!("{name} starts the server with extra options: {flag} must pass them on where it says {{opts}}");
            }
        }
    }
    let listen_b: SocketAddr = parse_addr("--duet-listen", args.duet_listen.as_deref())?;
    if listen_b == config.listen && listen_b.port() != 0 {
        bail!("--duet-listen {listen_b} is --listen: side b's clients need a port of their own");
    }
    let metrics_b = match args.duet_metrics.as_deref() {
        Some(text) => parse_addr("--duet-metrics", Some(text))?,
        None => SocketAddr::new(config.metrics.ip(), 0),
    };
    if metrics_b == config.metrics && metrics_b.port() != 0 {
        bail!("--duet-metrics {metrics_b} is --metrics: side b's metrics need a port of their own");
    }

    // Every phase of a duet is entered by restart: the runtime scenarios too, and nothing is
    // switched fast, so --blocks counts pairs' blocks as --slow-blocks does.
    a.slow_reference = a.slow_reference.or_else(|| a.scenarios.first().cloned());
    a.slow_blocks = schedule.slow_blocks.or(schedule.blocks);
    a.blocks = None;
    let (side_a, side_b) = DuetSide::pair();
    let mut b = a.clone();
    a.duet = Some(side_a);
    a.identity = format!("{}/a", a.identity);
    b.duet = Some(side_b);
    b.identity = format!("{}/b", b.identity);
    b.upstream = upstream_b.clone();
    b.restart_cmd = Some(restart_b);
    b.mysqld_pid = args.duet_mysqld_pid_file.clone().map(PidSource::File);
    b.dsn = match &args.duet_controller_dsn_file {
        Some(file) => ControllerDsn::from_file(file)?,
        None => a.dsn.at(
            &host_b,
            port_b,
            &format!("{} with --duet-upstream's host and port", a.dsn.origin()),
        ),
    };
    b.state_file = paths::state_file(None, a.state_file.parent(), b.dsn.host(), b.dsn.port())?;
    if b.state_file == a.state_file {
        bail!("the duet's two controllers would share the snapshot {}: their DSNs name the same server; give --duet-controller-dsn-file for the second instance", a.state_file.display());
    }
    b.phase_log = match &args.duet_phase_log {
        Some(p) => p.clone(),
        None => beside(&a.phase_log, "b"),
    };
    if b.phase_log == a.phase_log {
        bail!("--duet-phase-log is side a's phase log: each side writes its own");
    }
    let pins = match args.duet_cpus.as_deref() {
        Some(text) => match crate::cpus::pins("--duet-cpus", text)? {
            Some(pins) => Some(pins),
            None if text == "off" => None,
            None => bail!(
                "--duet-cpus auto: this process may use fewer than 2 CPUs; leave --duet-cpus out"
            ),
        },
        None => None,
    };
    let mut config_b = config.clone();
    config_b.listen = listen_b;
    config_b.metrics = metrics_b;
    config_b.settings.upstream = upstream_b.clone();
    // One admin interface, side a's: it answers for the process.
    config_b.admin = None;
    tracing::info!(
        "duet: side a {} (phase log {}), side b {} (phase log {}); `psprobe report {} {}` reads them as one duet",
        a.upstream,
        a.phase_log.display(),
        b.upstream,
        b.phase_log.display(),
        a.phase_log.display(),
        b.phase_log.display()
    );
    Ok((
        Some(a),
        Some(SideB {
            config: config_b,
            settings: b,
            pins,
        }),
    ))
}

/// `path` with `.{label}` before its extension (`phases.jsonl` -> `phases.b.jsonl`).
fn beside(path: &Path, label: &str) -> PathBuf {
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => path.with_file_name(format!(
            "{}.{label}.{}",
            stem.to_string_lossy(),
            ext.to_string_lossy()
        )),
        _ => PathBuf::from(format!("{}.{label}", path.display())),
    }
}

fn parse_addr(flag: &str, text: Option<&str>) -> anyhow::Result<SocketAddr> {
    let text = text.with_context(|| format!("--duet-upstream needs {flag}"))?;
    text.parse()
        .with_context(|| format!("{flag} {text}: give IP:PORT, e.g. 127.0.0.1:6034"))
}

/// HOST and PORT of `HOST:PORT` (`[v6]:PORT` too).
fn host_port(addr: &str) -> anyhow::Result<(String, u16)> {
    let (host, port) = addr
        .rsplit_once(':')
        .with_context(|| format!("{addr}: give HOST:PORT, e.g. 127.0.0.1:3307"))?;
    let port: u16 = port
        .parse()
        .with_context(|| format!("{addr}: {port} is not a port; give HOST:PORT"))?;
    Ok((host.trim_matches(['[', ']']).to_string(), port))
}

fn is_local(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn on_one_host(a: &str, b: &str) -> bool {
    a == b || (is_local(a) && is_local(b))
}

fn same_server(a: (&str, u16), b: (&str, u16)) -> bool {
    a.1 == b.1 && on_one_host(a.0, b.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_b_names_and_addresses() {
        assert_eq!(
            beside(Path::new("/s/phases-127.0.0.1-3306.jsonl"), "b"),
            PathBuf::from("/s/phases-127.0.0.1-3306.b.jsonl")
        );
        assert_eq!(beside(Path::new("log"), "b"), PathBuf::from("log.b"));
        assert_eq!(host_port("[::1]:3307").unwrap(), ("::1".to_string(), 3307));
        assert!(host_port("db").is_err());
        assert!(host_port("db:x").is_err());
        assert!(same_server(("127.0.0.1", 3306), ("localhost", 3306)));
        assert!(!same_server(("127.0.0.1", 3306), ("127.0.0.1", 3307)));
        assert!(on_one_host("127.0.0.1", "::1"));
        assert!(!on_one_host("db1", "db2"));
    }
}
