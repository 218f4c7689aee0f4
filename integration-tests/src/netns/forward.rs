//! A plain TCP forwarder on threads: what it accepts on one listener it connects onward to one
//! address. The listener may live in another network namespace than the onward connections
//! (a socket keeps the namespace it was made in), which is how workers in a namespace reach a
//! broker on the root namespace's loopback, and how a test puts a proxy in front of a worker's
//! status API.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the accepting thread looks at its stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(10);
/// How long an onward connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A running forwarder. Dropping it closes its listener — new connections to it are then
/// refused — and every connection it forwarded, as when a proxy's process ends.
#[derive(Debug)]
pub struct Forwarder {
    local: SocketAddr,
    target: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Both ends of every forwarded connection, to shut them down on drop.
    streams: Arc<Mutex<Vec<TcpStream>>>,
    accept: Option<JoinHandle<()>>,
}

impl Forwarder {
    /// Forwards each connection `listener` accepts to `target`. The onward connections are made
    /// from the network namespace of the thread that calls this (threads inherit it).
    ///
    /// # Errors
    /// When the listener cannot be read or made non-blocking.
    pub fn start(listener: TcpListener, target: SocketAddr) -> io::Result<Self> {
        let local = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, streams) = (Arc::clone(&stop), Arc::clone(&streams));
            std::thread::Builder::new()
                .name(format!("forward-{local}"))
                .spawn(move || accept_loop(&listener, target, &stop, &streams))?
        };
        Ok(Forwarder {
            local,
            target,
            stop,
            streams,
            accept: Some(accept),
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Where it forwards to.
    pub fn target(&self) -> SocketAddr {
        self.target
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accepting thread owns the listener: once it returns, the port refuses.
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let streams =
            std::mem::take(&mut *self.streams.lock().unwrap_or_else(PoisonError::into_inner));
        for stream in streams {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(
    listener: &TcpListener,
    target: SocketAddr,
    stop: &AtomicBool,
    streams: &Mutex<Vec<TcpStream>>,
) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((inbound, _)) => {
                // A target that cannot be reached: the inbound connection closes (dropped).
                if let Err(e) = forward(inbound, target, streams) {
                    eprintln!("forwarder to {target}: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(e) => {
                eprintln!("forwarder to {target}: accept: {e}");
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
}

/// Connects onward and copies both ways on two threads until either side closes.
fn forward(
    inbound: TcpStream,
    target: SocketAddr,
    streams: &Mutex<Vec<TcpStream>>,
) -> io::Result<()> {
    inbound.set_nonblocking(false)?;
    let outbound = TcpStream::connect_timeout(&target, CONNECT_TIMEOUT)?;
    inbound.set_nodelay(true)?;
    outbound.set_nodelay(true)?;
    {
        let mut streams = streams.lock().unwrap_or_else(PoisonError::into_inner);
        streams.push(inbound.try_clone()?);
        streams.push(outbound.try_clone()?);
    }
    let (inbound_reader, outbound_reader) = (inbound.try_clone()?, outbound.try_clone()?);
    std::thread::Builder::new()
        .name(format!("forward-up-{target}"))
        .spawn(move || copy(inbound_reader, outbound))?;
    std::thread::Builder::new()
        .name(format!("forward-down-{target}"))
        .spawn(move || copy(outbound_reader, inbound))?;
    Ok(())
}

/// Copies `from` into `to` until `from` ends, then ends `to`'s writing side.
fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn bytes_go_both_ways_and_a_dropped_forwarder_refuses() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let target = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = echo.accept().unwrap();
            let mut buf = [0u8; 5];
            stream.read_exact(&mut buf).unwrap();
            stream.write_all(&buf).unwrap();
            // It keeps the connection open until the forwarder closes it.
            let _ = stream.read(&mut buf);
        });
        // On an address of its own: a port freed by the drop below may be taken at once by a
        // test binding 127.0.0.1:0 in parallel, and must not answer for the forwarder.
        let forwarder =
            Forwarder::start(TcpListener::bind("127.0.0.99:0").unwrap(), target).unwrap();
        let addr = forwarder.local_addr();
        let mut client = TcpStream::connect(addr).unwrap();
        client.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        client.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hello");

        drop(forwarder);
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        if let Err(e) = client.read_to_end(&mut Vec::new()) {
            assert_ne!(
                e.kind(),
                io::ErrorKind::WouldBlock,
                "the forwarder closed it"
            );
        }
        let refused = TcpStream::connect(addr).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
    }
}
