//! mariadbd and the `mariadb` CLI.

/// Whether this process runs as root: mariadbd refuses to start as root without `--user=root`.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|v| v.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Arguments of the `mariadb` CLI that run SQL as root over TCP against `127.0.0.1:port`, one
/// row a line, tab-separated, no column names and no option files.
pub fn root_cli_args(port: u16) -> Vec<String> {
    [
        "--no-defaults",
        "--protocol=TCP",
        "-h127.0.0.1",
        "-uroot",
        "-N",
        "-B",
    ]
    .into_iter()
    .map(String::from)
    .chain([format!("-P{port}")])
    .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_cli_args_name_the_port() {
        let args = super::root_cli_args(3307);
        assert_eq!(args.last().map(String::as_str), Some("-P3307"));
        assert!(args.contains(&"--protocol=TCP".to_string()));
    }

    #[test]
    fn root_is_the_effective_uid() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
        let effective = uid_line.split_whitespace().nth(2).unwrap();
        assert_eq!(super::is_root(), effective == "0", "{uid_line}");
    }
}
