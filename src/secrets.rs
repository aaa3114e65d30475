//! Passwords (the controller's DSN, the admin password) reach psprobe through the environment
//! or a file, never through argv, which every user of the host can read (`ps`, /proc/PID/cmdline).
//!
//! - [`read_secret_file`]: the first line of a file (`--admin-password-file`,
//!   `--controller-dsn-file`), without what an editor adds around it (a UTF-8 byte-order mark,
//!   blanks at either end; [`secret_file_notes`] says what was left out, once logging is up);
//!   [`exposed_secret_files`]: warnings for such files (and a config file with a password) that
//!   other users may read;
//! - [`argv_warnings`]: arguments that look like they carry a password anyway (a URL with
//!   `USER:PASS@`, `--password=...`, `-pSECRET` inside `--restart-cmd`), to warn about at start.
//!
//! Neither ever repeats the secret: messages name the file or the argument's position.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot read {what} from {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no {what}: its first line is empty{ignored}")]
    Empty {
        what: &'static str,
        path: PathBuf,
        /// What psprobe left out of the line, said so the operator knows why it is empty.
        ignored: String,
    },
    #[error("{path} is {encoding} (it starts with that byte-order mark): save it as UTF-8 or ASCII, with the {what} on its first line")]
    NotUtf8 {
        what: &'static str,
        path: PathBuf,
        encoding: &'static str,
    },
}

/// The UTF-8 byte-order mark some editors put at the start of a file (never part of a secret).
const BOM: char = '\u{feff}';

/// The first line of a secret file's text, and what an editor may have added around the
/// secret, which is left out: a byte-order mark, spaces and tabs at either end (a password
/// with blanks at its ends is refused by no one and typed by no one), the line end.
struct FirstLine<'a> {
    secret: &'a str,
    bom: bool,
    leading: usize,
    trailing: usize,
}

impl<'a> FirstLine<'a> {
    fn of(text: &'a str) -> Self {
        let rest = text.trim_start_matches(BOM);
        let bom = rest.len() < text.len();
        let line = rest.lines().next().unwrap_or("").trim_end_matches('\r');
        // A carriage return left inside the line's ends is an editor's too.
        let blank = |c: char| c == ' ' || c == '\t' || c == '\r';
        let start = line.trim_start_matches(blank);
        let secret = start.trim_end_matches(blank);
        FirstLine {
            secret,
            bom,
            leading: line.len() - start.len(),
            trailing: start.len() - secret.len(),
        }
    }

    /// What was left out, as "a UTF-8 byte-order mark and 2 trailing blanks"; empty if nothing.
    fn ignored(&self) -> String {
        let blanks = |n: usize, side: &str| match n {
            0 => None,
            1 => Some(format!("1 {side} blank")),
            n => Some(format!("{n} {side} blanks")),
        };
        let parts: Vec<String> = [
            self.bom.then(|| "a UTF-8 byte-order mark".to_string()),
            blanks(self.leading, "leading"),
            blanks(self.trailing, "trailing"),
        ]
        .into_iter()
        .flatten()
        .collect();
        match parts.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        }
    }
}

/// The secret a secret file's text holds (its first line without what an editor adds around
/// it), and what was left out ("" if nothing). For the fuzz target: the same as
/// [`read_secret_file`] takes.
#[cfg(feature = "fuzzing")]
pub(crate) fn secret_of(text: &str) -> (&str, String) {
    let line = FirstLine::of(text);
    (line.secret, line.ignored())
}

/// The text of a secret file; a UTF-16 or UTF-32 file (as Windows editors save) is named as such.
fn read_text(path: &Path, what: &'static str) -> Result<String, SecretError> {
    let bytes = std::fs::read(path).map_err(|source| SecretError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })?;
    let encoding = match bytes.as_slice() {
        [0xFF, 0xFE, 0, 0, ..] => Some("UTF-32"),
        [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] => Some("UTF-16"),
        _ => None,
    };
    if let Some(encoding) = encoding {
        return Err(SecretError::NotUtf8 {
            what,
            path: path.to_path_buf(),
            encoding,
        });
    }
    String::from_utf8(bytes).map_err(|e| SecretError::Read {
        what,
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it is not UTF-8 text ({})", e.utf8_error()),
        ),
    })
}

/// The first line of `path` (without its line end, a UTF-8 byte-order mark, and spaces or tabs
/// at either end), which must not be empty. `what` names the secret in messages ("admin
/// password").
pub(crate) fn read_secret_file(path: &Path, what: &'static str) -> Result<String, SecretError> {
    let text = read_text(path, what)?;
    let line = FirstLine::of(&text);
    if line.secret.is_empty() {
        let ignored = line.ignored();
        return Err(SecretError::Empty {
            what,
            path: path.to_path_buf(),
            ignored: if ignored.is_empty() {
                ignored
            } else {
                format!(" with {ignored} left out")
            },
        });
    }
    Ok(line.secret.to_string())
}

/// One warning line per secret file whose first line had something [`read_secret_file`] left
/// out (a byte-order mark, blanks), so that an operator whose password seems refused knows
/// what psprobe took. Never repeats the secret.
pub(crate) fn secret_file_notes(files: &[(Option<&Path>, &'static str)]) -> Vec<String> {
    files
        .iter()
        .filter_map(|(path, what)| {
            let path = (*path)?;
            let text = read_text(path, what).ok()?;
            let ignored = FirstLine::of(&text).ignored();
            (!ignored.is_empty()).then(|| {
                format!(
                    "{}: psprobe left {ignored} out of its first line; the {what} is what \
                     remains (remove them from the file to silence this line)",
                    path.display()
                )
            })
        })
        .collect()
}

/// One warning line per file that holds a secret and that other users may read: the files of
/// `--admin-password-file` and `--controller-dsn-file`, and the `--config` file when it has an
/// `admin_password` or a `dsn`.
pub(crate) fn exposed_secret_files(
    admin_password_file: Option<&Path>,
    dsn_file: Option<&Path>,
    config: Option<&Path>,
) -> Vec<String> {
    let config = config.filter(|path| {
        let Ok(text) = std::fs::read_to_string(path) else {
            return false;
        };
        let Ok(table) = text.parse::<toml::Table>() else {
            return false;
        };
        let has = |section: &str, key: &str| table.get(section).and_then(|s| s.get(key)).is_some();
        has("proxy", "admin_password") || has("controller", "dsn")
    });
    [
        (admin_password_file, "the admin password"),
        (dsn_file, "the controller DSN"),
        (config, "a password"),
    ]
    .into_iter()
    .filter_map(|(path, what)| {
        let path = path?;
        let mode = readable_by_others(path)?;
        Some(format!(
            "{} holds {what} and other users may read it (mode {mode:03o}); run chmod 600 {}",
            path.display(),
            path.display()
        ))
    })
    .collect()
}

/// The file's permission bits when group or others may read it.
pub(crate) fn readable_by_others(path: &Path) -> Option<u32> {
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then_some(mode)
}

/// One warning line per argument of `args` (argv, program name first) that looks like it holds
/// a password.
pub(crate) fn argv_warnings(args: impl IntoIterator<Item = OsString>) -> Vec<String> {
    args.into_iter()
        .enumerate()
        .skip(1)
        .filter(|(_, arg)| looks_like_a_password(&arg.to_string_lossy()))
        .map(|(i, _)| {
            format!(
                "argument {i} of the command line looks like it holds a password: every user of \
                 this host can read it (ps, /proc/PID/cmdline). Pass the controller DSN in \
                 PSPROBE_CONTROLLER_DSN or --controller-dsn-file, the admin password in \
                 PSPROBE_ADMIN_PASSWORD or --admin-password-file, and give a --restart-cmd its \
                 credentials in an option file (e.g. ~/.my.cnf)"
            )
        })
        .collect()
}

/// A URL with `USER:PASS@`, `--password=X`, or a `-pX` word (the MySQL clients' password
/// option) anywhere in `arg`.
fn looks_like_a_password(arg: &str) -> bool {
    url_with_password(arg)
        || arg.split_whitespace().any(|word| {
            let word = word.trim_matches(|c| c == '\'' || c == '"');
            word.strip_prefix("--password=")
                .is_some_and(|v| !v.is_empty())
                || (word.starts_with("-p") && word.len() > 2)
        })
}

fn url_with_password(arg: &str) -> bool {
    arg.match_indices("://").any(|(at, _)| {
        let rest = &arg[at + 3..];
        let authority = rest.split(['/', ' ', '\'', '"']).next().unwrap_or("");
        authority.rsplit_once('@').is_some_and(|(userinfo, _)| {
            userinfo.split_once(':').is_some_and(|(_, p)| !p.is_empty())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn passwords_in_argv_are_spotted_without_repeating_them() {
        let warnings = argv_warnings(args(&[
            "psprobe",
            "proxy",
            "--upstream",
            "mysql://probe:hunter2@db:3306/",
            "--restart-cmd",
            "mariadb-admin -uroot -phunter2 shutdown && systemctl start mariadb",
            "--restart-cmd",
            "mysqladmin --password=hunter2 shutdown",
        ]));
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].starts_with("argument 3 "), "{}", warnings[0]);
        assert!(warnings.iter().all(|w| !w.contains("hunter2")));
    }

    #[test]
    fn ordinary_arguments_pass() {
        let warnings = argv_warnings(args(&[
            "psprobe",
            "proxy",
            "--upstream",
            "db.example:3306",
            "--restart-cmd",
            "systemctl set-environment PFS={pfs} OPTS=\"{opts}\" && mkdir -p /run/x && systemctl restart mariadb",
            "--state-dir",
            "/var/lib/psprobe",
            "http://example.com/path",
            "mysql://probe@db:3306/",
            "-p",
        ]));
        assert_eq!(warnings, Vec::<String>::new());
    }

    #[test]
    fn secret_files_read_their_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, "s3cret\r\nignored\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_secret_file(&path, "admin password").unwrap(), "s3cret");
        assert_eq!(readable_by_others(&path), None);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(readable_by_others(&path), Some(0o644));
        let warnings = exposed_secret_files(Some(&path), None, None);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("mode 644"), "{}", warnings[0]);
        let config = dir.path().join("psprobe.toml");
        std::fs::write(&config, "[proxy]\nlisten = \"127.0.0.1:6033\"\n").unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(exposed_secret_files(None, None, Some(&config)).is_empty());
        std::fs::write(&config, "[controller]\ndsn = \"mysql://u:p@h:1/\"\n").unwrap();
        assert_eq!(exposed_secret_files(None, None, Some(&config)).len(), 1);
        std::fs::write(&path, "\nsecond\n").unwrap();
        let e = read_secret_file(&path, "admin password").unwrap_err();
        assert!(e.to_string().contains("first line is empty"), "{e}");
        assert!(e.to_string().ends_with("empty"), "{e}");
        let e = read_secret_file(&dir.path().join("none"), "admin password").unwrap_err();
        assert!(
            e.to_string().starts_with("cannot read admin password from"),
            "{e}"
        );
    }

    /// What an editor adds around a secret is left out, and said once, without the secret:
    /// a UTF-8 byte-order mark (Windows editors), blanks at either end; a UTF-16 file is named.
    #[test]
    fn byte_order_marks_and_blanks_are_left_out_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        let what = "admin password";
        for (text, secret, note) in [
            (
                "\u{feff}s3cret\n",
                "s3cret",
                Some("a UTF-8 byte-order mark out"),
            ),
            ("s3cret  \r\n", "s3cret", Some("2 trailing blanks out")),
            (
                "\u{feff} s3 cret\t\n",
                "s3 cret",
                Some("a UTF-8 byte-order mark, 1 leading blank and 1 trailing blank out"),
            ),
            ("s3cret\n", "s3cret", None),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(read_secret_file(&path, what).unwrap(), secret, "{text:?}");
            let notes = secret_file_notes(&[(Some(&path), what), (None, "controller DSN")]);
            match note {
                Some(note) => {
                    assert_eq!(notes.len(), 1, "{notes:?}");
                    assert!(notes[0].contains(note), "{text:?}: {}", notes[0]);
                    assert!(!notes[0].contains("s3"), "{}", notes[0]);
                }
                None => assert!(notes.is_empty(), "{notes:?}"),
            }
        }
        std::fs::write(&path, "\u{feff}  \nsecond\n").unwrap();
        let e = read_secret_file(&path, what).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "first line is empty with a UTF-8 byte-order mark and 2 leading blanks left out"
            ),
            "{e}"
        );
        std::fs::write(&path, b"\xff\xfes\x003\x00\n\x00").unwrap();
        let e = read_secret_file(&path, what).unwrap_err().to_string();
        assert!(
            e.contains("is UTF-16") && e.contains("save it as UTF-8"),
            "{e}"
        );
        std::fs::write(&path, b"s3\xffcret\n").unwrap();
        let e = read_secret_file(&path, what).unwrap_err().to_string();
        assert!(
            e.starts_with("cannot read admin password from") && e.contains("UTF-8"),
            "{e}"
        );
    }
}
