//! The one map from a Kafka error code, per group API, to what the member does next.
//!
//! It follows Kafka's `AbstractCoordinator` (reference §2.2–2.6), with two deliberate choices:
//! an unexpected code that Kafka marks retriable is retried with backoff instead of thrown, and
//! GROUP_AUTHORIZATION_FAILED is fatal on every API (Kafka's heartbeat thread only backs off, but
//! the next JoinGroup fails for good anyway).

use kafka_protocol::error::ResponseError;

use super::KafkaError;
use thiserror::Error;

/// The group API a response answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// FindCoordinator (key 10).
    FindCoordinator,
    /// JoinGroup (key 11).
    JoinGroup,
    /// SyncGroup (key 14).
    SyncGroup,
    /// Heartbeat (key 12).
    Heartbeat,
    /// LeaveGroup (key 13).
    LeaveGroup,
}

/// Which retry delay a row of the error table asks for: a *policy*, not a delay. The delay
/// itself is computed by the one backoff of kroupier, [`crate::backoff`]: `Exponential` is
/// [`base_delay`](crate::backoff::base_delay) of `retry_backoff` up to `retry_backoff_max`
/// (without jitter: the sans-IO membership draws no random numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryBackoff {
    /// Wait `retry_backoff` (Kafka's join loop does this).
    Fixed,
    /// Wait `retry_backoff · 2^(attempts − 1)` (attempts counted from 1), capped at
    /// `retry_backoff_max`.
    Exponential,
}

/// What the member does about an error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorAction {
    /// Send the same request again after the backoff.
    Retry(RetryBackoff),
    /// Forget the coordinator, find it again, then resume (rejoin if a join or sync was in flight,
    /// heartbeat on if the member is stable).
    RediscoverCoordinator,
    /// Send JoinGroup again with the current member id; the generation is kept until the new one
    /// forms.
    Rejoin,
    /// The generation is gone (ILLEGAL_GENERATION): drop it, keep the member id, rejoin.
    ResetGenerationAndRejoin,
    /// The member id is gone (UNKNOWN_MEMBER_ID): drop generation and member id, rejoin.
    ResetMemberIdAndRejoin,
    /// MEMBER_ID_REQUIRED (KIP-394): take the member id the broker returned and rejoin at once.
    RejoinWithAssignedMemberId,
    /// Nothing to do beyond logging (LeaveGroup errors: the member is gone either way).
    Ignore,
    /// Stop: the member cannot go on without a change by the operator.
    Fatal(FatalError),
}

/// An error that ends the member: it says what the operator must change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FatalError {
    /// GROUP_AUTHORIZATION_FAILED.
    #[error("not authorized for the group: grant this principal READ on the group (ACL)")]
    GroupAuthorizationFailed,
    /// FENCED_INSTANCE_ID: another process uses the same `group.instance.id`.
    #[error(
        "fenced: another member joined with the same group.instance.id; give every process its own instance id"
    )]
    FencedInstanceId,
    /// INCONSISTENT_GROUP_PROTOCOL, or a response naming another protocol type or name.
    #[error(
        "inconsistent group protocol: the group uses another protocol type or no common protocol; use another group id or align the members' protocols"
    )]
    InconsistentGroupProtocol,
    /// INVALID_SESSION_TIMEOUT.
    #[error(
        "the broker rejected the session timeout: set it within group.min/max.session.timeout.ms"
    )]
    InvalidSessionTimeout,
    /// INVALID_GROUP_ID.
    #[error("the broker rejected the group id: use a non-empty group id")]
    InvalidGroupId,
    /// GROUP_MAX_SIZE_REACHED.
    #[error("the group is full (group.max.size): raise it on the broker or run fewer members")]
    GroupMaxSizeReached,
    /// UNSUPPORTED_VERSION.
    #[error(
        "the broker does not support this request version: static membership needs JoinGroup v5+; unset group_instance_id or upgrade the broker"
    )]
    UnsupportedVersion,
    /// A response that breaks the protocol (for example a JoinGroup without a protocol name).
    #[error("invalid response to {api:?}: {detail}; report this broker behaviour")]
    InvalidResponse {
        /// The API whose response was invalid.
        api: Api,
        /// What was wrong.
        detail: &'static str,
    },
    /// A connection could not be secured: the TLS handshake failed on a certificate, or the
    /// broker refused the SASL mechanism or credentials (UNSUPPORTED_SASL_MECHANISM,
    /// ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED). Not a group error code, so not in
    /// `action_for`: the driver stops on it at once instead of retrying.
    #[error("{detail}")]
    Security {
        /// The connection error, naming the broker and what to fix.
        detail: String,
    },
    /// An error code this member does not expect from this API.
    #[error("unexpected error {error} from {api:?}; check the broker logs")]
    Unexpected {
        /// The API that returned it.
        api: Api,
        /// The error.
        error: KafkaError,
    },
}

/// The action for `error` returned by `api` (the one exhaustive map; table-tested).
pub(crate) fn action_for(api: Api, error: ResponseError) -> ErrorAction {
    use Api::*;
    use ErrorAction::*;
    use ResponseError as E;
    match (api, error) {
        // LeaveGroup errors are only logged: the member is gone either way.
        (LeaveGroup, _) => Ignore,
        // Fatal on every other group API.
        (_, E::GroupAuthorizationFailed) => Fatal(FatalError::GroupAuthorizationFailed),
        (_, E::FencedInstanceId) => Fatal(FatalError::FencedInstanceId),

        (FindCoordinator, E::CoordinatorNotAvailable | E::NotCoordinator) => {
            Retry(RetryBackoff::Exponential)
        }
        (FindCoordinator, E::CoordinatorLoadInProgress) => Retry(RetryBackoff::Exponential),

        (JoinGroup | SyncGroup | Heartbeat, E::CoordinatorNotAvailable | E::NotCoordinator) => {
            RediscoverCoordinator
        }
        (JoinGroup, E::CoordinatorLoadInProgress) => Retry(RetryBackoff::Fixed),
        (SyncGroup | Heartbeat, E::CoordinatorLoadInProgress) => Retry(RetryBackoff::Exponential),

        (JoinGroup, E::MemberIdRequired) => RejoinWithAssignedMemberId,
        (JoinGroup | SyncGroup | Heartbeat, E::UnknownMemberId) => ResetMemberIdAndRejoin,
        (JoinGroup | SyncGroup | Heartbeat, E::IllegalGeneration) => ResetGenerationAndRejoin,
        // REBALANCE_IN_PROGRESS: JoinGroup retries at once; SyncGroup rejoins; for Heartbeat it
        // also counts as a success (the caller records that before acting).
        (JoinGroup | SyncGroup | Heartbeat, E::RebalanceInProgress) => Rejoin,

        (JoinGroup | SyncGroup, E::InconsistentGroupProtocol) => {
            Fatal(FatalError::InconsistentGroupProtocol)
        }
        (JoinGroup, E::InvalidSessionTimeout) => Fatal(FatalError::InvalidSessionTimeout),
        (JoinGroup, E::InvalidGroupId) => Fatal(FatalError::InvalidGroupId),
        (JoinGroup, E::GroupMaxSizeReached) => Fatal(FatalError::GroupMaxSizeReached),
        (JoinGroup | SyncGroup | Heartbeat, E::UnsupportedVersion) => {
            Fatal(FatalError::UnsupportedVersion)
        }

        // Anything else: Kafka's heartbeat thread backs off and retries; its join and sync
        // paths throw. We retry what Kafka marks retriable and stop on the rest.
        (Heartbeat, _) => Retry(RetryBackoff::Exponential),
        (FindCoordinator | JoinGroup | SyncGroup, error) if error.is_retriable() => {
            Retry(RetryBackoff::Exponential)
        }
        (FindCoordinator | JoinGroup | SyncGroup, error) => Fatal(FatalError::Unexpected {
            api,
            error: error.into(),
        }),
    }
}
