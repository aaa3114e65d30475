//! Why a TLS handshake failed, as a bounded label for metrics and a phrase for the log line.

use std::io;

/// Which leg a handshake was on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// psprobe as the TLS server, the client connecting to it.
    Client,
    /// psprobe as the TLS client of the upstream server.
    Server,
}

impl Leg {
    pub const ALL: [Leg; 2] = [Leg::Client, Leg::Server];

    pub fn label(self) -> &'static str {
        match self {
            Leg::Client => "client",
            Leg::Server => "server",
        }
    }
}

/// The cause of a failed handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The peer did not finish within the handshake timeout.
    Timeout,
    /// The peer closed the connection mid-handshake (a truncated handshake).
    Closed,
    /// What arrived was not TLS, or not valid TLS (garbage instead of a ClientHello).
    BadMessage,
    /// No TLS version or cipher suite in common.
    Incompatible,
    /// A certificate was refused: the peer rejected psprobe's, or psprobe the server's.
    Certificate,
    /// The peer ended the handshake with another alert.
    Alert,
    /// The server does not offer TLS where psprobe needs it (`--server-tls required`).
    NoTls,
    /// A socket error.
    Io,
}

impl Cause {
    pub const ALL: [Cause; 8] = [
        Cause::Timeout,
        Cause::Closed,
        Cause::BadMessage,
        Cause::Incompatible,
        Cause::Certificate,
        Cause::Alert,
        Cause::NoTls,
        Cause::Io,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Cause::Timeout => "timeout",
            Cause::Closed => "closed",
            Cause::BadMessage => "bad_message",
            Cause::Incompatible => "incompatible",
            Cause::Certificate => "certificate",
            Cause::Alert => "alert",
            Cause::NoTls => "no_tls",
            Cause::Io => "io",
        }
    }

    /// Classifies an error from a tokio-rustls handshake.
    pub fn of(e: &io::Error) -> Cause {
        if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            return Cause::of_rustls(tls);
        }
        match e.kind() {
            io::ErrorKind::TimedOut => Cause::Timeout,
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => Cause::Closed,
            io::ErrorKind::InvalidData => Cause::BadMessage,
            _ => Cause::Io,
        }
    }

    fn of_rustls(e: &rustls::Error) -> Cause {
        use rustls::{AlertDescription as A, Error as E};
        match e {
            E::InvalidMessage(_)
            | E::InappropriateMessage { .. }
            | E::InappropriateHandshakeMessage { .. }
            | E::DecryptError => Cause::BadMessage,
            E::PeerIncompatible(_) | E::NoCertificatesPresented => Cause::Incompatible,
            E::InvalidCertificate(_) => Cause::Certificate,
            E::AlertReceived(
                A::BadCertificate
                | A::UnsupportedCertificate
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::CertificateUnknown
                | A::UnknownCA
                | A::AccessDenied,
            ) => Cause::Certificate,
            E::AlertReceived(
                A::ProtocolVersion | A::HandshakeFailure | A::InsufficientSecurity,
            ) => Cause::Incompatible,
            E::AlertReceived(_) => Cause::Alert,
            _ => Cause::BadMessage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes() {
        let wrap = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, e);
        assert_eq!(
            Cause::of(&wrap(rustls::Error::AlertReceived(
                rustls::AlertDescription::UnknownCA
            ))),
            Cause::Certificate
        );
        assert_eq!(
            Cause::of(&wrap(rustls::Error::InvalidMessage(
                rustls::InvalidMessage::InvalidContentType
            ))),
            Cause::BadMessage
        );
        assert_eq!(
            Cause::of(&io::Error::from(io::ErrorKind::UnexpectedEof)),
            Cause::Closed
        );
        assert_eq!(
            Cause::of(&io::Error::from(io::ErrorKind::TimedOut)),
            Cause::Timeout
        );
        let mut labels: Vec<_> = Cause::ALL.iter().map(|c| c.label()).collect();
        labels.dedup();
        assert_eq!(labels.len(), Cause::ALL.len());
    }
}
