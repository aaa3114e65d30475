//! The container image, built and run: scripts/image.sh makes it with podman from the psprobe
//! under test (on the Debian 12 base it imports once), podman runs it with the flags this
//! machine accepts (runc, cgroupfs, explicit ulimits), and a `mariadb` client goes through it
//! to a real mariadbd; /healthz answers (from outside, and by curl inside, as the image's health
//! check asks), it runs as its user, and it stops cleanly on `podman stop`. The image gets a name of its own
//! and is removed afterwards, like the container.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::cli::{mariadb_ok, run_with_timeout};
use common::mariadb::MariaDb;
use common::probe::Probe;

const BIN: &str = env!("CARGO_BIN_EXE_psprobe");
/// Generous: without the base image, image.sh first runs debootstrap (scripts/setup.sh makes
/// the base beforehand).
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);
const TIMEOUT: Duration = Duration::from_secs(60);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// podman as it works on these machines: runc (crun is refused) and cgroupfs.
fn podman(args: &[&str]) -> Command {
    let mut cmd = Command::new("podman");
    cmd.args(["--runtime", "runc", "--cgroup-manager", "cgroupfs"])
        .args(args);
    cmd
}

fn ok(cmd: Command, timeout: Duration) -> String {
    let what = format!("{cmd:?}");
    let out: Output = run_with_timeout(cmd, None, timeout);
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Removes a podman object (an image, a container) when dropped.
struct Removed(&'static str, String);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = run_with_timeout(podman(&[self.0, "--force", &self.1]), None, TIMEOUT);
    }
}

#[test]
fn the_image_serves_a_client_through_to_mariadbd() {
    let pid = std::process::id();
    let tag = format!("localhost/psprobe-test-{pid}:{}", env!("CARGO_PKG_VERSION"));
    let mut build = Command::new(repo().join("scripts/image.sh"));
    build.args(["--binary", BIN, "--tag", &tag]);
    let _image = Removed("rmi", tag.clone());
    let built = ok(build, BUILD_TIMEOUT);
    assert_eq!(built.lines().last(), Some(tag.as_str()));
    let config = ok(
        podman(&[
            "image",
            "inspect",
            "--format",
            "{{json .Config.Entrypoint}} {{.Config.User}} {{json .Config.Healthcheck.Test}}",
            &tag,
        ]),
        TIMEOUT,
    );
    assert!(
        config.starts_with("[\"psprobe\"] psprobe ")
            && config.contains("curl -fsS http://127.0.0.1:9898/healthz"),
        "{config}"
    );

    let db = MariaDb::start_default();
    let name = format!("psprobe-test-{pid}");
    let _container = Removed("rm", name.clone());
    // Attached: podman passes psprobe's stdout on, with the listening line the harness reads.
    let mut probe = Probe::start_command(podman(&[
        "run",
        "--rm",
        "--name",
        &name,
        "--network",
        "host",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=1024:1024",
        &tag,
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "127.0.0.1:0",
        "--upstream",
        &db.addr(),
    ]));
    assert_eq!(probe.healthz(), 200);
    let out = mariadb_ok(probe.proxy_addr(), &["-N", "-e", "SELECT 6*7"], None);
    assert_eq!(out.trim(), "42");
    let deadline = Instant::now() + Duration::from_secs(10);
    while probe
        .scrape()
        .get("psprobe_commands_total", &[("command", "query")])
        < 1.0
    {
        assert!(Instant::now() < deadline, "the query was not counted");
        std::thread::sleep(Duration::from_millis(50)); // poll interval
    }
    // Inside: the image's user, and its health check's command (curl; the Dockerfile's check
    // asks port 9898, psprobe.toml's, and here the metrics listen elsewhere).
    assert_eq!(
        ok(podman(&["exec", &name, "id", "-un"]), TIMEOUT).trim(),
        "psprobe"
    );
    let url = format!("http://{}/healthz", probe.metrics_addr());
    ok(podman(&["exec", &name, "curl", "-fsS", &url]), TIMEOUT);

    ok(podman(&["stop", "--time", "20", &name]), TIMEOUT);
    let status = probe.wait_exit(TIMEOUT).expect("podman run returned");
    assert!(status.success(), "{status:?}\n{}", probe.stderr_text());
}
