//! Fuzzes the leader election's versioned payloads (`kroupier_coordinator::election`): the same
//! bytes are decoded as `ElectionMetadata` (JoinGroup) and as `ElectionAssignment` (SyncGroup)
//! through the public `Versioned::decode`. Any bytes must give a value or a `DecodeError`, and
//! whatever decodes must survive a round trip (neither type keeps its version, so the value
//! itself must come back).

#![no_main]

use std::fmt::Debug;

use kroupier_coordinator::codec::Versioned;
use kroupier_coordinator::election::{ElectionAssignment, ElectionMetadata};
use libfuzzer_sys::fuzz_target;

fn round_trip<T: Versioned + PartialEq + Debug>(data: &[u8]) {
    let Ok(value) = T::decode(data) else {
        return;
    };
    match T::decode(&value.encode()) {
        Ok(again) => assert_eq!(again, value, "payload changed in a round trip"),
        Err(error) => panic!("re-encoded payload does not decode: {error}"),
    }
}

fuzz_target!(|data: &[u8]| {
    round_trip::<ElectionMetadata>(data);
    round_trip::<ElectionAssignment>(data);
});
