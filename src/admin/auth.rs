//! Admin login: `mysql_native_password` checked against the configured secret.
//!
//! The client sends `SHA1(password) XOR SHA1(salt + SHA1(SHA1(password)))` for the 20-byte salt
//! of the handshake; the server recomputes it from the secret it knows.

use std::fmt;
use std::io::Read;

use sha1::{Digest, Sha1};

/// Length of the handshake salt (scramble) `mysql_native_password` uses.
pub(crate) const SALT_LEN: usize = 20;
pub(crate) const NATIVE_PASSWORD: &str = "mysql_native_password";
pub(crate) const DEFAULT_USER: &str = "admin";

/// Who may log in to the admin interface. The password is required: with an empty one every
/// login is refused.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminAuth {
    pub user: String,
    pub password: String,
}

impl AdminAuth {
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
        AdminAuth {
            user: user.into(),
            password: password.into(),
        }
    }

    /// Whether `username` with the client's `auth_data` (scrambled with `salt`) may log in.
    pub fn verify(&self, username: &[u8], salt: &[u8], auth_data: &[u8]) -> bool {
        // Evaluate both so timing does not tell a wrong user from a wrong password.
        let user_ok = username == self.user.as_bytes();
        let password_ok = !self.password.is_empty()
            && auth_data.len() == 20
            && constant_time_eq(&scramble(self.password.as_bytes(), salt), auth_data);
        user_ok & password_ok
    }
}

impl fmt::Debug for AdminAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminAuth")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut hasher = Sha1::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// The `mysql_native_password` auth response for `password` and `salt`.
pub(crate) fn scramble(password: &[u8], salt: &[u8]) -> [u8; 20] {
    let stage1 = sha1(&[password]);
    let stage2 = sha1(&[&stage1]);
    let mask = sha1(&[salt, &stage2]);
    let mut out = [0u8; 20];
    for (o, (a, b)) in out.iter_mut().zip(stage1.iter().zip(mask.iter())) {
        *o = a ^ b;
    }
    out
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh per-connection salt of printable ASCII (no NUL, which would end it on the wire, and
/// no `$`), from the OS random source.
pub(crate) fn new_salt() -> [u8; SALT_LEN] {
    let mut raw = [0u8; SALT_LEN];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .is_ok();
    if !filled {
        fallback_random(&mut raw);
    }
    raw.map(|b| {
        // 94 printable characters from '!' to '~'.
        let c = b'!' + b % 94;
        if c == b'$' {
            b'#'
        } else {
            c
        }
    })
}

/// Randomness without /dev/urandom: std's per-process random hash keys, the time and a counter.
fn fallback_random(out: &mut [u8]) {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = RandomState::new();
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = state.build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_usize(i);
        h.write_u128(
            crate::clock::system_now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let bytes = h.finish().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha1_known_vectors() {
        assert_eq!(
            hex(&sha1(&[b"abc"])),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        // MySQL's PASSWORD('secret') is '*' + hex(SHA1(SHA1('secret'))).
        assert_eq!(
            hex(&sha1(&[&sha1(&[b"secret"])])).to_uppercase(),
            "14E65567ABDB5135D0CFD9A70B3032C179A49EE7"
        );
    }

    #[test]
    fn native_password_round_trip() {
        let auth = AdminAuth::new("admin", "secret");
        let salt = *b"abcdefghijklmnopqrst";
        // Computed independently of `scramble`: client side of mysql_native_password.
        let stage1 = sha1(&[b"secret"]);
        let mask = sha1(&[&salt, &sha1(&[&stage1])]);
        let token: Vec<u8> = stage1.iter().zip(mask).map(|(a, b)| a ^ b).collect();
        assert!(auth.verify(b"admin", &salt, &token));
        assert!(!auth.verify(b"root", &salt, &token), "user must match");
        let other_salt = *b"tsrqponmlkjihgfedcba";
        assert!(!auth.verify(b"admin", &other_salt, &token), "salt bound");
        let wrong = scramble(b"secreT", &salt);
        assert!(!auth.verify(b"admin", &salt, &wrong));
        assert!(!auth.verify(b"admin", &salt, b""), "empty password");
        assert!(!auth.verify(b"admin", &salt, &token[..19]));
    }

    #[test]
    fn empty_secret_refuses_everyone() {
        let auth = AdminAuth::new("admin", "");
        let salt = new_salt();
        assert!(!auth.verify(b"admin", &salt, b""));
        assert!(!auth.verify(b"admin", &salt, &scramble(b"", &salt)));
    }

    #[test]
    fn salts_are_printable_and_fresh() {
        let a = new_salt();
        let b = new_salt();
        assert_ne!(a, b);
        assert!(a.iter().all(|c| c.is_ascii_graphic() && *c != b'$'));
        let mut raw = [0u8; SALT_LEN];
        fallback_random(&mut raw);
        assert!(raw.iter().any(|&b| b != 0));
    }

    #[test]
    fn debug_hides_the_password() {
        let text = format!("{:?}", AdminAuth::new("admin", "hunter2"));
        assert!(!text.contains("hunter2"), "{text}");
    }
}
