//! Connecting to the upstream server, and telling the client in MySQL's own terms when that fails.

use std::io;
use std::time::Duration;

use psprobe_core::protocol::{encode_err, encode_packet};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Server error 1429 "Unable to connect to foreign data source". Client-side codes such as 2003
/// ("Can't connect to MySQL server") would fit better, but libmariadb rejects an error packet
/// carrying a code of the client range (2000-2999) as "malformed packet" and drops the text.
pub(crate) const ER_CONNECT_TO_FOREIGN_DATA_SOURCE: u16 = 1429;

pub(crate) async fn connect(upstream: &str, timeout: Duration) -> io::Result<TcpStream> {
    match tokio::time::timeout(timeout, TcpStream::connect(upstream)).await {
        Ok(result) => result,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer within {timeout:?}"),
        )),
    }
}

/// Unanswered keepalive probes after which the kernel gives the connection up.
const KEEPALIVE_PROBES: u32 = 3;

/// Makes a dead path to the server end the connection within `4 × idle`, whichever side's
/// data was in flight: keepalive probes after `idle` of silence, one per `idle`, catch a
/// server that went quiet while psprobe waits for an answer (the query was acknowledged,
/// the answer is lost); `TCP_USER_TIMEOUT` catches psprobe's own data left unacknowledged
/// (the query never arrived). The kernel answers probes for a server busy on a long query,
/// so no live statement is cut.
pub(crate) fn keep_alive(stream: &TcpStream, idle: Duration) -> io::Result<()> {
    let socket = socket2::SockRef::from(stream);
    let params = socket2::TcpKeepalive::new()
        .with_time(idle)
        .with_interval(idle)
        .with_retries(KEEPALIVE_PROBES);
    socket.set_tcp_keepalive(&params)?;
    socket.set_tcp_user_timeout(Some(idle * (KEEPALIVE_PROBES + 1)))
}

/// The ERR packet sent in place of the server greeting when the upstream cannot be reached.
/// Clients show it like a server-side refusal ("ERROR 1429 (HY000): psprobe could not ...").
pub(crate) fn unreachable_packet(upstream: &str, cause: &io::Error) -> Vec<u8> {
    let message = format!("psprobe could not connect to upstream {upstream}: {cause}");
    encode_packet(
        0,
        &encode_err(ER_CONNECT_TO_FOREIGN_DATA_SOURCE, b"HY000", &message),
    )
}

pub(crate) async fn refuse_client(client: &mut TcpStream, upstream: &str, cause: &io::Error) {
    let packet = unreachable_packet(upstream, cause);
    if client.write_all(&packet).await.is_ok() {
        let _ = client.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use psprobe_core::protocol::parse_err_code;

    #[tokio::test]
    async fn keepalive_and_user_timeout_are_set() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stream, _) = tokio::join!(connect(&addr, Duration::from_secs(5)), listener.accept());
        let stream = stream.unwrap();
        keep_alive(&stream, Duration::from_secs(7)).unwrap();
        let s = socket2::SockRef::from(&stream);
        assert!(s.keepalive().unwrap());
        assert_eq!(s.tcp_keepalive_time().unwrap(), Duration::from_secs(7));
        assert_eq!(s.tcp_keepalive_interval().unwrap(), Duration::from_secs(7));
        assert_eq!(s.tcp_keepalive_retries().unwrap(), KEEPALIVE_PROBES);
        assert_eq!(s.tcp_user_timeout().unwrap(), Some(Duration::from_secs(28)));
    }

    #[test]
    fn refusal_is_a_wellformed_err_packet() {
        let cause = io::Error::new(io::ErrorKind::ConnectionRefused, "Connection refused");
        let p = unreachable_packet("127.0.0.1:3306", &cause);
        let len = usize::from(p[0]) | usize::from(p[1]) << 8 | usize::from(p[2]) << 16;
        assert_eq!(len, p.len() - 4);
        assert_eq!(p[3], 0, "sequence id of a greeting");
        assert_eq!(
            parse_err_code(&p[4..]).unwrap().1,
            ER_CONNECT_TO_FOREIGN_DATA_SOURCE
        );
        let text = String::from_utf8_lossy(&p[13..]);
        assert!(
            text.contains("127.0.0.1:3306") && text.contains("refused"),
            "{text}"
        );
    }
}
