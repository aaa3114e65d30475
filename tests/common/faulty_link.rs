//! A point-to-point link between two [`Netns`] hosts, shaped in user space because this
//! kernel has no netem qdisc: each host gets a TUN device, and threads of the test process
//! move the raw IP packets from one to the other with a delay, random loss and reordering,
//! or drop them all while the link is "down". TCP stays end to end between the hosts, so
//! losses and reordering are real ones that the kernels must recover from.
//!
//! Each direction has a reader (TUN -> queue ordered by release time) and a writer (queue ->
//! the other TUN when the packet's time has come).

use super::netns::Netns;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the link treats packets (both directions alike).
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    /// One-way delay added to every packet (the round trip gains twice this).
    pub delay: Duration,
    /// Probability that a packet is dropped.
    pub loss: f64,
    /// Probability that a packet is held back an extra `reorder_by`, letting later ones pass.
    pub reorder: f64,
    pub reorder_by: Duration,
    /// Bandwidth in bytes per second, 0 for unlimited. Packets beyond [`QUEUE_LIMIT`]
    /// waiting for their turn are dropped (tail drop, counted as `lost`), as a router would.
    pub rate: u64,
}

/// Packet counts since the link was made, both directions together.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkStats {
    pub forwarded: u64,
    pub lost: u64,
    /// Dropped because the link was down.
    pub cut: u64,
    /// Delivered after a packet that arrived later than it.
    pub reordered: u64,
}

#[derive(Default)]
struct Counters {
    forwarded: AtomicU64,
    lost: AtomicU64,
    cut: AtomicU64,
    reordered: AtomicU64,
}

struct Queued {
    release: Instant,
    seq: u64,
    packet: Vec<u8>,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.release, self.seq) == (o.release, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.release, self.seq).cmp(&(o.release, o.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: Mutex<BinaryHeap<Reverse<Queued>>>,
    ready: Condvar,
}

struct State {
    shape: Mutex<Shape>,
    down: AtomicBool,
    stop: AtomicBool,
    counters: Counters,
    queues: [Queue; 2],
}

pub struct FaultyLink {
    state: Arc<State>,
    threads: Vec<JoinHandle<()>>,
    ip_a: Ipv4Addr,
    ip_b: Ipv4Addr,
}

/// Readers wake this often to notice `stop`.
const POLL_MS: i32 = 50;
/// Bigger than any MTU we set.
const MAX_PACKET: usize = 65_536;
/// Packets a direction holds at most (a router's buffer); more are dropped.
pub const QUEUE_LIMIT: usize = 4096;

impl FaultyLink {
    /// Joins `a` and `b` with a new link shaped by `shape`. Each link gets its own /30 in
    /// 10.77.0.0/16 (private to the two namespaces), so one host can have several links
    /// (a database host serving several probe hosts).
    pub fn connect(a: &Netns, b: &Netns, shape: Shape) -> io::Result<FaultyLink> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = 0x0a4d_0000 + (k % 16_384) * 4;
        let (ip_a, ip_b) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
        let name = format!("fl{k}");
        let tun_a = Arc::new(a.open_tun(&name)?);
        let tun_b = Arc::new(b.open_tun(&name)?);
        for (ns, me, peer) in [(a, ip_a, ip_b), (b, ip_b, ip_a)] {
            let (me, peer) = (me.to_string(), format!("{peer}/32"));
            ns.ip(&["addr", "add", &me, "peer", &peer, "dev", &name])?;
            ns.ip(&["link", "set", &name, "up"])?;
        }
        let state = Arc::new(State {
            shape: Mutex::new(shape),
            down: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            counters: Counters::default(),
            queues: [Queue::default(), Queue::default()],
        });
        let mut threads = Vec::new();
        for (dir, from, to) in [(0, &tun_a, &tun_b), (1, &tun_b, &tun_a)] {
            let (st, from) = (state.clone(), from.clone());
            let seed = 0x9E37_79B9_7F4A_7C15 ^ (u64::from(k) << 8 | dir as u64);
            threads.push(std::thread::spawn(move || read_side(&st, dir, &from, seed)));
            let (st, to) = (state.clone(), to.clone());
            threads.push(std::thread::spawn(move || write_side(&st, dir, &to)));
        }
        Ok(FaultyLink {
            state,
            threads,
            ip_a,
            ip_b,
        })
    }

    /// Host `a`'s address on this link (what `b` connects to).
    pub fn ip_a(&self) -> Ipv4Addr {
        self.ip_a
    }

    /// Host `b`'s address on this link (what `a` connects to).
    pub fn ip_b(&self) -> Ipv4Addr {
        self.ip_b
    }

    pub fn set_shape(&self, shape: Shape) {
        *self.state.shape.lock().expect("shape lock") = shape;
    }

    /// Drops every packet, queued ones included, until [`FaultyLink::up`].
    pub fn down(&self) {
        self.state.down.store(true, Ordering::SeqCst);
        for q in &self.state.queues {
            let mut heap = q.heap.lock().expect("queue lock");
            let n = heap.len() as u64;
            heap.clear();
            self.state.counters.cut.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn up(&self) {
        self.state.down.store(false, Ordering::SeqCst);
    }

    pub fn stats(&self) -> LinkStats {
        let c = &self.state.counters;
        LinkStats {
            forwarded: c.forwarded.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
            cut: c.cut.load(Ordering::Relaxed),
            reordered: c.reordered.load(Ordering::Relaxed),
        }
    }
}

impl Drop for FaultyLink {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        for q in &self.state.queues {
            q.ready.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // The TUN devices disappear with their last file descriptor, held by the threads.
    }
}

/// xorshift64*: uniform in [0, 1).
fn uniform(s: &mut u64) -> f64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

fn readable(file: &File) -> bool {
    let mut pfd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for a descriptor we hold open.
    unsafe { libc::poll(&mut pfd, 1, POLL_MS) > 0 }
}

fn read_side(st: &State, dir: usize, mut from: &File, mut seed: u64) {
    let queue = &st.queues[dir];
    let mut buf = vec![0u8; MAX_PACKET];
    let mut seq = 0u64;
    // When the link is busy sending earlier packets (a bandwidth limit), the next may start.
    let mut link_free = Instant::now();
    while !st.stop.load(Ordering::SeqCst) {
        if !readable(from) {
            continue;
        }
        let n = match from.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return, // the device is gone
        };
        let c = &st.counters;
        if st.down.load(Ordering::SeqCst) {
            c.cut.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let shape = *st.shape.lock().expect("shape lock");
        if uniform(&mut seed) < shape.loss {
            c.lost.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let now = Instant::now();
        // Rate 0 (unlimited): the packet leaves at once.
        let sent = match (n as u64 * 1_000_000_000).checked_div(shape.rate) {
            Some(ns) => link_free.max(now) + Duration::from_nanos(ns),
            None => now,
        };
        let mut release = sent + shape.delay;
        if uniform(&mut seed) < shape.reorder {
            release += shape.reorder_by;
        }
        let mut heap = queue.heap.lock().expect("queue lock");
        if heap.len() >= QUEUE_LIMIT {
            c.lost.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        link_free = sent;
        seq += 1;
        heap.push(Reverse(Queued {
            release,
            seq,
            packet: buf[..n].to_vec(),
        }));
        drop(heap);
        queue.ready.notify_one();
    }
}

fn write_side(st: &State, dir: usize, mut to: &File) {
    let queue = &st.queues[dir];
    let mut last_seq = 0u64;
    let mut heap = queue.heap.lock().expect("queue lock");
    while !st.stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        let wait = match heap.peek() {
            None => Duration::from_millis(POLL_MS as u64),
            Some(Reverse(top)) if top.release > now => top.release - now,
            Some(_) => {
                let Some(Reverse(item)) = heap.pop() else {
                    continue;
                };
                drop(heap);
                let c = &st.counters;
                if st.down.load(Ordering::SeqCst) {
                    c.cut.fetch_add(1, Ordering::Relaxed);
                } else if matches!(to.write(&item.packet), Ok(n) if n == item.packet.len()) {
                    c.forwarded.fetch_add(1, Ordering::Relaxed);
                    if item.seq < last_seq {
                        c.reordered.fetch_add(1, Ordering::Relaxed);
                    }
                    last_seq = last_seq.max(item.seq);
                }
                heap = queue.heap.lock().expect("queue lock");
                continue;
            }
        };
        heap = queue.ready.wait_timeout(heap, wait).expect("queue lock").0;
    }
}
