//! Where clients reach this coordinator: what Metadata and FindCoordinator answer with. A leaf:
//! the API handlers, the topics and the listener's start all use it.

use kafka_protocol::protocol::StrBytes;

/// Where clients reach this coordinator.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) node_id: i32,
    pub(crate) host: StrBytes,
    pub(crate) port: i32,
    pub(crate) cluster_id: StrBytes,
}
