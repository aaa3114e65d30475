//! docker/kubernetes: the example manifests are valid for Kubernetes 1.31 (kubernetes-validate,
//! strict: unknown fields are errors), the Prometheus Operator resources are valid against the
//! operator's CRD schemas, and the pieces agree with each other: the PodMonitor selects the
//! pods that carry the sidecar and scrapes a port the sidecar declares, the sidecar runs the
//! image scripts/image.sh builds (through its entrypoint) and reads the
//! ConfigMap where it is mounted and the controller DSN from the Secret (never argv), the
//! ConfigMap's psprobe.toml listens where the app connects, and the PrometheusRule holds the
//! same groups as grafana/prometheus/psprobe.rules.yml.

use std::path::PathBuf;
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

const KUBERNETES_VERSION: &str = "1.31.0";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn manifests() -> Vec<PathBuf> {
    let dir = repo().join("docker/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn load(path: &PathBuf) -> Yaml {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .remove(0)
}

fn by_kind(kind: &str) -> Yaml {
    manifests()
        .iter()
        .map(load)
        .find(|doc| doc["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} under docker/kubernetes"))
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what} ({e}): run scripts/setup-clients.sh"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    text
}

#[test]
fn built_in_kinds_pass_kubernetes_validate_strict() {
    let files = manifests();
    assert!(files.len() >= 5, "{files:?}");
    let out = run(
        Command::new(repo().join("target/clients/venv/bin/kubernetes-validate"))
            .args(["--strict", "-k", KUBERNETES_VERSION])
            .args(&files),
        "kubernetes-validate",
    );
    for kind in [
        "deployment/shop",
        "configmap/psprobe-config",
        "secret/psprobe-controller",
    ] {
        assert!(
            out.contains(&format!("passed for resource {kind}")),
            "{kind}: {out}"
        );
    }
}

#[test]
fn operator_resources_pass_the_crd_schemas() {
    let files: Vec<PathBuf> = manifests()
        .into_iter()
        .filter(|p| load(p)["apiVersion"].as_str() == Some("monitoring.coreos.com/v1"))
        .collect();
    assert_eq!(
        files.len(),
        2,
        "a PodMonitor and a PrometheusRule: {files:?}"
    );
    let out = run(
        Command::new("node")
            .arg(repo().join("tests/clients/validate_crds.mjs"))
            .args(&files)
            .env("NODE_PATH", repo().join("target/clients/node/node_modules")),
        "validate_crds.mjs",
    );
    assert!(
        out.contains("OK ") && out.contains("PodMonitor/psprobe"),
        "{out}"
    );
    assert!(out.contains("PrometheusRule/psprobe"), "{out}");
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

#[test]
fn the_pieces_agree_with_each_other() {
    let deployment = by_kind("Deployment");
    let pod = &deployment["spec"]["template"];
    let containers = pod["spec"]["containers"].as_vec().expect("containers");
    let sidecar = containers
        .iter()
        .find(|c| c["name"].as_str() == Some("psprobe"))
        .expect("a psprobe container");
    let app = containers
        .iter()
        .find(|c| c["name"].as_str() != Some("psprobe"))
        .expect("an application container");

    // The PodMonitor selects these pods and scrapes a port the sidecar names.
    let monitor = by_kind("PodMonitor");
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_hash()
        .expect("matchLabels");
    let labels = pod["metadata"]["labels"].as_hash().expect("pod labels");
    for (k, v) in selector {
        assert_eq!(
            labels.get(k),
            Some(v),
            "selector {k:?} does not match the pod"
        );
    }
    let port = monitor["spec"]["podMetricsEndpoints"][0]["port"]
        .as_str()
        .expect("port");
    let ports = sidecar["ports"].as_vec().expect("ports");
    let metrics_port = ports
        .iter()
        .find(|p| p["name"].as_str() == Some(port))
        .and_then(|p| p["containerPort"].as_i64())
        .unwrap_or_else(|| panic!("sidecar has no port named {port}"));

    // The image scripts/image.sh builds, run through its entrypoint (`psprobe`).
    assert_eq!(
        sidecar["image"].as_str(),
        Some(crate::docker_files::image_name().as_str())
    );
    assert!(
        sidecar["command"].is_badvalue(),
        "the image's entrypoint, not a command of the manifest's"
    );

    // The ConfigMap is mounted where --config points, and says where psprobe listens.
    let args = strings(&sidecar["args"]);
    assert_eq!(args.first().map(String::as_str), Some("proxy"));
    let config_path = args
        .windows(2)
        .find(|w| w[0] == "--config")
        .map(|w| w[1].clone())
        .expect("--config");
    let (dir, file) = config_path.rsplit_once('/').expect("a path");
    let config_mount = sidecar["volumeMounts"]
        .as_vec()
        .expect("mounts")
        .iter()
        .find(|m| m["mountPath"].as_str() == Some(dir))
        .and_then(|m| m["name"].as_str())
        .expect("the config directory is mounted");
    let config_map_name = pod["spec"]["volumes"]
        .as_vec()
        .expect("volumes")
        .iter()
        .find(|v| v["name"].as_str() == Some(config_mount))
        .and_then(|v| v["configMap"]["name"].as_str())
        .expect("mounted from a ConfigMap");
    let config_map = by_kind("ConfigMap");
    assert_eq!(
        config_map["metadata"]["name"].as_str(),
        Some(config_map_name)
    );
    let toml_text = config_map["data"][file]
        .as_str()
        .expect("psprobe.toml in the ConfigMap");
    let toml: toml::Table = toml_text.parse().expect("valid TOML");
    let proxy = toml["proxy"].as_table().expect("[proxy]");
    let listen = proxy["listen"].as_str().expect("listen");
    let metrics = proxy["metrics"].as_str().expect("metrics");
    assert!(
        metrics.ends_with(&format!(":{metrics_port}")),
        "{metrics} vs {metrics_port}"
    );
    assert!(
        metrics.starts_with("0.0.0.0:"),
        "Prometheus scrapes from outside the pod"
    );
    // The app reaches the sidecar on loopback, at the port psprobe listens on.
    let env = app["env"].as_vec().expect("app env");
    let value = |name: &str| {
        env.iter()
            .find(|e| e["name"].as_str() == Some(name))
            .and_then(|e| e["value"].as_str())
            .unwrap_or_else(|| panic!("app env {name}"))
            .to_string()
    };
    assert_eq!(
        format!("{}:{}", value("DATABASE_HOST"), value("DATABASE_PORT")),
        listen
    );

    // The controller DSN comes from the Secret, by environment, never in argv.
    assert!(!args.iter().any(|a| a.contains("mysql://")), "{args:?}");
    let dsn_env = sidecar["env"]
        .as_vec()
        .expect("sidecar env")
        .iter()
        .find(|e| e["name"].as_str() == Some("PSPROBE_CONTROLLER_DSN"))
        .expect("PSPROBE_CONTROLLER_DSN")
        .clone();
    let secret_ref = &dsn_env["valueFrom"]["secretKeyRef"];
    let secret = by_kind("Secret");
    assert_eq!(secret["metadata"]["name"], secret_ref["name"]);
    let key = secret_ref["key"].as_str().expect("key");
    assert!(secret["stringData"][key]
        .as_str()
        .is_some_and(|d| d.starts_with("mysql://")));

    // Memory request and limit are set (sized in the manifest's comment from the benchmark).
    let resources = &sidecar["resources"];
    assert!(resources["requests"]["memory"].as_str().is_some());
    assert!(resources["limits"]["memory"].as_str().is_some());
}

#[test]
fn the_prometheus_rule_holds_the_rules_file() {
    let rule = by_kind("PrometheusRule");
    let rules = load(&repo().join("grafana/prometheus/psprobe.rules.yml"));
    assert_eq!(
        rule["spec"]["groups"], rules["groups"],
        "docker/kubernetes/psprobe-prometheusrule.yaml is stale: run scripts/k8s-rules.sh"
    );
}
