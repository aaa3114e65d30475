//! docker/ cannot be run here (no Docker engine), so what can be checked is checked: the
//! compose file is valid YAML whose services, mounts, ports and host names agree with each
//! other and with psprobe.toml, prometheus.yml and the Grafana provisioning; Prometheus's own
//! `promtool` accepts prometheus.yml; the Dockerfile copies what the crate needs and builds
//! with a toolchain the crate accepts, and local.Dockerfile (scripts/image.sh's, run in
//! container_image.rs) is its runtime stage; compose runs the image scripts/image.sh names,
//! through its entrypoint; and psprobe's compose command, with the controller account of
//! docker/initdb, runs its schedule against a real mariadbd and restores it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::mariadb::MariaDb;
use common::probe::Probe;
use yaml_rust2::{Yaml, YamlLoader};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn docker() -> PathBuf {
    repo().join("docker")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn compose() -> Yaml {
    let text = read(&docker().join("compose.yaml"));
    let mut docs = YamlLoader::load_from_str(&text).expect("compose.yaml is valid YAML");
    assert_eq!(docs.len(), 1, "one YAML document");
    docs.remove(0)
}

fn strings(y: &Yaml) -> Vec<String> {
    y.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn toml_proxy() -> toml::Table {
    let text = read(&docker().join("psprobe.toml"));
    let table: toml::Table = text.parse().expect("psprobe.toml is valid TOML");
    table["proxy"].as_table().expect("[proxy]").clone()
}

fn port_of(addr: &str) -> &str {
    addr.rsplit_once(':').expect("host:port").1
}

#[test]
fn compose_services_mounts_and_addresses_agree() {
    let c = compose();
    let services = c["services"].as_hash().expect("services");
    let names: Vec<&str> = services.keys().filter_map(Yaml::as_str).collect();
    assert_eq!(
        names,
        [
            "mysqld",
            "psprobe",
            "psprobe-2",
            "sysbench-2",
            "prometheus",
            "grafana",
            "sysbench"
        ]
    );
    // The second probe and its load exist only in the "fleet" profile.
    for name in ["psprobe-2", "sysbench-2"] {
        assert_eq!(
            strings(&c["services"][name]["profiles"]),
            ["fleet"],
            "{name}"
        );
    }
    assert_eq!(
        strings(&c["services"]["psprobe-2"]["command"]),
        strings(&c["services"]["psprobe"]["command"]),
        "both probes run the same schedule"
    );

    // Every bind mount and build points at something in the repository.
    for (name, service) in services {
        let name = name.as_str().unwrap_or("?");
        for volume in strings(&service["volumes"]) {
            let source = volume.split(':').next().expect("source");
            if source.starts_with('.') {
                let path = docker().join(source);
                assert!(path.exists(), "{name}: mount {source} does not exist");
            }
        }
        if let Some(build) = service["build"].as_hash() {
            let context = docker().join(build[&Yaml::from_str("context")].as_str().expect("ctx"));
            let file = build[&Yaml::from_str("dockerfile")]
                .as_str()
                .expect("dockerfile");
            assert!(context.join(file).is_file(), "{name}: {file} missing");
        }
    }

    // psprobe.toml: where psprobe listens and what it forwards to.
    let proxy = toml_proxy();
    let listen = proxy["listen"].as_str().expect("listen");
    let metrics = proxy["metrics"].as_str().expect("metrics");
    let upstream = proxy["upstream"].as_str().expect("upstream");
    assert!(listen.starts_with("0.0.0.0:") && metrics.starts_with("0.0.0.0:"));
    assert_eq!(upstream, "mysqld:3306", "the mysqld service's port");
    let ports = strings(&c["services"]["psprobe"]["ports"]);
    for port in [port_of(listen), port_of(metrics)] {
        assert!(
            ports.iter().any(|p| p.ends_with(&format!(":{port}"))),
            "{port} not published: {ports:?}"
        );
    }
    let psprobe_cmd = strings(&c["services"]["psprobe"]["command"]);
    assert_eq!(psprobe_cmd.first().map(String::as_str), Some("proxy"));
    assert!(psprobe_cmd.windows(2).any(|w| w[0] == "--config"
        && strings(&c["services"]["psprobe"]["volumes"])
            .iter()
            .any(|v| v.ends_with(&format!(":{}:ro", w[1])))));
    let dsn = c["services"]["psprobe"]["environment"]["PSPROBE_CONTROLLER_DSN"]
        .as_str()
        .expect("controller DSN from the environment, never argv");
    assert!(dsn.contains("@mysqld:3306/"));
    assert!(!psprobe_cmd.iter().any(|a| a.contains("mysql://")));

    // sysbench goes through psprobe, on the port psprobe listens on.
    let load = strings(&c["services"]["sysbench"]["command"]).join(" ");
    assert!(load.contains("--mysql-host=psprobe"), "{load}");
    assert!(load.contains(&format!("--mysql-port={}", port_of(listen))));

    // Prometheus scrapes psprobe's metrics port; Grafana reads Prometheus.
    let prom = read(&docker().join("prometheus.yml"));
    assert!(
        prom.contains("names: [\"psprobe\", \"psprobe-2\"]"),
        "{prom}"
    );
    assert!(
        prom.contains(&format!("port: {}", port_of(metrics))),
        "{prom}"
    );
    // ... and loads the rules compose mounts next to its configuration.
    let rules_mount = strings(&c["services"]["prometheus"]["volumes"])
        .into_iter()
        .find(|v| v.starts_with("../grafana/prometheus/psprobe.rules.yml:"))
        .expect("rules mounted");
    let rules_target = rules_mount.split(':').nth(1).expect("target");
    assert!(prom.contains(&format!("- {rules_target}")), "{prom}");
    let datasource = read(&repo().join("grafana/provisioning/datasources/psprobe.yaml"));
    assert!(datasource.contains("url: http://prometheus:9090"));
    assert!(strings(&c["services"]["prometheus"]["ports"]).contains(&"9090:9090".into()));

    // The dashboard provider looks where compose mounts the dashboards.
    let provider = read(&repo().join("grafana/provisioning/dashboards/psprobe.yaml"));
    let grafana_volumes = strings(&c["services"]["grafana"]["volumes"]);
    let mounted = grafana_volumes
        .iter()
        .find(|v| v.starts_with("../grafana/dashboards:"))
        .expect("dashboards mounted");
    let target = mounted.split(':').nth(1).expect("target");
    assert!(
        provider.contains(&format!("path: {target}")),
        "{target} vs {provider}"
    );
}

#[test]
fn promtool_accepts_prometheus_yml() {
    // Laid out as in the container, so the rule file it names is there and checked too.
    let etc = tempfile::tempdir().expect("tempdir");
    let config = read(&docker().join("prometheus.yml"))
        .replace("/etc/prometheus/", &format!("{}/", etc.path().display()));
    std::fs::write(etc.path().join("prometheus.yml"), config).expect("write config");
    std::fs::copy(
        repo().join("grafana/prometheus/psprobe.rules.yml"),
        etc.path().join("psprobe.rules.yml"),
    )
    .expect("copy rules");
    let out = Command::new("promtool")
        .args(["check", "config"])
        .arg(etc.path().join("prometheus.yml"))
        .output()
        .unwrap_or_else(|e| panic!("promtool ({e}): scripts/setup.sh installs prometheus"));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn dockerfile_builds_what_the_crate_needs() {
    let dockerfile = read(&docker().join("Dockerfile"));
    let cargo: toml::Table = read(&repo().join("Cargo.toml"))
        .parse()
        .expect("Cargo.toml");
    let msrv = cargo["package"]["rust-version"]
        .as_str()
        .expect("rust-version");
    assert!(
        dockerfile.contains(&format!("FROM rust:{msrv}-")),
        "the build stage uses the crate's rust-version {msrv}"
    );
    // Every COPY from the build context exists; together they hold every target of the crate.
    let copied: Vec<&str> = dockerfile
        .lines()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from="))
        .flat_map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            parts[1..parts.len() - 1].to_vec()
        })
        .collect();
    for source in &copied {
        assert!(repo().join(source).exists(), "COPY {source}: missing");
    }
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "src",
        "benches",
        "crates",
    ] {
        assert!(copied.contains(&needed), "{needed} is not copied");
    }
    assert!(dockerfile.contains("ENTRYPOINT [\"psprobe\"]"));
    assert!(dockerfile.contains("EXPOSE 6033 9898 6034"));
    let proxy = toml_proxy();
    let metrics = proxy["metrics"].as_str().expect("metrics");
    assert!(
        dockerfile.contains(&format!("http://127.0.0.1:{}/healthz", port_of(metrics))),
        "the health check asks psprobe's metrics port"
    );
}

/// The instructions of a Dockerfile's last stage, continuation lines joined, comments left out.
fn runtime_stage(dockerfile: &str) -> Vec<String> {
    let joined = dockerfile.replace("\\\n", " ");
    let lines: Vec<&str> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let last_from = lines
        .iter()
        .rposition(|l| l.starts_with("FROM "))
        .expect("a FROM");
    lines[last_from + 1..]
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_local_dockerfile_is_the_runtime_stage_of_the_dockerfile() {
    let upstream = runtime_stage(&read(&docker().join("Dockerfile")));
    let local = runtime_stage(&read(&docker().join("local.Dockerfile")));
    // The same user, ports, health check and entrypoint; only how the base is had and where
    // the binary comes from differ (the base image comes with the user made).
    let same = |stage: &[String]| -> Vec<String> {
        stage
            .iter()
            .filter(|l| !l.starts_with("RUN ") && !l.starts_with("COPY "))
            .cloned()
            .collect()
    };
    assert_eq!(same(&local), same(&upstream));
    assert!(same(&local).contains(&"ENTRYPOINT [\"psprobe\"]".to_string()));
    let target = |stage: &[String]| -> Vec<String> {
        stage
            .iter()
            .filter(|l| l.starts_with("COPY "))
            .filter_map(|l| l.split_whitespace().last().map(String::from))
            .collect()
    };
    assert_eq!(target(&local), ["/usr/local/bin/psprobe"]);
    assert_eq!(target(&local), target(&upstream));
    // The base scripts/image.sh imports makes the user the Dockerfile's RUN makes.
    let image_sh = read(&repo().join("scripts/image.sh"));
    assert!(
        image_sh.contains("useradd --system --home-dir /var/lib/psprobe --create-home psprobe")
            && upstream.iter().any(|l| l
                .contains("useradd --system --home-dir /var/lib/psprobe --create-home psprobe")),
        "the user is made the same way in both bases"
    );
}

/// The name scripts/image.sh gives the image it builds.
pub(crate) fn image_name() -> String {
    let image_sh = read(&repo().join("scripts/image.sh"));
    assert!(
        image_sh.contains("tag=\"${tag:-localhost/psprobe:$version}\""),
        "scripts/image.sh names the image otherwise than localhost/psprobe:VERSION"
    );
    format!("localhost/psprobe:{}", env!("CARGO_PKG_VERSION"))
}

#[test]
fn compose_runs_the_image_scripts_image_sh_builds_with_its_entrypoint() {
    let c = compose();
    for name in ["psprobe", "psprobe-2"] {
        let service = &c["services"][name];
        assert_eq!(
            service["image"].as_str(),
            Some(image_name().as_str()),
            "{name}"
        );
        assert!(
            service["entrypoint"].is_badvalue(),
            "{name}: the image's entrypoint"
        );
        assert_eq!(
            strings(&service["command"]).first().map(String::as_str),
            Some("proxy"),
            "{name}: arguments to `psprobe`"
        );
    }
}

/// setup_consumers and a digest of setup_instruments, to compare before and after.
fn ps_settings(db: &MariaDb) -> String {
    db.sql(
        "SELECT GROUP_CONCAT(NAME, '=', ENABLED ORDER BY NAME) FROM performance_schema.setup_consumers \
         UNION ALL SELECT MD5(GROUP_CONCAT(NAME, ENABLED, TIMED ORDER BY NAME)) \
         FROM performance_schema.setup_instruments",
    )
}

fn phase_log(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
}

#[test]
fn compose_psprobe_command_runs_its_schedule_with_the_initdb_account() {
    let db = MariaDb::start_default();
    db.sql(&read(&docker().join("initdb/01-psprobe-controller.sql")));
    let before = ps_settings(&db);
    let state = tempfile::tempdir().expect("state dir");

    // The compose command, with container paths and durations made local and short.
    let c = compose();
    let mut args = strings(&c["services"]["psprobe"]["command"]);
    assert_eq!(args.remove(0), "proxy");
    let config = docker().join("psprobe.toml");
    for i in 1..args.len() {
        let value = match args[i - 1].as_str() {
            "--config" => config.to_str().expect("utf-8 path").to_string(),
            "--state-dir" => state.path().to_str().expect("utf-8 path").to_string(),
            "--phase" => "2s".into(),
            "--settle" => "500ms".into(),
            _ => continue,
        };
        args[i] = value;
    }
    let scenarios = args
        .iter()
        .position(|a| a == "--scenarios")
        .map(|i| args[i + 1].split(',').count())
        .expect("--scenarios");
    args.extend(["--blocks".into(), "1".into()]);
    let dsn = c["services"]["psprobe"]["environment"]["PSPROBE_CONTROLLER_DSN"]
        .as_str()
        .expect("dsn")
        .replace("mysqld:3306", &db.addr());
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    // The flags the harness adds (--listen/--upstream/--metrics) win over psprobe.toml's.
    let probe = Probe::start_with_env(&db.addr(), &extra, &[("PSPROBE_CONTROLLER_DSN", &dsn)]);

    let deadline = Instant::now() + Duration::from_secs(60);
    let phases = loop {
        let text = phase_log(state.path())
            .map(|p| read(&p))
            .unwrap_or_default();
        let phases: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(|v: &serde_json::Value| v["kind"] == "phase")
            .collect();
        // Logged once the schedule is over and the snapshot is back on the server.
        let restored = probe
            .stderr_text()
            .contains("performance_schema settings restored");
        if phases.len() == scenarios && restored {
            break phases;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {scenarios} phases in 60 s:\n{}",
            phases.len(),
            probe.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for phase in &phases {
        assert_eq!(phase["verified"], true, "{phase}");
    }
    assert_eq!(
        ps_settings(&db),
        before,
        "settings restored after the schedule"
    );
    assert!(
        !probe.stderr_text().contains("psprobe-controller"),
        "no password in logs"
    );
}

#[test]
fn a_missing_grant_is_named_with_the_statement_that_fixes_it() {
    let db = MariaDb::start_default();
    // The initdb account without SELECT on the psprobe schema.
    let sql = read(&docker().join("initdb/01-psprobe-controller.sql")).replace(
        "GRANT SELECT, CREATE, INSERT, DELETE ON psprobe",
        "GRANT CREATE, INSERT, DELETE ON psprobe",
    );
    db.sql(&sql);
    let before = ps_settings(&db);
    let state = tempfile::tempdir().expect("state dir");
    let dsn = format!(
        "mysql://psprobe_controller:psprobe-controller@{}/",
        db.addr()
    );
    // A run that cannot read psprobe.snapshot could miss one a dead run left there, and then
    // lose that run's settings: it refuses to start, naming the grant.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_psprobe"));
    cmd.env("PSPROBE_CONTROLLER_DSN", &dsn)
        .args("proxy --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --upstream".split(' '))
        .arg(db.addr())
        .args([
            "--scenarios",
            "pfson_conoff_insoff,pfson_conon_inson",
            "--phase",
            "2s",
            "--blocks",
            "1",
            "--state-dir",
            state.path().to_str().expect("utf-8 path"),
        ]);
    let out = common::cli::run_with_timeout(cmd, None, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "started without SELECT on psprobe.*:\n{err}"
    );
    let line = err
        .lines()
        .find(|l| l.contains("may not"))
        .unwrap_or_else(|| panic!("no line naming the missing right:\n{err}"));
    assert!(line.contains("1142"), "{line}");
    assert!(
        line.contains(
            "GRANT SELECT, CREATE, INSERT, DELETE ON psprobe.* TO 'psprobe_controller'@'%'"
        ),
        "{line}"
    );
    assert!(!line.contains("psprobe-controller@"), "no password: {line}");
    assert_eq!(
        ps_settings(&db),
        before,
        "nothing changed by a run that refused to start"
    );
}

#[test]
fn docker_compose_accepts_the_file_with_and_without_the_fleet_profile() {
    for profile in [None, Some("fleet")] {
        let mut cmd = Command::new("docker-compose");
        cmd.arg("-f").arg(docker().join("compose.yaml"));
        if let Some(p) = profile {
            cmd.args(["--profile", p]);
        }
        let out = cmd
            .args(["config", "--services"])
            .output()
            .unwrap_or_else(|e| panic!("docker-compose ({e}): scripts/setup.sh installs it"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "docker-compose config ({profile:?}): {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for service in ["mysqld", "psprobe", "prometheus", "grafana", "sysbench"] {
            assert!(stdout.lines().any(|l| l == service), "{service}: {stdout}");
        }
    }
}
