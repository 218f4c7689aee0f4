//! How a fuzz input becomes the bytes a client sends: a sequence of `[u16 big-endian length]
//! [payload]` records, each sent as one Kafka frame with a correct 4-byte length prefix, so the
//! fuzzer spends its time inside requests rather than on framing. Whatever is left at the end
//! (a record cut short) is sent raw, which exercises truncated and hostile framing too.

/// Turns a fuzz input into a client's byte stream.
pub fn client_stream(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 16);
    let mut rest = data;
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        if rest.len() < 2 + len {
            break;
        }
        let payload = &rest[2..2 + len];
        out.extend_from_slice(&(len as u32).to_be_bytes());
        out.extend_from_slice(payload);
        rest = &rest[2 + len..];
    }
    out.extend_from_slice(rest);
    out
}
