//! Free loopback ports.

use std::io;
use std::net::TcpListener;

/// A port the kernel says is free on 127.0.0.1 now. Racy by nature (another process may take
/// it before the caller binds it): callers that start a server retry with a new one.
pub fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_free_port_can_be_bound() {
        let port = super::free_port().unwrap();
        assert_ne!(port, 0);
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    }
}
