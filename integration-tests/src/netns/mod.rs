//! # Hosts of their own: worker processes in Linux network namespaces
//!
//! [`Network`] makes, in the root network namespace, a bridge with an address of a `/24` of its
//! own, and `n` network namespaces on it — each a host: a veth pair with one end on the bridge,
//! the other in the namespace with the next address of the subnet, its loopback up, and a
//! default route through the bridge. Workers started in a [`Namespace`] get a host name of
//! their own too (a UTS namespace), so that several can share one name, as pods of two
//! clusters or containers on two machines do.
//!
//! ```text
//!  root namespace                          namespace kroupier-<pid>-<n>-<i>
//!  broker 127.0.0.1:P  <── forwarder ───  listener 127.0.0.1:P  <── worker (host name H)
//!  bridge 10.a.b.1/24  ─────── veth ────  10.a.b.(i+2)/24, default route via 10.a.b.1
//! ```
//!
//! The broker the tests use listens on the root namespace's loopback and advertises that
//! address, which a namespace's loopback does not reach. So [`Network::forward`] listens on
//! the same address inside every namespace and forwards each connection to the broker from the
//! root namespace (a [`Forwarder`]: the listener is made on a thread that entered the
//! namespace, `setns(2)`, and a socket keeps the namespace it was made in). A broker on a
//! non-loopback address of this machine needs nothing: the namespaces reach it through the
//! bridge.
//!
//! Everything is removed when the [`Network`] is dropped, also when a test panics — drop it
//! after the workers (declare it first). Networks left behind by a test process that was killed
//! are removed by the next one. Subnets and names are unique per test process and network, so
//! the tests of one binary run in parallel.
//!
//! Needs root and the `ip` (iproute2), `unshare` and `hostname` commands. [`Network::for_test`]
//! skips a test when namespaces cannot be made, or fails it in CI.

mod forward;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::time::Duration;

use nix::sched::{CloneFlags, setns};

pub use forward::Forwarder;

use crate::kafka_required;
use crate::quickstart::{Group, Worker};

/// Where `ip netns add` keeps its namespaces.
const NETNS_DIR: &str = "/var/run/netns";
/// How long [`Namespace::connect`] waits.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The most namespaces one network holds (addresses `.2` ..).
pub const MAX_HOSTS: usize = 200;

/// The next network number of this process.
static NEXT: AtomicU32 = AtomicU32::new(0);
/// One network is set up at a time in a process (the choice of a free subnet).
static SETUP: Mutex<()> = Mutex::new(());
/// The networks of killed test processes are removed once per process.
static SWEEP: Once = Once::new();

/// A bridge and namespaces on it, removed when dropped.
#[derive(Debug)]
pub struct Network {
    bridge: String,
    gateway: Ipv4Addr,
    namespaces: Vec<Namespace>,
    forwarders: Vec<Forwarder>,
}

/// One network namespace of a [`Network`]: a host.
#[derive(Debug)]
pub struct Namespace {
    name: String,
    address: Ipv4Addr,
    /// The veth's end on the bridge, in the root namespace.
    veth: String,
}

impl Network {
    /// A network of `hosts` namespaces whose loopbacks reach the broker at `bootstrap`
    /// ([`Network::forward`]), or `None` after one `SKIP` line when namespaces cannot be made
    /// here (not root, no `ip`).
    ///
    /// # Panics
    /// When namespaces cannot be made but the run requires them (`CI=true` or
    /// `KROUPIER_REQUIRE_KAFKA=1`, as [`kafka_required`]): in CI a skipped test must never look
    /// like a passing one.
    pub fn for_test(test: &str, hosts: usize, bootstrap: &str) -> Option<Network> {
        let made = Network::new(hosts).and_then(|mut network| {
            network.forward(bootstrap)?;
            Ok(network)
        });
        match made {
            Ok(network) => Some(network),
            Err(e) if kafka_required() => panic!(
                "{test}: network namespaces are required (CI=true or KROUPIER_REQUIRE_KAFKA=1) \
                 but cannot be made: {e}; run the tests as root with iproute2 installed"
            ),
            Err(e) => {
                eprintln!(
                    "SKIP {test}: network namespaces cannot be made here ({e}); run as root \
                     with iproute2"
                );
                None
            }
        }
    }

    /// A bridge on a free `10.a.b.0/24` and `hosts` namespaces on it.
    ///
    /// # Errors
    /// When an `ip` command fails (not root, no iproute2) or no free subnet is found; what
    /// was made by then is removed.
    pub fn new(hosts: usize) -> io::Result<Network> {
        assert!(hosts <= MAX_HOSTS, "at most {MAX_HOSTS} hosts per network");
        let _setup = SETUP.lock().unwrap_or_else(PoisonError::into_inner);
        SWEEP.call_once(sweep_stale);
        let pid = std::process::id();
        let (n, [a, b]) = free_subnet(pid)?;
        let mut network = Network {
            bridge: String::new(),
            gateway: Ipv4Addr::new(10, a, b, 1),
            namespaces: Vec::with_capacity(hosts),
            forwarders: Vec::new(),
        };
        let bridge = format!("kb{pid:x}n{n}");
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        network.bridge.clone_from(&bridge);
        ip(&[
            "addr",
            "add",
            &format!("{}/24", network.gateway),
            "dev",
            &bridge,
        ])?;
        ip(&["link", "set", &bridge, "up"])?;
        for i in 0..hosts {
            let namespace = Namespace {
                name: format!("kroupier-{pid}-{n}-{i}"),
                address: Ipv4Addr::new(10, a, b, u8::try_from(i + 2).expect("at most 200")),
                veth: format!("kv{pid:x}n{n}v{i}"),
            };
            let peer = format!("kp{pid:x}n{n}v{i}");
            ip(&["netns", "add", &namespace.name])?;
            let (name, veth) = (namespace.name.clone(), namespace.veth.clone());
            network.namespaces.push(namespace);
            ip(&["link", "add", &veth, "type", "veth", "peer", "name", &peer])?;
            ip(&["link", "set", &veth, "master", &bridge, "up"])?;
            ip(&["link", "set", &peer, "netns", &name])?;
            ip(&["-n", &name, "link", "set", &peer, "name", "eth0"])?;
            let address = format!("{}/24", network.namespaces[i].address);
            ip(&["-n", &name, "addr", "add", &address, "dev", "eth0"])?;
            ip(&["-n", &name, "link", "set", "eth0", "up"])?;
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
            let gateway = network.gateway.to_string();
            ip(&["-n", &name, "route", "add", "default", "via", &gateway])?;
        }
        Ok(network)
    }

    /// Makes every loopback address of `bootstrap` (`host:port[,host:port...]`) reach the
    /// root namespace's in every namespace: a [`Forwarder`] listening on that address inside
    /// each namespace. Other addresses of this machine need nothing.
    ///
    /// # Errors
    /// When an address does not resolve, or a listener cannot be made.
    pub fn forward(&mut self, bootstrap: &str) -> io::Result<()> {
        for server in bootstrap
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let addrs: Vec<SocketAddr> = server.to_socket_addrs()?.collect();
            // The first IPv4 address is the one a client dials (a broker listens on one).
            let Some(addr) = addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()) else {
                return Err(io::Error::other(format!("{server} does not resolve")));
            };
            if !addr.ip().is_loopback() {
                continue;
            }
            for namespace in &self.namespaces {
                let listener = namespace.bind(*addr)?;
                self.forwarders.push(Forwarder::start(listener, *addr)?);
            }
        }
        Ok(())
    }

    /// The namespaces, in order (addresses `.2`, `.3`, ..).
    pub fn namespaces(&self) -> &[Namespace] {
        &self.namespaces
    }

    /// The bridge's address in the root namespace: every namespace reaches it, and the root
    /// namespace reaches every namespace's address.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    /// The bridge's name.
    pub fn bridge(&self) -> &str {
        &self.bridge
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        // Sockets keep their namespace alive: close the forwarders' first.
        self.forwarders.clear();
        for namespace in &self.namespaces {
            let _ = ip(&["netns", "delete", &namespace.name]);
            // Deleting one end deletes the pair, even while a process keeps the namespace.
            let _ = ip(&["link", "delete", &namespace.veth]);
        }
        if !self.bridge.is_empty() {
            let _ = ip(&["link", "delete", &self.bridge]);
        }
    }
}

impl Namespace {
    /// Its name (`ip netns exec NAME ...`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its address on the bridge.
    pub fn address(&self) -> Ipv4Addr {
        self.address
    }

    /// Runs `f` on a thread inside this namespace: the sockets it makes belong to the
    /// namespace, and keep it after the thread ends.
    ///
    /// # Errors
    /// When the namespace cannot be entered.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        let path = Path::new(NETNS_DIR).join(&self.name);
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let file = File::open(&path)?;
                    setns(&file, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
                    Ok(f())
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// A listener on `addr` inside this namespace.
    ///
    /// # Errors
    /// When the namespace cannot be entered or the address cannot be bound.
    pub fn bind(&self, addr: SocketAddr) -> io::Result<TcpListener> {
        self.run(|| TcpListener::bind(addr))?
    }

    /// A connection to `addr` made from inside this namespace (to a worker's loopback status
    /// API, say).
    ///
    /// # Errors
    /// When the namespace cannot be entered or the connection fails.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        self.run(|| TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT))?
    }

    /// A port free on this namespace's address right now, to give a worker a status address
    /// known before it starts.
    ///
    /// # Errors
    /// When the namespace cannot be entered.
    pub fn free_port(&self) -> io::Result<u16> {
        let listener = self.bind(SocketAddr::new(IpAddr::V4(self.address), 0))?;
        Ok(listener.local_addr()?.port())
    }

    /// The command that runs a program in this namespace under the host name `host_name`:
    /// `ip netns exec NAME unshare --uts -- sh -c 'hostname "$0" && exec "$@"' HOST`, then
    /// the program and its arguments. Each part executes the next, so the process id is the
    /// program's (see [`Group::wrapper`]).
    pub fn wrapper(&self, host_name: &str) -> Vec<String> {
        [
            "ip",
            "netns",
            "exec",
            &self.name,
            "unshare",
            "--uts",
            "--",
            "sh",
            "-c",
            r#"hostname "$0" && exec "$@""#,
            host_name,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Starts worker `id` of `group` in this namespace, its host name `host_name`, and waits
    /// for its `started` line ([`Group::start`]).
    pub fn start(&self, group: &Group, host_name: &str, id: &str) -> Worker {
        let mut group = group.clone();
        group.wrapper = self.wrapper(host_name);
        group.start(id)
    }
}

/// Runs `ip args...`: its stdout, or what it said on stderr.
fn ip(args: &[&str]) -> io::Result<String> {
    let output = Command::new("ip").args(args).output()?;
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The next network number of this process and a `10.a.b.0/24` no interface here uses. The
/// subnets of one process start apart from other processes' (by process id).
fn free_subnet(pid: u32) -> io::Result<(u32, [u8; 2])> {
    for _ in 0..64 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let index = (pid % 1024) * 64 + n % 64;
        let [_, _, a, b] = index.to_be_bytes();
        let subnet = format!("10.{a}.{b}.0/24");
        if ip(&["-4", "-o", "addr", "show", "to", &subnet])?
            .trim()
            .is_empty()
        {
            return Ok((n, [a, b]));
        }
    }
    Err(io::Error::other("no free 10.a.b.0/24 subnet"))
}

/// Removes the namespaces, bridges and veths of test processes that no longer run (killed
/// before their [`Network`] was dropped).
fn sweep_stale() {
    let gone = |pid: u32| !Path::new(&format!("/proc/{pid}")).exists();
    if let Ok(list) = ip(&["netns", "list"]) {
        for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
            let pid = name
                .strip_prefix("kroupier-")
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse().ok());
            if pid.is_some_and(gone) {
                let _ = ip(&["netns", "delete", name]);
            }
        }
    }
    if let Ok(links) = ip(&["-o", "link", "show"]) {
        for line in links.lines() {
            // `7: kb1f2an0: <BROADCAST,...` or `8: kv1f2an0v0@if2: ...`
            let Some(name) = line.split(": ").nth(1).and_then(|n| n.split('@').next()) else {
                continue;
            };
            let pid = ["kb", "kv"]
                .iter()
                .find_map(|prefix| name.strip_prefix(prefix))
                .and_then(|rest| rest.split_once('n'))
                .and_then(|(pid, _)| u32::from_str_radix(pid, 16).ok());
            if pid.is_some_and(gone) {
                let _ = ip(&["link", "delete", name]);
            }
        }
    }
}
