//! Reading structure (options, chunk boundaries, directions) out of a fuzzer's bytes. Running
//! out of bytes is never an error: every read has a default, so every input is valid.

/// A cursor over a fuzz input.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// The next byte, or 0 at the end.
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes as a little-endian number (missing bytes read as 0).
    pub fn u16(&mut self) -> u16 {
        u16::from(self.byte()) | u16::from(self.byte()) << 8
    }

    /// The next eight bytes as a little-endian number (missing bytes read as 0).
    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, i| acc | u64::from(self.byte()) << (8 * i))
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Chunk lengths for splitting a byte stream: a count byte (0..=15) and that many length
    /// bytes (each 1..=256), used in turn. No lengths: one chunk.
    pub fn cuts(&mut self) -> Vec<usize> {
        let n = usize::from(self.byte() % 16);
        self.take(n).iter().map(|&b| usize::from(b) + 1).collect()
    }
}

/// `data` split into chunks whose lengths cycle through `cuts` (one chunk when empty).
pub(super) fn chunks<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    if cuts.is_empty() {
        return vec![data];
    }
    let mut out = Vec::new();
    let mut rest = data;
    for &len in cuts.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at(len.min(rest.len()));
        out.push(head);
        rest = tail;
    }
    out
}

/// An in-memory reader handing out `pieces` one read at a time (as a socket would), then end
/// of file. Never pending.
pub(super) struct Pieces<'a>(std::collections::VecDeque<&'a [u8]>);

impl<'a> Pieces<'a> {
    pub(super) fn new(pieces: &[&'a [u8]]) -> Self {
        Pieces(pieces.iter().copied().filter(|p| !p.is_empty()).collect())
    }
}

impl tokio::io::AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if let Some(front) = self.0.front_mut() {
            let n = buf.remaining().min(front.len());
            buf.put_slice(&front[..n]);
            *front = &front[n..];
            if front.is_empty() {
                self.0.pop_front();
            }
        }
        std::task::Poll::Ready(Ok(()))
    }
}

/// Polls a future over [`Pieces`] to its end (it never waits on anything).
pub(super) fn poll_once<F: std::future::Future>(fut: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("an in-memory read is never pending"),
    }
}
