//! The harness's own checks: the namespaces reach each other, the root namespace and its
//! loopback through the forwarders; a wrapped process keeps its id and gets its host name; and
//! nothing is left after the drop.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};

use super::*;

/// Accepts one connection on `listener` and answers it with `reply`. The listener is closed
/// before the answer, so once the reader sees the end of it the address is free to bind again.
fn answer_once(listener: TcpListener, reply: &'static [u8]) {
    std::thread::spawn(move || {
        let accepted = listener.accept();
        drop(listener);
        if let Ok((mut stream, _)) = accepted {
            let _ = stream.write_all(reply);
        }
    });
}

fn read_all(mut stream: TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    bytes
}

#[test]
fn namespaces_reach_each_other_the_root_s_loopback_and_leave_nothing_behind() {
    // A "broker" on the root namespace's loopback.
    let broker = TcpListener::bind("127.0.0.1:0").unwrap();
    let broker_addr = broker.local_addr().unwrap();
    let Some(network) = Network::for_test("netns harness", 2, &broker_addr.to_string()) else {
        return;
    };
    let (a, b) = (&network.namespaces()[0], &network.namespaces()[1]);

    // Namespace a's loopback reaches the broker through its forwarder.
    answer_once(broker, b"broker");
    assert_eq!(read_all(a.connect(broker_addr).unwrap()), b"broker");

    // A listener on a's address is reached from b and from the root namespace; one on a's
    // loopback is not reached from b's loopback.
    let on_a = a.bind(SocketAddr::new(a.address().into(), 0)).unwrap();
    let addr = on_a.local_addr().unwrap();
    answer_once(on_a, b"a");
    assert_eq!(read_all(b.connect(addr).unwrap()), b"a");
    let on_a = a.bind(addr).unwrap();
    answer_once(on_a, b"a again");
    assert_eq!(read_all(TcpStream::connect(addr).unwrap()), b"a again");
    let loopback = a.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let refused = b.connect(loopback.local_addr().unwrap()).unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
    drop(loopback);

    // The gateway is reached from a namespace.
    let on_gateway = TcpListener::bind((network.gateway(), 0)).unwrap();
    let gateway_addr = on_gateway.local_addr().unwrap();
    answer_once(on_gateway, b"root");
    assert_eq!(read_all(a.connect(gateway_addr).unwrap()), b"root");

    // A wrapped process has the program's id, the host name and the namespace's address.
    let wrapper = a.wrapper("shared-name");
    let child = Command::new(&wrapper[0])
        .args(&wrapper[1..])
        .args([
            "sh",
            "-c",
            "echo $$; cat /proc/sys/kernel/hostname; ip -4 -o addr show eth0",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some(pid.to_string().as_str()), "{stdout}");
    assert_eq!(lines.next(), Some("shared-name"), "{stdout}");
    assert!(
        lines
            .next()
            .is_some_and(|l| l.contains(&a.address().to_string())),
        "{stdout}"
    );

    let (names, bridge) = (
        network
            .namespaces()
            .iter()
            .map(|n| n.name().to_owned())
            .collect::<Vec<_>>(),
        network.bridge().to_owned(),
    );
    drop(network);
    let list = ip(&["netns", "list"]).unwrap();
    assert!(names.iter().all(|n| !list.contains(n.as_str())), "{list}");
    let links = ip(&["-o", "link", "show"]).unwrap();
    assert!(!links.contains(&bridge), "{links}");
}
