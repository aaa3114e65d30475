//! A report page measured in headless Chromium: `tests/clients/report_layout.js` (playwright-core
//! from scripts/setup.sh driving Debian's chromium) prints what the page rendered and its
//! layout problems as one JSON object; the full-page screenshot is kept as an artifact.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's chromium (scripts/setup.sh installs it).
pub fn chromium() -> &'static str {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("chromium is not installed: scripts/setup.sh installs it")
}

/// The layout of `page` at 1,300 px, and where its screenshot `shot_name` was kept.
pub fn report_layout(page: &Path, shot_name: &str) -> (serde_json::Value, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts dir");
    let shot = artifacts.join(shot_name);
    let out = Command::new("node")
        .env("NODE_PATH", root.join("target/clients/node/node_modules"))
        .env("PSPROBE_CHROMIUM", chromium())
        .arg(root.join("tests/clients/report_layout.js"))
        .arg(page)
        .arg(&shot)
        .output()
        .expect("run node (scripts/setup.sh installs it)");
    assert!(
        out.status.success(),
        "layout check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = serde_json::from_slice(&out.stdout).expect("layout check prints JSON");
    (found, shot)
}
