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
//!
//! Work is bounded too: a frame of 16 KiB of zlib (or a few hundred bytes of zstd) inflates to
//! 16 MiB, so one chunk from the network can hold tens of milliseconds of decoding. Given a
//! budget ([`Decompressor::feed_within`]), a call stops once it has emitted that many decoded
//! bytes and keeps what it has not decoded (at most the rest of the chunk it was given);
//! [`Decompressor::resume`] goes on from there. A proxy decodes in steps between other work.
//!
//! Most of that work is usually not needed: a consumer that looks only at the head of each
//! packet (a de-framer with a capture limit) says how many of the next decoded bytes it would
//! only count ([`Plain::ignorable`]). When that covers the rest of the frame being decoded,
//! the rest is not decoded: its compressed bytes are passed over and the consumer is told how
//! many decoded bytes it skipped ([`Plain::skipped`]). A 16 MiB query in one frame costs the
//! decoding of its captured head, not 16 MiB. What is skipped is not checked (a corrupt tail,
//! a wrong declared length): the relay forwards it unchanged, and the peer judges it.

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

/// Where decoded bytes go, for [`Decompressor::feed_plain_within`] and
/// [`Decompressor::resume_plain`]; the closures the other methods take want every byte.
pub trait Plain {
    /// The next decoded bytes, in order. Breaking stops the decoding.
    fn bytes(&mut self, plain: &[u8]) -> ControlFlow<()>;

    /// How many of the next decoded bytes this consumer would only count, not look at (0: it
    /// wants every byte). The decoder may then skip producing them.
    fn ignorable(&self) -> usize {
        0
    }

    /// `n` decoded bytes (at most what [`Plain::ignorable`] said) were skipped, not produced.
    fn skipped(&mut self, _n: usize) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// A closure as a consumer that wants every byte.
struct Every<F>(F);

impl<F: FnMut(&[u8]) -> ControlFlow<()>> Plain for Every<F> {
    fn bytes(&mut self, plain: &[u8]) -> ControlFlow<()> {
        (self.0)(plain)
    }
}

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

/// How far a call with a budget got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// Everything given was decoded.
    Done,
    /// The budget ran out: the rest waits for [`Decompressor::resume`].
    More,
    /// The consumer stopped (or the decoder had already stopped): nothing more is decoded.
    Stopped,
}

/// Where a decoding step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Go,
    /// Budget spent; the current frame's decoder may still hold output.
    Pause,
    /// The consumer broke.
    Stop,
    /// The consumer ignores the rest of the frame's output: it is not decoded.
    Skip,
}

impl From<ControlFlow<()>> for Flow {
    fn from(flow: ControlFlow<()>) -> Self {
        match flow {
            ControlFlow::Continue(()) => Flow::Go,
            ControlFlow::Break(()) => Flow::Stop,
        }
    }
}

/// The frame being decoded.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Compressed payload bytes still to come.
    remaining: usize,
    /// Uncompressed length from the header; 0 = stored.
    declared: usize,
    /// Decoded bytes handed on (or skipped) so far.
    produced: usize,
    /// The rest of the payload is passed over, not decoded.
    skipping: bool,
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
    /// A call stopped at its budget: the current frame's decoder may hold output, and
    /// `backlog[backlog_at..]` is input not looked at yet.
    paused: bool,
    backlog: Vec<u8>,
    backlog_at: usize,
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor")
            .field("algorithm", &self.algorithm)
            .field("frame", &self.frame)
            .field("failed", &self.failed)
            .field("paused", &self.paused)
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
            paused: false,
            backlog: Vec::new(),
            backlog_at: 0,
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

    /// True when the stream ends on a frame boundary (and nothing waits to be decoded).
    pub fn is_at_boundary(&self) -> bool {
        self.header_filled == 0 && self.frame.is_none() && !self.paused
    }

    /// A call with a budget stopped before the end of what it was given:
    /// [`Decompressor::resume`] goes on.
    pub fn is_behind(&self) -> bool {
        self.paused && !self.failed
    }

    /// Decodes a chunk of the compressed stream, handing decoded bytes to `emit` in order.
    /// Stops (without error) when `emit` breaks. After a break or an error the decoder ignores
    /// further input.
    pub fn feed<F>(&mut self, data: &[u8], emit: F) -> Result<ControlFlow<()>, DecodeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        Ok(match self.feed_within(data, usize::MAX, emit)? {
            Decoded::Done | Decoded::More => ControlFlow::Continue(()),
            Decoded::Stopped => ControlFlow::Break(()),
        })
    }

    /// Like [`Decompressor::feed`], but returns once about `budget` decoded bytes have been
    /// emitted (at least one piece, so every call makes progress); the rest of `data` is kept
    /// (copied) for [`Decompressor::resume`]. Given more input while behind, it first decodes
    /// what it kept, however long that takes: bytes are never decoded out of order.
    pub fn feed_within<F>(
        &mut self,
        data: &[u8],
        budget: usize,
        emit: F,
    ) -> Result<Decoded, DecodeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        self.feed_plain_within(data, budget, &mut Every(emit))
    }

    /// Like [`Decompressor::feed_within`], into a consumer that may skip what it ignores.
    pub fn feed_plain_within<P>(
        &mut self,
        data: &[u8],
        budget: usize,
        emit: &mut P,
    ) -> Result<Decoded, DecodeError>
    where
        P: Plain,
    {
        if self.is_behind() && self.resume_plain(usize::MAX, emit)? == Decoded::Stopped {
            return Ok(Decoded::Stopped);
        }
        if self.failed {
            return Ok(Decoded::Stopped);
        }
        let mut rest = data;
        // At least one piece a call: a budget only reaches 0 by decoding.
        let mut left = budget.max(1);
        let flow = self.feed_inner(&mut rest, &mut left, emit);
        if let Ok(Flow::Pause) = flow {
            // At most the rest of this chunk, into a buffer kept for the connection's life.
            self.backlog.clear();
            self.backlog.extend_from_slice(rest);
            self.backlog_at = 0;
        }
        self.settle(flow)
    }

    /// Goes on decoding what a call with a budget left, for at most about `budget` more
    /// decoded bytes.
    pub fn resume<F>(&mut self, budget: usize, emit: F) -> Result<Decoded, DecodeError>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        self.resume_plain(budget, &mut Every(emit))
    }

    /// Like [`Decompressor::resume`], into a consumer that may skip what it ignores.
    pub fn resume_plain<P>(&mut self, budget: usize, emit: &mut P) -> Result<Decoded, DecodeError>
    where
        P: Plain,
    {
        if self.failed {
            return Ok(Decoded::Stopped);
        }
        if !self.paused {
            return Ok(Decoded::Done);
        }
        let backlog = std::mem::take(&mut self.backlog);
        let mut rest = backlog.get(self.backlog_at..).unwrap_or_default();
        let mut left = budget.max(1);
        let flow = self.feed_inner(&mut rest, &mut left, emit);
        let at = backlog.len() - rest.len();
        self.backlog = backlog;
        if let Ok(Flow::Pause) = flow {
            self.backlog_at = at;
        } else {
            self.backlog.clear();
            self.backlog_at = 0;
        }
        self.settle(flow)
    }

    fn settle(&mut self, flow: Result<Flow, DecodeError>) -> Result<Decoded, DecodeError> {
        match flow {
            Ok(Flow::Go | Flow::Skip) => Ok(Decoded::Done),
            Ok(Flow::Pause) => Ok(Decoded::More),
            // Once the consumer stopped (or the stream was bad) the frame state is no longer
            // trusted: the decoder ignores whatever follows.
            Ok(Flow::Stop) => {
                self.failed = true;
                Ok(Decoded::Stopped)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn feed_inner<F>(
        &mut self,
        data: &mut &[u8],
        budget: &mut usize,
        emit: &mut F,
    ) -> Result<Flow, DecodeError>
    where
        F: Plain,
    {
        // Paused: the current frame's decoder goes on first, even with no new input.
        while !data.is_empty() || self.paused {
            if *budget == 0 {
                // Spent on earlier frames of this call: the next one waits (resumable here:
                // the header and frame state are kept, `data` is what is left).
                self.paused = true;
                return Ok(Flow::Pause);
            }
            let Some(mut frame) = self.frame else {
                self.paused = false;
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
            let input = &data[..take];
            // This input reaches the end of the frame's payload.
            let ends = take == frame.remaining;
            let (used, mut flow) = if frame.declared == 0 {
                // Stored: as long as its input; counted like decoded bytes.
                frame.produced += input.len();
                *budget = budget.saturating_sub(take);
                (take, Flow::from(emit.bytes(input)))
            } else if frame.skipping || Self::rest_ignored(&frame, emit) {
                (0, Flow::Skip)
            } else {
                match self.algorithm {
                    Algorithm::Zlib => self.inflate(input, ends, &mut frame, budget, emit)?,
                    Algorithm::Zstd => self.unzstd(input, ends, &mut frame, budget, emit)?,
                }
            };
            let used = if flow == Flow::Skip {
                flow = self.skip_rest(&mut frame, emit);
                // Passed over: this input was never decoded.
                take
            } else {
                used
            };
            *data = &data[used..];
            frame.remaining -= used;
            self.paused = flow == Flow::Pause;
            let last = frame.remaining == 0 && flow == Flow::Go;
            self.frame = if last { None } else { Some(frame) };
            // A consumer that stopped (observation ended) stopped the decoding too: the frame
            // is short because of that, not corrupt. Reporting it as an error made the session
            // stop observing a second time (found by the `session` fuzz target).
            if flow != Flow::Go {
                return Ok(flow);
            }
            if last && frame.declared != 0 && frame.produced != frame.declared {
                return Err(DecodeError::LengthMismatch {
                    declared: frame.declared,
                    actual: frame.produced,
                });
            }
        }
        Ok(Flow::Go)
    }

    /// The consumer ignores all the frame has still to produce (and there is some).
    fn rest_ignored<F: Plain>(frame: &Frame, emit: &F) -> bool {
        let rest = frame.declared.saturating_sub(frame.produced);
        rest > 0 && emit.ignorable() >= rest
    }

    /// The rest of the frame's output is skipped: the consumer is told, the frame's decoder
    /// state dropped, and its remaining payload passed over.
    fn skip_rest<F: Plain>(&mut self, frame: &mut Frame, emit: &mut F) -> Flow {
        if frame.skipping {
            return Flow::Go;
        }
        frame.skipping = true;
        let rest = frame.declared.saturating_sub(frame.produced);
        frame.produced = frame.declared;
        self.zstd.input.clear();
        self.zstd.decoder = None;
        Flow::from(emit.skipped(rest))
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
            skipping: false,
        });
        Ok(())
    }

    /// Inflates `input` (all of the frame's payload that is here; `last`: its end is too):
    /// how many of its bytes were used (fewer than all only when the budget ran out) and how
    /// the step ended.
    fn inflate<F>(
        &mut self,
        input: &[u8],
        last: bool,
        frame: &mut Frame,
        budget: &mut usize,
        emit: &mut F,
    ) -> Result<(usize, Flow), DecodeError>
    where
        F: Plain,
    {
        let Some(z) = self.zlib.as_deref_mut() else {
            return Err(DecodeError::Zlib);
        };
        let mut rest = input;
        loop {
            let (in_before, out_before) = (z.total_in(), z.total_out());
            let status = z
                .decompress(rest, &mut self.out, flate2::FlushDecompress::None)
                .map_err(|_| DecodeError::Zlib)?;
            let consumed = (z.total_in() - in_before) as usize;
            let produced = (z.total_out() - out_before) as usize;
            rest = rest.get(consumed..).unwrap_or_default();
            if produced > 0 {
                frame.produced += produced;
                if frame.produced > frame.declared {
                    return Err(DecodeError::TooLong {
                        declared: frame.declared,
                    });
                }
                *budget = budget.saturating_sub(produced);
                if emit.bytes(&self.out[..produced]).is_break() {
                    return Ok((input.len() - rest.len(), Flow::Stop));
                }
                if Self::rest_ignored(frame, emit) {
                    return Ok((input.len() - rest.len(), Flow::Skip));
                }
            }
            if status == flate2::Status::StreamEnd {
                if !rest.is_empty() || !last {
                    return Err(DecodeError::TrailingBytes);
                }
                return Ok((input.len(), Flow::Go));
            }
            if consumed == 0 && produced == 0 {
                // Needs more input. At the frame's end that means the stream was cut short,
                // which the length check reports (or the stream never ended).
                if last {
                    return Err(DecodeError::Zlib);
                }
                return Ok((input.len(), Flow::Go));
            }
            if *budget == 0 {
                // After progress only, so a caller that resumes always gets further.
                return Ok((input.len() - rest.len(), Flow::Pause));
            }
        }
    }

    /// Like [`Decompressor::inflate`] for zstd, which keeps its input itself (all is used).
    fn unzstd<F>(
        &mut self,
        input: &[u8],
        last: bool,
        frame: &mut Frame,
        budget: &mut usize,
        emit: &mut F,
    ) -> Result<(usize, Flow), DecodeError>
    where
        F: Plain,
    {
        let used = input.len();
        let zstd = &mut self.zstd;
        zstd.input.extend_from_slice(input);
        if zstd.decoder.is_none() && zstd.input.len() < ZSTD_MAX_FRAME_HEADER && !last {
            return Ok((used, Flow::Go));
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
                *budget = budget.saturating_sub(written);
                if emit.bytes(&self.out[..written]).is_break() {
                    return Ok((used, Flow::Stop));
                }
                if Self::rest_ignored(frame, emit) {
                    return Ok((used, Flow::Skip));
                }
            }
            if consumed == 0 && written == 0 {
                break;
            }
            if *budget == 0 {
                return Ok((used, Flow::Pause));
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
        Ok((used, Flow::Go))
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

#[cfg(test)]
#[path = "compress_skip_tests.rs"]
mod skip_tests;
