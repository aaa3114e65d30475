//! Decoding a copy of the compressed protocol (CLIENT_COMPRESS zlib, CLIENT_ZSTD_COMPRESSION_ALGORITHM).
//!
//! After authentication a compressed connection carries *compressed packets*: a 7-byte header
//! (3 bytes compressed payload length, 1 byte compressed sequence id counted on its own, 3 bytes
//! uncompressed length) and a payload. An uncompressed length of 0 means the payload is stored
//! as is (peers do that below a size threshold, or when compressing does not pay); otherwise the
//! payload is one zlib stream or one zstd frame that must inflate to exactly the declared length.
//! A frame may carry part of a MySQL packet or several; the decoded bytes form the ordinary
//! packet stream, which this decoder hands on in pieces as it produces them.
//!
//! The original bytes are forwarded untouched by the relay; this only decodes a copy. Memory is
//! bounded and never follows a length field past the protocol's limits: nothing is reserved for a
//! frame's declared sizes, output goes through one fixed 32 KiB buffer, zlib keeps its fixed
//! 32 KiB window, and zstd holds at most one block of input (128 KiB) plus the window its frame
//! header names, which must fit the frame's declared length (so at most 16 MiB, one packet).

use std::ops::ControlFlow;

use crate::protocol::frame::{le24, read_le24};

/// Bytes of a compressed packet header.
pub const COMPRESSED_HEADER_LEN: usize = 7;
/// Largest uncompressed payload a frame may decode to (the 3-byte field's limit, 16 MiB - 1).
// The 3-byte field enforces it; the tests name it to decode the largest frame.
#[cfg(test)]
pub const MAX_UNCOMPRESSED_LEN: usize = 0xFF_FFFF;
/// Decoded bytes are handed on in pieces of at most this size.
pub const OUTPUT_CHUNK: usize = 32 * 1024;
/// A zstd frame header is at most 18 bytes; decoding starts once that much (or the whole
/// frame) is buffered.
const ZSTD_MAX_FRAME_HEADER: usize = 18;

/// Which compression the connection negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// `CLIENT_COMPRESS`: one zlib stream per frame.
    Zlib,
    /// `CLIENT_ZSTD_COMPRESSION`: one zstd frame per frame.
    Zstd,
}

impl Algorithm {
    /// Bounded label for metrics.
    pub fn label(self) -> &'static str {
        match self {
            Algorithm::Zlib => "zlib",
            Algorithm::Zstd => "zstd",
        }
    }
}

/// Why a compressed stream could not be decoded. The connection is still forwarded; it is only
/// no longer observed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The payload inflates past the length its header declares.
    #[error("compressed frame decodes to more than the {declared} bytes it declares")]
    TooLong {
        /// The uncompressed length in the frame header.
        declared: usize,
    },
    /// The payload inflates to fewer bytes than declared.
    #[error("compressed frame decodes to {actual} bytes, it declares {declared}")]
    LengthMismatch {
        /// The uncompressed length in the frame header.
        declared: usize,
        /// What the payload inflated to.
        actual: usize,
    },
    /// A frame declares output but has no payload to produce it from.
    #[error("compressed frame declares {0} bytes of output but carries no payload")]
    EmptyPayload(usize),
    /// The zlib stream is corrupt.
    #[error("corrupt zlib stream in a compressed frame")]
    Zlib,
    /// The zstd frame is corrupt (the decoder's reason).
    #[error("corrupt zstd frame in a compressed frame: {0}")]
    Zstd(String),
    /// Bytes follow the end of the compressed stream inside its frame.
    #[error("compressed payload goes on after its stream ended")]
    TrailingBytes,
}

/// The frame being decoded.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Compressed payload bytes still to come.
    remaining: usize,
    /// Uncompressed length from the header; 0 = stored.
    declared: usize,
    /// Decoded bytes handed on so far.
    produced: usize,
}

/// Per-direction decoder of the compressed protocol.
pub struct Decompressor {
    algorithm: Algorithm,
    header: [u8; COMPRESSED_HEADER_LEN],
    header_filled: usize,
    frame: Option<Frame>,
    /// Sequence id of the last frame header (its own counter, for tests and diagnostics).
    last_seq: Option<u8>,
    out: Box<[u8]>,
    zlib: Option<Box<flate2::Decompress>>,
    zstd: ZstdFrame,
    failed: bool,
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor")
            .field("algorithm", &self.algorithm)
            .field("frame", &self.frame)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct ZstdFrame {
    /// Compressed bytes received and not yet consumed by the decoder (at most a block or so).
    input: Vec<u8>,
    decoder: Option<ruzstd::decoding::FrameDecoder>,
}

impl Decompressor {
    /// A decoder for one direction of a connection that negotiated `algorithm`.
    pub fn new(algorithm: Algorithm) -> Self {
        Decompressor {
            algorithm,
            header: [0; COMPRESSED_HEADER_LEN],
            header_filled: 0,
            frame: None,
            last_seq: None,
            out: vec![0; OUTPUT_CHUNK].into_boxed_slice(),
            zlib: None,
            zstd: ZstdFrame::default(),
            failed: false,
        }
    }

    /// The algorithm this decoder decodes.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Sequence id of the most recent frame header.
    pub fn last_sequence_id(&self) -> Option<u8> {
        self.last_seq
    }

    /// True when the stream ends on a frame boundary.
    pub fn is_at_boundary(&self) -> bool {
        self.header_filled == 0 && self.frame.is_none()
    }

    /// Decodes a chunk of the compressed stream, handing decoded bytes to `emit` in order.
    /// Stops (without error) when `emit` breaks. After a break or an error the decoder ignores
    /// further input.
    pub fn feed<F>(&mut self, mut data: &[u8], mut emit: F) -> Result<ControlFlow<()>, DecodeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        if self.failed {
            return Ok(ControlFlow::Break(()));
        }
        let result = self.feed_inner(&mut data, &mut emit);
        // Once the consumer stopped (or the stream was bad) the frame state is no longer
        // trusted: the decoder ignores whatever follows.
        if !matches!(result, Ok(ControlFlow::Continue(()))) {
            self.failed = true;
        }
        result
    }

    fn feed_inner<F>(
        &mut self,
        data: &mut &[u8],
        emit: &mut F,
    ) -> Result<ControlFlow<()>, DecodeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        while !data.is_empty() {
            let Some(mut frame) = self.frame else {
                let take = (COMPRESSED_HEADER_LEN - self.header_filled).min(data.len());
                self.header[self.header_filled..self.header_filled + take]
                    .copy_from_slice(&data[..take]);
                self.header_filled += take;
                *data = &data[take..];
                if self.header_filled == COMPRESSED_HEADER_LEN {
                    self.header_filled = 0;
                    self.start_frame()?;
                    // A frame with an empty payload ends at once.
                    if let Some(f) = self.frame {
                        if f.remaining == 0 {
                            self.frame = None;
                        }
                    }
                }
                continue;
            };
            let take = frame.remaining.min(data.len());
            let (input, rest) = data.split_at(take);
            *data = rest;
            frame.remaining -= take;
            let last = frame.remaining == 0;
            let flow = if frame.declared == 0 {
                frame.produced += input.len();
                emit(input)
            } else {
                match self.algorithm {
                    Algorithm::Zlib => self.inflate(input, last, &mut frame, emit)?,
                    Algorithm::Zstd => self.unzstd(input, last, &mut frame, emit)?,
                }
            };
            self.frame = if last { None } else { Some(frame) };
            // A consumer that stopped (observation ended) stopped the decoding too: the frame
            // is short because of that, not corrupt. Reporting it as an error made the session
            // stop observing a second time (found by the `session` fuzz target).
            if flow.is_break() {
                return Ok(ControlFlow::Break(()));
            }
            if last && frame.declared != 0 && frame.produced != frame.declared {
                return Err(DecodeError::LengthMismatch {
                    declared: frame.declared,
                    actual: frame.produced,
                });
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    fn start_frame(&mut self) -> Result<(), DecodeError> {
        let h = &self.header;
        let compressed = read_le24([h[0], h[1], h[2]]);
        let declared = read_le24([h[4], h[5], h[6]]);
        self.last_seq = Some(h[3]);
        if declared != 0 && compressed == 0 {
            return Err(DecodeError::EmptyPayload(declared));
        }
        if declared != 0 {
            match self.algorithm {
                Algorithm::Zlib => match &mut self.zlib {
                    Some(z) => z.reset(true),
                    None => self.zlib = Some(Box::new(flate2::Decompress::new(true))),
                },
                Algorithm::Zstd => {
                    self.zstd.input.clear();
                    // A fresh decoder per frame: its buffers grow with what it decodes instead
                    // of being reserved from the window size the frame header declares.
                    self.zstd.decoder = None;
                }
            }
        }
        self.frame = Some(Frame {
            remaining: compressed,
            declared,
            produced: 0,
        });
        Ok(())
    }

    fn inflate<F>(
        &mut self,
        mut input: &[u8],
        last: bool,
        frame: &mut Frame,
        emit: &mut F,
    ) -> Result<ControlFlow<()>, DecodeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        let Some(z) = self.zlib.as_deref_mut() else {
            return Err(DecodeError::Zlib);
        };
        loop {
            let (in_before, out_before) = (z.total_in(), z.total_out());
            let status = z
                .decompress(input, &mut self.out, flate2::FlushDecompress::None)
                .map_err(|_| DecodeError::Zlib)?;
            let consumed = (z.total_in() - in_before) as usize;
            let produced = (z.total_out() - out_before) as usize;
            input = &input[consumed..];
            if produced > 0 {
                frame.produced += produced;
                if frame.produced > frame.declared {
                    return Err(DecodeError::TooLong {
                        declared: frame.declared,
                    });
                }
                if emit(&self.out[..produced]).is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            if status == flate2::Status::StreamEnd {
                if !input.is_empty() || !last {
                    return Err(DecodeError::TrailingBytes);
                }
                return Ok(ControlFlow::Continue(()));
            }
            if consumed == 0 && produced == 0 {
                // Needs more input. At the frame's end that means the stream was cut short,
                // which the length check reports (or the stream never ended).
                if last {
                    return Err(DecodeError::Zlib);
                }
                return Ok(ControlFlow::Continue(()));
            }
        }
    }

    fn unzstd<F>(
        &mut self,
        input: &[u8],
        last: bool,
        frame: &mut Frame,
        emit: &mut F,
    ) -> Result<ControlFlow<()>, DecodeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        let zstd = &mut self.zstd;
        zstd.input.extend_from_slice(input);
        if zstd.decoder.is_none() && zstd.input.len() < ZSTD_MAX_FRAME_HEADER && !last {
            return Ok(ControlFlow::Continue(()));
        }
        if zstd.decoder.is_none() {
            // ruzstd reserves the window the frame header asks for (up to 100 MiB) before it
            // decodes a byte; refuse a window the frame cannot need, so a 20-byte frame cannot
            // make psprobe allocate it.
            if let Some(window) = zstd_window(&zstd.input) {
                let needed = frame.declared.next_power_of_two().max(ZSTD_MIN_WINDOW) as u64;
                if window > needed {
                    return Err(DecodeError::Zstd(format!(
                        "a window of {window} bytes for a frame of {} bytes",
                        frame.declared
                    )));
                }
            }
        }
        let decoder = zstd
            .decoder
            .get_or_insert_with(ruzstd::decoding::FrameDecoder::new);
        loop {
            let (read, written) = decoder
                .decode_from_to(&zstd.input, &mut self.out)
                .map_err(|e| DecodeError::Zstd(e.to_string()))?;
            // ruzstd 0.8 can report bytes read that it was not given (4, for a checksum that
            // is missing, on every call): count only what was there, or this loop never ends
            // (found by the `compress` fuzz target: a frame froze the relay's thread).
            let consumed = read.min(zstd.input.len());
            zstd.input.drain(..consumed);
            // Once the last block is decoded but the frame's checksum has not arrived, ruzstd
            // answers every call with "4 read" and returns before draining its buffer: what
            // was decoded is then drained here, so the bytes emitted do not depend on where
            // the input was cut (found by the `compress` fuzz target).
            let written = if written == 0 {
                std::io::Read::read(decoder, &mut self.out)
                    .map_err(|e| DecodeError::Zstd(e.to_string()))?
            } else {
                written
            };
            if written > 0 {
                frame.produced += written;
                if frame.produced > frame.declared {
                    return Err(DecodeError::TooLong {
                        declared: frame.declared,
                    });
                }
                if emit(&self.out[..written]).is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            if consumed == 0 && written == 0 {
                break;
            }
        }
        if last {
            if !decoder.is_finished() {
                return Err(DecodeError::Zstd("frame ends before its last block".into()));
            }
            if !zstd.input.is_empty() {
                return Err(DecodeError::TrailingBytes);
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// Smallest window a zstd encoder writes (1 KiB, `ZSTD_WINDOWLOG_ABSOLUTEMIN`).
const ZSTD_MIN_WINDOW: usize = 1 << 10;

/// The window size a zstd frame header asks for, or `None` when `header` is not (yet) a whole
/// zstd frame header (the decoder then reports what is wrong). Frame format: RFC 8878 3.1.1.
/// An encoder that knows the input size (MySQL compresses each packet in one call) writes a
/// window no larger than the input rounded up to a power of two, or exactly the input size
/// (single segment).
fn zstd_window(header: &[u8]) -> Option<u64> {
    const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
    let (magic, rest) = header.split_first_chunk::<4>()?;
    if *magic != MAGIC {
        return None;
    }
    let (&descriptor, rest) = rest.split_first()?;
    let single_segment = descriptor & 0x20 != 0;
    if !single_segment {
        let &window_descriptor = rest.first()?;
        let log = 10 + u64::from(window_descriptor >> 3);
        let base = 1u64 << log;
        return Some(base + (base / 8) * u64::from(window_descriptor & 7));
    }
    // Single segment: the window is the frame content size.
    let dictionary_bytes = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let size_bytes = [1usize, 2, 4, 8][usize::from(descriptor >> 6)];
    let size = rest.get(dictionary_bytes..dictionary_bytes + size_bytes)?;
    let value = size
        .iter()
        .rev()
        .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    // A 2-byte size is stored minus 256.
    Some(if size_bytes == 2 { value + 256 } else { value })
}

/// Encodes `payload` as one stored (uncompressed) frame: what peers send below their
/// compression threshold. Used by tests and by tools that build frames.
pub fn stored_frame(seq: u8, payload: &[u8]) -> Vec<u8> {
    frame_bytes(seq, payload, 0)
}

/// A compressed packet with the given already-compressed payload and declared length.
pub fn frame_bytes(seq: u8, payload: &[u8], uncompressed_len: usize) -> Vec<u8> {
    let n = payload.len();
    let u = uncompressed_len;
    let mut out = Vec::with_capacity(COMPRESSED_HEADER_LEN + n);
    out.extend_from_slice(&le24(n));
    out.push(seq);
    out.extend_from_slice(&le24(u));
    out.extend_from_slice(payload);
    out
}

#[cfg(test)]
#[path = "compress_tests.rs"]
mod tests;
