//! Rewriting the broker addresses in Metadata and FindCoordinator responses, so that a client
//! behind the proxy only ever learns addresses of the proxy's own listeners.
//!
//! The rewrite is a pure function over one response frame (header and body, without the length
//! prefix): decode it with kroupier's guarded decoder, replace every `host`/`port` pair through
//! a mapping the caller gives, encode it again at the same version. Every other response passes
//! through untouched, as raw bytes.

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, FindCoordinatorResponse, MetadataResponse};
use kafka_protocol::protocol::StrBytes;
use kroupier_coordinator::wire;

/// What an address in a response names, which decides the proxy listener it is rewritten to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A broker as Metadata lists it, or the bootstrap address.
    Broker,
    /// The group coordinator as FindCoordinator names it. Its listener is distinct from the
    /// broker listener of the same upstream address, so that faults can target it alone.
    Coordinator,
}

/// Maps an upstream `(role, host, port)` to the `(host, port)` the client should see instead.
pub type AddressMap<'a> = dyn FnMut(Role, &str, i32) -> Result<(String, i32), String> + 'a;

/// Whether responses of `api_key` carry broker addresses that [`rewrite_response`] rewrites.
pub fn rewrites(api_key: i16) -> bool {
    api_key == ApiKey::Metadata as i16 || api_key == ApiKey::FindCoordinator as i16
}

/// Rewrites the broker addresses in one response frame of `api_key` at `version` (the frame
/// without its length prefix). Returns `Ok(None)` for a response that carries no addresses
/// (pass it through as it is). Entries carrying an error, an empty host or a negative port
/// name no broker and are left as they are.
///
/// # Errors
/// A frame that does not decode, a mapping that fails, or a response that cannot be encoded
/// again; a message saying which.
pub fn rewrite_response(
    api_key: i16,
    version: i16,
    frame: Bytes,
    map: &mut AddressMap<'_>,
) -> Result<Option<Bytes>, String> {
    let encoded = if api_key == ApiKey::Metadata as i16 {
        let (header, mut response) = wire::decode_response::<MetadataResponse>(frame, version)
            .map_err(|e| format!("decode Metadata v{version} response: {e}"))?;
        for broker in &mut response.brokers {
            if let Some((host, port)) = remap(Role::Broker, &broker.host, broker.port, map)? {
                broker.host = host;
                broker.port = port;
            }
        }
        wire::encode_response(header.correlation_id, version, &response)
    } else if api_key == ApiKey::FindCoordinator as i16 {
        let (header, mut response) =
            wire::decode_response::<FindCoordinatorResponse>(frame, version)
                .map_err(|e| format!("decode FindCoordinator v{version} response: {e}"))?;
        if version < 4 {
            let found = response.error_code == 0;
            if let Some((host, port)) = found
                .then(|| remap(Role::Coordinator, &response.host, response.port, map))
                .transpose()?
                .flatten()
            {
                response.host = host;
                response.port = port;
            }
        } else {
            for coordinator in &mut response.coordinators {
                if coordinator.error_code != 0 {
                    continue;
                }
                if let Some((host, port)) =
                    remap(Role::Coordinator, &coordinator.host, coordinator.port, map)?
                {
                    coordinator.host = host;
                    coordinator.port = port;
                }
            }
        }
        wire::encode_response(header.correlation_id, version, &response)
    } else {
        return Ok(None);
    };
    encoded
        .map(Some)
        .map_err(|e| format!("encode rewritten response (API {api_key} v{version}): {e}"))
}

/// The rewritten address of one entry, or `None` for an entry that names no broker.
fn remap(
    role: Role,
    host: &StrBytes,
    port: i32,
    map: &mut AddressMap<'_>,
) -> Result<Option<(StrBytes, i32)>, String> {
    if host.is_empty() || port < 0 {
        return Ok(None);
    }
    let (new_host, new_port) = map(role, host.as_str(), port)?;
    Ok(Some((StrBytes::from_string(new_host), new_port)))
}
