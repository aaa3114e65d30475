//! Reading single packets during the connection phase, exactly: never a byte past the packet,
//! so a TLS handshake that follows an SSLRequest finds its ClientHello untouched in the socket.
//! Cancel-safe: what was read stays in the buffer if the read is dropped (in a `select!`).

use std::io;

use psprobe_core::protocol::{encode_err, encode_packet, read_le24, HEADER_LEN};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Connection-phase packets are small (greeting, handshake response with attributes, auth
/// data); a larger one ends packet-level handling and the bytes are relayed as they are.
pub(crate) const MAX_HANDSHAKE_PACKET: usize = 1 << 20;

/// Most bytes one read asks for (a packet's header, then the rest of it, in steps of this).
const READ_CHUNK: usize = 4096;

/// Server error 1043 "Bad handshake", SQL state 08S01: what psprobe answers when it cannot set
/// up a connection the way it was asked to.
pub(crate) const ER_HANDSHAKE_ERROR: u16 = 1043;

/// What a read ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Got {
    Packet,
    /// The peer closed (the buffer keeps what came before).
    Eof,
    /// The header announces more than [`MAX_HANDSHAKE_PACKET`].
    TooBig,
}

/// One packet being read.
#[derive(Debug, Default)]
pub(crate) struct PacketBuf {
    buf: Vec<u8>,
}

impl PacketBuf {
    /// Header and payload of the packet read (or what has arrived of it).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The packet without its header: only the `handshake` fuzz target and the tests read it
    /// (the proxy relays whole packets).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn payload(&self) -> &[u8] {
        self.buf.get(HEADER_LEN..).unwrap_or(&[])
    }

    pub(crate) fn seq(&self) -> u8 {
        self.buf.get(3).copied().unwrap_or(0)
    }

    /// Hands the bytes over and starts empty for the next packet.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    fn wanted(&self) -> Result<usize, Got> {
        if self.buf.len() < HEADER_LEN {
            return Ok(HEADER_LEN);
        }
        let len = read_le24([self.buf[0], self.buf[1], self.buf[2]]);
        if len > MAX_HANDSHAKE_PACKET {
            return Err(Got::TooBig);
        }
        Ok(HEADER_LEN + len)
    }

    /// Reads until the buffer holds one whole packet. Straight into the buffer, never through
    /// an array on the future: every byte of this future is held by each connection waiting
    /// in its handshake.
    pub(crate) async fn read_packet<R: AsyncRead + Unpin>(
        &mut self,
        from: &mut R,
    ) -> io::Result<Got> {
        loop {
            let need = match self.wanted() {
                Ok(need) => need,
                Err(got) => return Ok(got),
            };
            if self.buf.len() >= HEADER_LEN && self.buf.len() == need {
                return Ok(Got::Packet);
            }
            let want = (need - self.buf.len()).min(READ_CHUNK);
            self.buf.reserve(want);
            let n = (&mut *from)
                .take(want as u64)
                .read_buf(&mut self.buf)
                .await?;
            if n == 0 {
                return Ok(Got::Eof);
            }
        }
    }
}

/// ERR 1043 with psprobe's message, as the packet `seq`.
pub(crate) fn handshake_error(seq: u8, message: &str) -> Vec<u8> {
    encode_packet(seq, &encode_err(ER_HANDSHAKE_ERROR, b"08S01", message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_exactly_one_packet_and_no_further() {
        let mut wire = encode_packet(1, b"hello");
        wire.extend_from_slice(b"\x16\x03\x01tls");
        let mut src = &wire[..];
        let mut p = PacketBuf::default();
        assert_eq!(p.read_packet(&mut src).await.unwrap(), Got::Packet);
        assert_eq!((p.seq(), p.payload()), (1, &b"hello"[..]));
        assert_eq!(src, b"\x16\x03\x01tls", "the rest is left in the stream");
        let mut empty = &encode_packet(4, b"")[..];
        let mut p = PacketBuf::default();
        assert_eq!(p.read_packet(&mut empty).await.unwrap(), Got::Packet);
        assert_eq!(p.bytes().len(), 4);
    }

    #[tokio::test]
    async fn eof_and_oversized_headers() {
        let mut cut = &encode_packet(0, b"abcdef")[..7];
        let mut p = PacketBuf::default();
        assert_eq!(p.read_packet(&mut cut).await.unwrap(), Got::Eof);
        assert_eq!(p.bytes().len(), 7);
        let mut big = &[0xFF, 0xFF, 0xFF, 0, 1, 2][..];
        let mut p = PacketBuf::default();
        assert_eq!(p.read_packet(&mut big).await.unwrap(), Got::TooBig);
        // Bytes that are not MySQL at all (a TLS ClientHello sent without SSLRequest).
        let mut tls = &[0x16, 0x03, 0x01, 0x02, 0x00][..];
        let mut p = PacketBuf::default();
        assert_eq!(p.read_packet(&mut tls).await.unwrap(), Got::Eof);
    }

    #[test]
    fn handshake_error_is_an_err_packet() {
        let p = handshake_error(3, "no");
        assert_eq!(p[3], 3);
        assert_eq!(p[4], 0xFF);
        assert_eq!(u16::from_le_bytes([p[5], p[6]]), ER_HANDSHAKE_ERROR);
    }
}
