//! Authentication exchanges that put the password on the wire in clear text, which is only
//! acceptable on an encrypted leg: psprobe refuses them when it terminated a client's TLS but
//! talks to the server in plain text (`--server-tls disabled`). And the ones that make a plain
//! client RSA-encrypt its password for the server, which a server reached over TLS does not
//! take (there it reads the password in clear): psprobe refuses them when it encrypts the
//! server leg for a plain client (`--server-tls required`).

use super::codec::nul_terminated;
use super::response::EOF_HEADER;

/// AuthMoreData header.
pub const AUTH_MORE_DATA: u8 = 0x01;
/// caching_sha2_password: the server needs the password itself (the client sends it in clear
/// on a secure channel, RSA-encrypted otherwise).
pub const PERFORM_FULL_AUTHENTICATION: u8 = 0x04;

/// Plugins whose client sends the password in clear on a connection it believes secure.
pub const CLEARTEXT_PLUGINS: &[&[u8]] = &[b"sha256_password", b"mysql_clear_password"];

/// The plugin named by a server packet of the authentication exchange when that packet makes a
/// TLS client send its password in clear: caching_sha2_password's full authentication, or a
/// switch to a cleartext plugin.
pub fn server_asks_for_cleartext(payload: &[u8]) -> Option<&'static str> {
    match payload {
        [AUTH_MORE_DATA, PERFORM_FULL_AUTHENTICATION] => Some("caching_sha2_password"),
        [EOF_HEADER, rest @ ..] if !rest.is_empty() => {
            let plugin = nul_terminated(rest).map_or(rest, |(_, p)| p);
            cleartext_plugin(plugin)
        }
        _ => None,
    }
}

/// The plugin named by a server packet of the authentication exchange when that packet makes a
/// client on a plain connection RSA-encrypt its password: caching_sha2_password's full
/// authentication, or a switch to sha256_password.
pub fn server_asks_for_rsa(payload: &[u8]) -> Option<&'static str> {
    match payload {
        [AUTH_MORE_DATA, PERFORM_FULL_AUTHENTICATION] => Some("caching_sha2_password"),
        [EOF_HEADER, rest @ ..] if !rest.is_empty() => {
            let plugin = nul_terminated(rest).map_or(rest, |(_, p)| p);
            (plugin == SHA256_PASSWORD).then_some("sha256_password")
        }
        _ => None,
    }
}

/// The plugin that RSA-encrypts the password on a plain connection from its first packet on.
pub const SHA256_PASSWORD: &[u8] = b"sha256_password";

/// `Some(name)` when `plugin` sends the password in clear over TLS.
pub fn cleartext_plugin(plugin: &[u8]) -> Option<&'static str> {
    CLEARTEXT_PLUGINS
        .iter()
        .find(|p| **p == plugin)
        .and_then(|p| std::str::from_utf8(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_asks_for_the_password_in_clear() {
        assert_eq!(
            server_asks_for_cleartext(&[0x01, 0x04]),
            Some("caching_sha2_password")
        );
        assert_eq!(server_asks_for_cleartext(&[0x01, 0x03]), None, "fast auth");
        assert_eq!(
            server_asks_for_cleartext(b"\x01-----BEGIN PUBLIC KEY"),
            None
        );
        assert_eq!(
            server_asks_for_cleartext(b"\xfesha256_password\0abcdefghij\0"),
            Some("sha256_password")
        );
        assert_eq!(
            server_asks_for_cleartext(b"\xfemysql_clear_password\0"),
            Some("mysql_clear_password")
        );
        assert_eq!(
            server_asks_for_cleartext(b"\xfeclient_ed25519\0abc"),
            None,
            "ed25519 signs, it never sends the password"
        );
        assert_eq!(server_asks_for_cleartext(&[0x00, 0, 0, 2, 0]), None, "OK");
        assert_eq!(cleartext_plugin(b"mysql_native_password"), None);
    }

    #[test]
    fn what_makes_a_plain_client_encrypt_with_rsa() {
        assert_eq!(
            server_asks_for_rsa(&[0x01, 0x04]),
            Some("caching_sha2_password")
        );
        assert_eq!(server_asks_for_rsa(&[0x01, 0x03]), None, "fast auth");
        assert_eq!(
            server_asks_for_rsa(b"\xfesha256_password\0abcdefghij\0"),
            Some("sha256_password")
        );
        // The client sends mysql_clear_password's password as it is: the TLS leg takes it.
        assert_eq!(server_asks_for_rsa(b"\xfemysql_clear_password\0"), None);
        assert_eq!(server_asks_for_rsa(b"\x01-----BEGIN PUBLIC KEY"), None);
        assert_eq!(server_asks_for_rsa(&[0x00, 0, 0, 2, 0]), None, "OK");
    }
}
