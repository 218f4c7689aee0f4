//! Fuzzes the embedded coordinator's whole request path on one in-memory connection: framing
//! with the size cap, the guarded decoder, dispatch by API and version, the classic group state
//! machine and response encoding. A crash, an abort (e.g. kafka-protocol reserving memory for a
//! hostile array count) or a request parked forever is a finding.

#![no_main]

#[path = "../src/input.rs"]
mod input;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let stream = input::client_stream(data);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(kroupier_embedded::fuzzing::serve_bytes(&stream, 64 * 1024));
});
