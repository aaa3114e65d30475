//! `record-traffic`: a TCP tee that records MySQL traffic for
//! crates/psprobe-core/benches/session.rs and the fuzz seeds.
//!
//! Accepts clients on 127.0.0.1:LISTEN, connects each to 127.0.0.1:UPSTREAM, forwards both
//! ways and records every chunk as it was read: 1 byte direction (b'C' client->server, b'S'
//! server->client), 4 bytes little-endian length, the bytes. The chunks are what read()
//! returned, so the session machine is fed packets split and batched the way a relay sees
//! them. Only the connection that carried the most bytes is kept (sysbench opens one per
//! thread; record with --threads=1). Stops on SIGTERM or SIGINT and then writes the file.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context, Result};

#[derive(clap::Args)]
pub struct Args {
    /// Port to accept clients on (127.0.0.1).
    #[arg(long)]
    listen_port: u16,
    /// The server's port (127.0.0.1).
    #[arg(long)]
    upstream_port: u16,
    /// The recording to write when stopped.
    #[arg(long)]
    out: PathBuf,
}

/// One connection's chunks, in the order they were read on either side.
type Recording = Arc<Mutex<Vec<(u8, Vec<u8>)>>>;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// SIGTERM and SIGINT set STOP; SA_RESTART so the relaying threads' reads go on.
fn stop_on_signals() -> Result<()> {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed sigaction with a handler that only stores an atomic.
        let ok = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut()) == 0
        };
        if !ok {
            bail!(
                "cannot install a handler for signal {signal}: {}",
                io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

pub fn run(args: &Args) -> Result<()> {
    stop_on_signals()?;
    let listener = TcpListener::bind(("127.0.0.1", args.listen_port))
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.listen_port))?;
    // Polled, so a signal is noticed within one sleep.
    listener.set_nonblocking(true)?;
    println!("recording");
    io::stdout().flush()?;

    let mut recordings: Vec<Recording> = Vec::new();
    while !STOP.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => recordings.push(relay(client, args.upstream_port)?),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(20))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("accept"),
        }
    }

    let snapshots: Vec<Vec<(u8, Vec<u8>)>> = recordings
        .iter()
        .map(|r| r.lock().unwrap_or_else(|e| e.into_inner()).clone())
        .collect();
    let bytes = |r: &Vec<(u8, Vec<u8>)>| r.iter().map(|(_, d)| d.len()).sum::<usize>();
    let Some(best) = snapshots.iter().max_by_key(|r| bytes(r)) else {
        bail!(
            "no connection was recorded (did the client connect to port {}?)",
            args.listen_port
        );
    };
    write_recording(args, best).with_context(|| format!("cannot write {}", args.out.display()))?;
    eprintln!(
        "recorded {} chunks, {} bytes (of {} connection(s)) to {}",
        best.len(),
        bytes(best),
        snapshots.len(),
        args.out.display()
    );
    Ok(())
}

/// Connects `client` to the server and starts one thread per direction.
fn relay(client: TcpStream, upstream_port: u16) -> Result<Recording> {
    client.set_nonblocking(false)?;
    let server = TcpStream::connect(("127.0.0.1", upstream_port))
        .with_context(|| format!("cannot connect to the server at 127.0.0.1:{upstream_port}"))?;
    for s in [&client, &server] {
        s.set_nodelay(true)?;
    }
    let rec = Recording::default();
    let pairs = [
        (client.try_clone()?, server.try_clone()?, b'C'),
        (server, client, b'S'),
    ];
    for (src, dst, direction) in pairs {
        let rec = Arc::clone(&rec);
        thread::spawn(move || pump(src, dst, direction, &rec));
    }
    Ok(rec)
}

/// Copies src to dst chunk by chunk, recording each chunk before forwarding it (so a reply,
/// which needs the forwarded request, is always recorded after it). At EOF or an error both
/// sockets are shut down, which ends the other direction too.
fn pump(mut src: TcpStream, mut dst: TcpStream, direction: u8, rec: &Mutex<Vec<(u8, Vec<u8>)>>) {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        rec.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((direction, buf[..n].to_vec()));
        if dst.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = src.shutdown(Shutdown::Both);
    let _ = dst.shutdown(Shutdown::Both);
}

fn write_recording(args: &Args, chunks: &[(u8, Vec<u8>)]) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(&args.out)?);
    for (direction, data) in chunks {
        out.write_all(&encode_header(*direction, data.len()))?;
        out.write_all(data)?;
    }
    out.flush()
}

/// Direction byte, then the length as u32 little-endian.
fn encode_header(direction: u8, len: usize) -> [u8; 5] {
    let l = (len as u32).to_le_bytes();
    [direction, l[0], l[1], l[2], l[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_header_is_direction_then_le_length() {
        assert_eq!(encode_header(b'C', 0x0102_0304), [b'C', 4, 3, 2, 1]);
        assert_eq!(encode_header(b'S', 5), [b'S', 5, 0, 0, 0]);
    }

    #[test]
    fn relays_both_ways_and_records_in_order() {
        // A fake server that answers each request with "ok:" + request.
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        thread::spawn(move || {
            let (mut s, _) = server.accept().unwrap();
            let mut buf = [0u8; 64];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut reply = b"ok:".to_vec();
                reply.extend_from_slice(&buf[..n]);
                s.write_all(&reply).unwrap();
            }
        });
        let tee = TcpListener::bind("127.0.0.1:0").unwrap();
        let tee_addr = tee.local_addr().unwrap();
        let mut client = TcpStream::connect(tee_addr).unwrap();
        let rec = relay(tee.accept().unwrap().0, port).unwrap();
        let mut buf = [0u8; 64];
        for request in [&b"one"[..], b"two"] {
            client.write_all(request).unwrap();
            let n = client.read(&mut buf).unwrap();
            assert_eq!(&buf[..n], [&b"ok:"[..], request].concat());
        }
        drop(client);
        let got = rec.lock().unwrap().clone();
        assert_eq!(
            got,
            [
                (b'C', b"one".to_vec()),
                (b'S', b"ok:one".to_vec()),
                (b'C', b"two".to_vec()),
                (b'S', b"ok:two".to_vec())
            ]
        );
    }
}
