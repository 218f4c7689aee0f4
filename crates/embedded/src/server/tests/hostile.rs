//! Hostile input closes only the offending connection; the server keeps serving everyone else.

use tokio::io::AsyncWriteExt;

use super::{
    Client, api_versions_request, assert_closed_after, assert_still_serving, framed, raw, start,
};

/// A request header v1: key, version, correlation id, null client id.
fn header(key: i16, version: i16) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&key.to_be_bytes());
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&1i32.to_be_bytes());
    h.extend_from_slice(&(-1i16).to_be_bytes());
    h
}

/// JoinGroup v5 whose protocol array claims `i32::MAX` entries in a 40-byte frame: decoding it
/// with kafka-protocol alone would try to allocate ~190 GB and abort the process.
fn huge_array_join() -> Vec<u8> {
    let mut b = header(11, 5);
    b.extend_from_slice(&1i16.to_be_bytes());
    b.push(b'g');
    b.extend_from_slice(&10_000i32.to_be_bytes());
    b.extend_from_slice(&60_000i32.to_be_bytes());
    b.extend_from_slice(&0i16.to_be_bytes()); // member id ""
    b.extend_from_slice(&(-1i16).to_be_bytes()); // no instance id
    b.extend_from_slice(&1i16.to_be_bytes());
    b.push(b'x');
    b.extend_from_slice(&i32::MAX.to_be_bytes());
    b
}

/// Every hostile case, as the raw bytes written to a fresh connection.
fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let mut oversize = (64i32 * 1024 + 1).to_be_bytes().to_vec();
    oversize.extend_from_slice(&[0u8; 16]);
    let mut truncated = 100i32.to_be_bytes().to_vec();
    truncated.extend_from_slice(&header(18, 0));
    let mut unknown_key = header(999, 0);
    unknown_key.extend_from_slice(&[0u8; 8]);
    let mut heartbeat_v9 = header(12, 9);
    heartbeat_v9.extend_from_slice(&[0u8; 16]);
    let mut offset_commit = header(8, 9);
    offset_commit.extend_from_slice(&[0u8; 16]);
    let mut trailing = header(18, 0);
    trailing.extend_from_slice(&[1, 2, 3]);
    vec![
        ("frame over the size cap", oversize),
        ("truncated frame", truncated),
        ("negative length", (-1i32).to_be_bytes().to_vec()),
        (
            "array count larger than the frame",
            framed(&huge_array_join()).to_vec(),
        ),
        ("unknown API key", framed(&unknown_key).to_vec()),
        ("frame shorter than 4 bytes", framed(&[0, 18]).to_vec()),
        ("empty frame", framed(&[]).to_vec()),
        (
            "unsupported version of a known API",
            framed(&heartbeat_v9).to_vec(),
        ),
        (
            "API not served (OffsetCommit)",
            framed(&offset_commit).to_vec(),
        ),
        ("trailing bytes", framed(&trailing).to_vec()),
    ]
}

#[tokio::test]
async fn each_hostile_frame_closes_only_its_connection() {
    let handle = start().await;
    let mut bystander = Client::connect(&handle).await;
    for (name, bytes) in cases() {
        let stream = raw(&handle).await;
        if name == "truncated frame" {
            // Send part of the frame, then end the stream: the frame can never complete.
            let mut stream = stream;
            stream.write_all(&bytes).await.unwrap();
            stream.shutdown().await.unwrap();
            assert_closed_after(stream, &[]).await;
        } else {
            assert_closed_after(stream, &bytes).await;
        }
        // The connection that was open all along, and a new one, are both still served.
        let r = bystander.call(&api_versions_request(), 3).await;
        assert_eq!(r.error_code, 0, "after {name}");
        assert_still_serving(&handle).await;
    }
    handle.shutdown().await;
}
