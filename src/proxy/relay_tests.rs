//! The relay over real loopback sockets: every byte arrives, in order, both ways at once,
//! through a reader slow enough that writes are refused and bytes wait in the relay.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::{relay, RelayEnd};
use crate::observe::watch::Watch;
use crate::observe::Observer;

/// Connections the observer counted as no longer observed (any reason).
fn unobserved(observer: &Observer) -> usize {
    observer
        .metrics
        .render()
        .lines()
        .filter(|l| l.starts_with("psprobe_unobserved_connections_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as usize
}

async fn socket_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (connected, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    (connected.expect("connect"), accepted.expect("accept").0)
}

/// Deterministic bytes that are not a MySQL conversation (the session gives up observing
/// at once, which must not stop the forwarding).
fn noise(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

struct Wired {
    client: TcpStream,
    server: TcpStream,
    stop: watch::Sender<bool>,
    relay: tokio::task::JoinHandle<(std::io::Result<RelayEnd>, usize)>,
}

async fn wire() -> Wired {
    let (client, mut client_side) = socket_pair().await;
    let (mut server_side, server) = socket_pair().await;
    let (stop, stopped) = watch::channel(false);
    let relay = tokio::spawn(async move {
        let observer = Observer::for_tests();
        let live = observer.connections.register(([127, 0, 0, 1], 1).into());
        let mut watch = Watch::new(&observer, &live, Instant::now());
        let end = relay(&mut client_side, &mut server_side, &mut watch, stopped).await;
        drop(watch);
        drop(live);
        (end, unobserved(&observer))
    });
    Wired {
        client,
        server,
        stop,
        relay,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_directions_arrive_whole_through_a_slow_reader() {
    let Wired {
        mut client,
        mut server,
        stop: _stop,
        relay,
    } = wire().await;
    let down = noise(48 << 20, 0x9e37_79b9_7f4a_7c15);
    let up = noise(8 << 20, 0x2545_f491_4f6c_dd1d);

    let (mut client_rd, mut client_wr) = client.split();
    let (mut server_rd, mut server_wr) = server.split();
    // No half-close: once a side closes, the relay ends (MySQL peers never half-close).
    let send_up = async {
        client_wr.write_all(&up).await.expect("client write");
    };
    let send_down = async {
        server_wr.write_all(&down).await.expect("server write");
    };
    // The client reads in small bites with pauses: the socket buffers fill, the relay's
    // writes are refused, and what it read waits in its own buffer (the path under test).
    let read_down = async {
        let mut got = Vec::with_capacity(down.len());
        let mut bite = vec![0; 16 * 1024];
        while got.len() < down.len() {
            let n = client_rd.read(&mut bite).await.expect("client read");
            assert!(n > 0, "client saw EOF after {} bytes", got.len());
            got.extend_from_slice(&bite[..n]);
            if got.len() % (1 << 20) < n {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        got
    };
    let read_up = async {
        let mut got = vec![0; up.len()];
        server_rd.read_exact(&mut got).await.expect("server read");
        got
    };
    let ((), (), got_down, got_up) = tokio::join!(send_up, send_down, read_down, read_up);
    assert!(got_up == up, "client→server bytes differ");
    assert!(got_down == down, "server→client bytes differ");

    // The server hangs up: the relay ends, and says who closed.
    drop(server);
    let (end, unobserved) = relay.await.expect("relay task");
    let end = end.expect("relay result");
    assert!(
        matches!(end, RelayEnd::ServerClosed | RelayEnd::ClientClosed),
        "{end:?}"
    );
    assert_eq!(unobserved, 1, "noise is unobservable, reported once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_ends_the_relay_and_both_peers_see_eof() {
    let Wired {
        mut client,
        mut server,
        stop,
        relay,
    } = wire().await;
    client.write_all(b"ping").await.expect("write");
    let mut four = [0; 4];
    server.read_exact(&mut four).await.expect("read");
    assert_eq!(&four, b"ping");
    stop.send(true).expect("relay listens");
    let (end, _) = relay.await.expect("relay task");
    assert_eq!(end.expect("relay result"), RelayEnd::Shutdown);
    let mut rest = Vec::new();
    assert_eq!(client.read_to_end(&mut rest).await.expect("client eof"), 0);
    assert_eq!(server.read_to_end(&mut rest).await.expect("server eof"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_closing_client_sent_is_delivered() {
    let Wired {
        mut client,
        mut server,
        stop: _stop,
        relay,
    } = wire().await;
    let last = noise(4 << 20, 7);
    client.write_all(&last).await.expect("write");
    drop(client);
    let mut got = Vec::new();
    server.read_to_end(&mut got).await.expect("server read");
    assert!(got == last, "{} of {} bytes arrived", got.len(), last.len());
    // The client's close reached the server as end-of-stream (a half-close): the relay waits
    // for the server's answer until the server closes too.
    drop(server);
    let (end, _) = relay.await.expect("relay task");
    assert_eq!(end.expect("relay result"), RelayEnd::ClientClosed);
}
