//! Fuzzes `MemberMetadata::decode`, what a leader reads from every member's JoinGroup. Any
//! bytes must give a value or a `DecodeError`: a panic, an abort or an allocation past
//! libFuzzer's RSS limit is a finding. Whatever decodes must survive a round trip: encoding it
//! and decoding that gives the same value, with the version normalised to the current one.

#![no_main]

use kroupier_worker::protocol::{METADATA_VERSION, MemberMetadata};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(metadata) = MemberMetadata::decode(data) else {
        return;
    };
    let encoded = metadata.encode();
    let expected = MemberMetadata {
        version: METADATA_VERSION,
        ..metadata
    };
    match MemberMetadata::decode(&encoded) {
        Ok(again) => assert_eq!(again, expected, "metadata changed in a round trip"),
        Err(error) => panic!("re-encoded metadata does not decode: {error}"),
    }
});
