//! `bare-relay`: the lower bound of what any TCP relay costs on this machine, as a benchmark
//! target beside HAProxy and psprobe (`scripts/bench.sh --bare-relay`).
//!
//! It forwards bytes both ways and does nothing else: no parsing, no timing, no metrics. It
//! uses io_uring (one ring and one `SO_REUSEPORT` listener per thread, a receive always
//! posted on both sides of each connection, completions reaped in batches), so it makes fewer
//! kernel crossings than a readiness-based relay (HAProxy, tokio) can. What it spends per
//! query is then almost all the kernel's own TCP work over loopback, which every relay pays:
//! a target below its CPU per query is below what relaying costs here.
//!
//! Not a proxy to deploy: the upstream connect is blocking (loopback, benchmark only), a
//! connection's two sides share one 32 KiB buffer each way, and it stops only when killed.

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::thread;

use anyhow::{bail, Context, Result};
use io_uring::{opcode, squeue, types, IoUring};

#[derive(clap::Args)]
pub struct Args {
    /// Port to accept clients on (127.0.0.1); 0 picks a free one (printed).
    #[arg(long, default_value_t = 0)]
    listen_port: u16,
    /// The server's port (127.0.0.1).
    #[arg(long)]
    upstream_port: u16,
    /// Relay threads, each with its own ring and listener [default: the number of CPUs, as
    /// HAProxy's nbthread and psprobe's workers in the benchmark].
    #[arg(long)]
    threads: Option<usize>,
}

/// Bytes read per direction at a time (psprobe's relay reads as much).
const BUFFER: usize = 32 * 1024;
/// Submission queue entries per ring; a connection has at most two requests in flight.
const RING_ENTRIES: u32 = 4096;

pub fn run(args: &Args) -> Result<()> {
    let threads = match args.threads {
        Some(0) => bail!("--threads must be at least 1"),
        Some(n) => n,
        None => thread::available_parallelism().map_or(2, |n| n.get()),
    };
    // Every thread's listener is bound before any serves, so a failure shows here, once.
    let first = reuseport_listener(args.listen_port)
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.listen_port))?;
    let port = first
        .local_addr()
        .context("reading the listener's port")?
        .port();
    let mut listeners = vec![first];
    for _ in 1..threads {
        listeners.push(
            reuseport_listener(port)
                .with_context(|| format!("cannot add a listener on 127.0.0.1:{port}"))?,
        );
    }
    let mut rings = Vec::with_capacity(threads);
    for _ in 0..threads {
        rings.push(
            IoUring::new(RING_ENTRIES).context(
                "cannot set up io_uring (kernel.io_uring_disabled, or a seccomp filter?)",
            )?,
        );
    }
    println!("bare-relay listening 127.0.0.1:{port} threads={threads}");
    let upstream = SocketAddrV4::new(Ipv4Addr::LOCALHOST, args.upstream_port);
    let workers: Vec<_> = listeners
        .into_iter()
        .zip(rings)
        .map(|(listener, ring)| {
            thread::spawn(move || Worker::new(ring, listener, upstream).serve())
        })
        .collect();
    for worker in workers {
        match worker.join() {
            Ok(result) => result?,
            Err(_) => bail!("a relay thread panicked"),
        }
    }
    Ok(())
}

fn reuseport_listener(port: u16) -> io::Result<TcpListener> {
    // SAFETY: plain socket calls on a descriptor this function owns; it is wrapped in an
    // OwnedFd at once so every early return closes it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let owned = OwnedFd::from_raw_fd(fd);
        set_int_option(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT)?;
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(Ipv4Addr::LOCALHOST.octets()),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of_val(&addr) as libc::socklen_t;
        if libc::bind(fd, std::ptr::addr_of!(addr).cast(), len) != 0 || libc::listen(fd, 4096) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(TcpListener::from(owned))
    }
}

fn set_int_option(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` outlives the call and its size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            std::ptr::addr_of!(one).cast(),
            std::mem::size_of_val(&one) as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Accept = 1,
    Recv = 2,
    Send = 3,
}

/// A request's tag: the connection slot, the direction (0: client to server), the operation.
fn tag(slot: usize, dir: usize, op: Op) -> u64 {
    ((slot as u64) << 8) | ((dir as u64) << 4) | op as u64
}

fn untag(user_data: u64) -> (usize, usize, Option<Op>) {
    let op = match user_data & 0xf {
        1 => Some(Op::Accept),
        2 => Some(Op::Recv),
        3 => Some(Op::Send),
        _ => None,
    };
    (
        (user_data >> 8) as usize,
        ((user_data >> 4) & 0xf) as usize,
        op,
    )
}

/// One relayed connection: index 0 is the client, 1 the server; `buf[d]` carries direction
/// `d` (read from side `d`, written to the other).
struct Conn {
    fds: [Option<OwnedFd>; 2],
    buf: [Box<[u8]>; 2],
    filled: [usize; 2],
    sent: [usize; 2],
    /// Requests the kernel still holds for this slot: it is reused only when none is left,
    /// so a late completion never lands on another connection.
    in_flight: u32,
    closing: bool,
}

struct Worker {
    ring: IoUring,
    listener: TcpListener,
    upstream: SocketAddrV4,
    conns: Vec<Conn>,
    free: Vec<usize>,
    queue: VecDeque<squeue::Entry>,
}

impl Worker {
    fn new(ring: IoUring, listener: TcpListener, upstream: SocketAddrV4) -> Self {
        Worker {
            ring,
            listener,
            upstream,
            conns: Vec::new(),
            free: Vec::new(),
            queue: VecDeque::new(),
        }
    }

    fn serve(mut self) -> Result<()> {
        self.queue_accept();
        let mut done: Vec<(u64, i32)> = Vec::with_capacity(RING_ENTRIES as usize);
        loop {
            self.push_queued();
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("io_uring_enter failed"),
            }
            done.clear();
            done.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            for &(user_data, result) in &done {
                let (slot, dir, op) = untag(user_data);
                match op {
                    Some(Op::Accept) => self.accepted(result),
                    Some(Op::Recv) => self.received(slot, dir, result),
                    Some(Op::Send) => self.sent(slot, dir, result),
                    None => {}
                }
            }
        }
    }

    /// Moves queued requests into the ring, submitting when it is full.
    fn push_queued(&mut self) {
        while let Some(entry) = self.queue.pop_front() {
            // SAFETY: every entry points into a buffer owned by `self.conns`, which is not
            // freed or moved while the slot has requests in flight (`in_flight`).
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_err() {
                self.queue.push_front(entry);
                if self.ring.submit().is_err() {
                    return;
                }
            }
        }
    }

    fn queue_accept(&mut self) {
        let fd = types::Fd(self.listener.as_raw_fd());
        let entry = opcode::Accept::new(fd, std::ptr::null_mut(), std::ptr::null_mut())
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(tag(0, 0, Op::Accept));
        self.queue.push_back(entry);
    }

    fn accepted(&mut self, result: i32) {
        self.queue_accept();
        if result < 0 {
            return;
        }
        // SAFETY: a successful accept returns a new descriptor that nothing else owns.
        let client = unsafe { OwnedFd::from_raw_fd(result) };
        // Blocking, on loopback: a benchmark target, not a proxy to deploy.
        let Ok(server) = TcpStream::connect(self.upstream) else {
            return;
        };
        let _ = server.set_nodelay(true);
        let _ = set_int_option(client.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(Conn {
                fds: [None, None],
                buf: [vec![0; BUFFER].into(), vec![0; BUFFER].into()],
                filled: [0; 2],
                sent: [0; 2],
                in_flight: 0,
                closing: false,
            });
            self.conns.len() - 1
        });
        let conn = &mut self.conns[slot];
        conn.fds = [Some(client), Some(OwnedFd::from(server))];
        conn.closing = false;
        for dir in 0..2 {
            self.post(slot, dir, Op::Recv);
        }
    }

    /// Posts direction `dir`'s next request: a receive from its own side into its buffer,
    /// or a send of what is left of the buffer to the other side.
    fn post(&mut self, slot: usize, dir: usize, op: Op) {
        let conn = &mut self.conns[slot];
        let side = if op == Op::Send { 1 - dir } else { dir };
        let Some(fd) = conn.fds[side].as_ref().map(|f| types::Fd(f.as_raw_fd())) else {
            return;
        };
        let entry = if op == Op::Send {
            let rest = &conn.buf[dir][conn.sent[dir]..conn.filled[dir]];
            opcode::Send::new(fd, rest.as_ptr(), rest.len() as u32).build()
        } else {
            opcode::Recv::new(fd, conn.buf[dir].as_mut_ptr(), BUFFER as u32).build()
        };
        conn.in_flight += 1;
        self.queue.push_back(entry.user_data(tag(slot, dir, op)));
    }

    fn received(&mut self, slot: usize, dir: usize, result: i32) {
        if !self.finished_request(slot) {
            return;
        }
        match usize::try_from(result) {
            Ok(n) if n > 0 => {
                let conn = &mut self.conns[slot];
                conn.filled[dir] = n;
                conn.sent[dir] = 0;
                self.post(slot, dir, Op::Send);
            }
            // EOF or an error: either side gone ends the connection.
            _ => self.close(slot),
        }
    }

    fn sent(&mut self, slot: usize, dir: usize, result: i32) {
        if !self.finished_request(slot) {
            return;
        }
        match usize::try_from(result) {
            Ok(n) if n > 0 => {
                let conn = &mut self.conns[slot];
                conn.sent[dir] += n;
                if conn.sent[dir] < conn.filled[dir] {
                    self.post(slot, dir, Op::Send);
                } else {
                    self.post(slot, dir, Op::Recv);
                }
            }
            _ => self.close(slot),
        }
    }

    /// Counts a completion against its slot; false when the connection is closing (the
    /// completion only drains it).
    fn finished_request(&mut self, slot: usize) -> bool {
        let Some(conn) = self.conns.get_mut(slot) else {
            return false;
        };
        conn.in_flight = conn.in_flight.saturating_sub(1);
        if conn.closing {
            self.release_if_drained(slot);
            return false;
        }
        true
    }

    /// Shuts both sides down (which completes the request still posted on the other side),
    /// then frees the slot once the kernel holds nothing of it.
    fn close(&mut self, slot: usize) {
        let conn = &mut self.conns[slot];
        conn.closing = true;
        for fd in conn.fds.iter().flatten() {
            // SAFETY: shutting down a descriptor this connection owns.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
        }
        self.release_if_drained(slot);
    }

    fn release_if_drained(&mut self, slot: usize) {
        let conn = &mut self.conns[slot];
        if conn.in_flight == 0 && conn.fds.iter().any(Option::is_some) {
            conn.fds = [None, None];
            self.free.push(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn tags_round_trip() {
        for (slot, dir, op) in [(0, 0, Op::Accept), (7, 1, Op::Recv), (123_456, 0, Op::Send)] {
            let (s, d, o) = untag(tag(slot, dir, op));
            assert_eq!((s, d), (slot, dir));
            assert!(o == Some(op));
        }
        assert!(untag(0).2.is_none());
    }

    /// A real echo server behind the relay: bytes go through both ways, unchanged, over
    /// connections opened one after another (each closed before the next).
    #[test]
    fn relays_both_ways_over_successive_connections() {
        let echo = TcpListener::bind("127.0.0.1:0").expect("echo listener");
        let echo_port = echo.local_addr().expect("echo port").port();
        thread::spawn(move || {
            for stream in echo.incoming().flatten() {
                thread::spawn(move || {
                    let mut stream = stream;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 || stream.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let Ok(ring) = IoUring::new(64) else {
            eprintln!("io_uring unavailable here: nothing to test");
            return;
        };
        let listener = reuseport_listener(0).expect("relay listener");
        let port = listener.local_addr().expect("relay port").port();
        let upstream = SocketAddrV4::new(Ipv4Addr::LOCALHOST, echo_port);
        thread::spawn(move || Worker::new(ring, listener, upstream).serve());
        for round in 0..5u8 {
            let mut client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            let message: Vec<u8> = (0..100_000u32).map(|i| (i as u8) ^ round).collect();
            let writer = {
                let mut client = client.try_clone().expect("clone");
                let message = message.clone();
                thread::spawn(move || client.write_all(&message).expect("write"))
            };
            let mut back = vec![0u8; message.len()];
            client.read_exact(&mut back).expect("echo back");
            writer.join().expect("writer");
            assert!(back == message, "round {round}: bytes changed on the way");
        }
    }
}
