//! Random bytes into the guarded decoders: an error or a value, never a panic or an abort.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::super::{SUPPORTED_APIS, decode_request};
use super::for_every_sample;

/// A sample's request and response frames, version and response decoder.
type Sample = (
    Bytes,
    Bytes,
    i16,
    fn(Bytes, i16) -> Result<(), super::WireError>,
);

fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    for_every_sample(|sample| {
        let s = sample();
        out.push((s.request, s.response, s.version, s.decode_response));
    });
    out
}

proptest! {
    #[test]
    fn random_request_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_request(Bytes::from(bytes));
    }

    #[test]
    fn random_bodies_behind_a_valid_header_never_panic(
        api in 0..SUPPORTED_APIS.len(),
        version in -1i16..16,
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let key = SUPPORTED_APIS[api];
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&(key as i16).to_be_bytes());
        frame.extend_from_slice(&version.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0, 1, 0xFF, 0xFF]);
        if key.request_header_version(version) >= 2 {
            frame.extend_from_slice(&[0]);
        }
        frame.extend_from_slice(&body);
        let _ = decode_request(frame.freeze());
    }

    #[test]
    fn mutated_sample_frames_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let samples = samples();
        let (request, response, version, decode_response) = &samples[pick.index(samples.len())];
        for frame in [request, response] {
            let mut bytes = frame.to_vec();
            for (at, value) in &edits {
                let i = at.index(bytes.len());
                bytes[i] = *value;
            }
            let bytes = Bytes::from(bytes);
            let _ = decode_request(bytes.clone());
            let _ = decode_response(bytes, *version);
        }
    }

    #[test]
    fn random_response_frames_never_panic(
        pick in any::<prop::sample::Index>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let samples = samples();
        let (_, _, version, decode_response) = &samples[pick.index(samples.len())];
        let _ = decode_response(Bytes::from(bytes), *version);
    }
}
