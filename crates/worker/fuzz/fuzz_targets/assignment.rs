//! Fuzzes `Assignment::decode`, what every member reads from SyncGroup. Any bytes must give a
//! value or a `DecodeError`: a panic, an abort or an allocation past libFuzzer's RSS limit is a
//! finding. Whatever decodes must survive a round trip: encoding it and decoding that gives the
//! same value, with the version normalised to the current one.

#![no_main]

use kroupier_worker::protocol::{ASSIGNMENT_VERSION, Assignment};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(assignment) = Assignment::decode(data) else {
        return;
    };
    let encoded = assignment.encode();
    let expected = Assignment {
        version: ASSIGNMENT_VERSION,
        ..assignment
    };
    match Assignment::decode(&encoded) {
        Ok(again) => assert_eq!(again, expected, "assignment changed in a round trip"),
        Err(error) => panic!("re-encoded assignment does not decode: {error}"),
    }
});
