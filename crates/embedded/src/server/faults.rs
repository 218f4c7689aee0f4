//! Fault injection for tests: per API, a delay, an error code or a dropped response.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

/// An API the embedded coordinator serves, as Kafka names it: what a [`Fault`] applies to.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServedApi {
    /// Produce (key 0).
    Produce,
    /// Fetch (key 1).
    Fetch,
    /// ListOffsets (key 2).
    ListOffsets,
    /// Metadata (key 3).
    Metadata,
    /// FindCoordinator (key 10).
    FindCoordinator,
    /// JoinGroup (key 11).
    JoinGroup,
    /// Heartbeat (key 12).
    Heartbeat,
    /// LeaveGroup (key 13).
    LeaveGroup,
    /// SyncGroup (key 14).
    SyncGroup,
    /// DescribeGroups (key 15).
    DescribeGroups,
    /// ListGroups (key 16).
    ListGroups,
    /// ApiVersions (key 18).
    ApiVersions,
    /// CreateTopics (key 19).
    CreateTopics,
    /// DescribeConfigs (key 32).
    DescribeConfigs,
}

impl ServedApi {
    /// Kafka's key for this API.
    fn key(self) -> ApiKey {
        match self {
            ServedApi::Produce => ApiKey::Produce,
            ServedApi::Fetch => ApiKey::Fetch,
            ServedApi::ListOffsets => ApiKey::ListOffsets,
            ServedApi::Metadata => ApiKey::Metadata,
            ServedApi::FindCoordinator => ApiKey::FindCoordinator,
            ServedApi::JoinGroup => ApiKey::JoinGroup,
            ServedApi::Heartbeat => ApiKey::Heartbeat,
            ServedApi::LeaveGroup => ApiKey::LeaveGroup,
            ServedApi::SyncGroup => ApiKey::SyncGroup,
            ServedApi::DescribeGroups => ApiKey::DescribeGroups,
            ServedApi::ListGroups => ApiKey::ListGroups,
            ServedApi::ApiVersions => ApiKey::ApiVersions,
            ServedApi::CreateTopics => ApiKey::CreateTopics,
            ServedApi::DescribeConfigs => ApiKey::DescribeConfigs,
        }
    }
}

/// What to do to the requests of one API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fault {
    /// Wait this long before sending the response (the connection stays muted meanwhile).
    pub delay: Duration,
    /// Answer with this Kafka error code instead of handling the request (the group state does
    /// not change): 15 is COORDINATOR_NOT_AVAILABLE, 27 REBALANCE_IN_PROGRESS, as Kafka's
    /// protocol numbers them.
    pub error: Option<i16>,
    /// Handle the request but never send its response (the client's request times out).
    pub drop_response: bool,
    /// Apply the fault to this many requests only, then clear it; `None` for every request.
    pub times: Option<u32>,
}

impl Fault {
    /// A delay before every response.
    pub fn delay(delay: Duration) -> Self {
        Self {
            delay,
            ..Self::default()
        }
    }

    /// An error answer, Kafka's error `code`, instead of handling the request.
    pub fn error(code: i16) -> Self {
        Self {
            error: Some(code),
            ..Self::default()
        }
    }

    /// Handle the request, send no response.
    pub fn drop_response() -> Self {
        Self {
            drop_response: true,
            ..Self::default()
        }
    }

    /// Only for the next `n` requests of the API.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }
}

/// The faults in force, shared by the handle and every connection; change them at any time.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    inner: Arc<Mutex<HashMap<i16, Fault>>>,
}

impl Faults {
    fn lock(&self) -> MutexGuard<'_, HashMap<i16, Fault>> {
        // A poisoned map still holds valid faults: a panic elsewhere cannot corrupt it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `fault` to the requests of `api` from now on (replacing any earlier one).
    pub fn set(&self, api: ServedApi, fault: Fault) {
        self.lock().insert(api.key() as i16, fault);
    }

    /// Removes the fault on `api`.
    pub fn clear(&self, api: ServedApi) {
        self.lock().remove(&(api.key() as i16));
    }

    /// Removes every fault.
    pub fn clear_all(&self) {
        self.lock().clear();
    }

    /// The fault for one request of `api`, counting it against [`Fault::times`].
    pub(crate) fn take(&self, api: ApiKey) -> Option<Fault> {
        let mut faults = self.lock();
        let key = api as i16;
        let fault = faults.get_mut(&key)?;
        let current = fault.clone();
        if let Some(n) = &mut fault.times {
            *n = n.saturating_sub(1);
            if *n == 0 {
                faults.remove(&key);
            }
        }
        (current.times != Some(0)).then_some(current)
    }
}
