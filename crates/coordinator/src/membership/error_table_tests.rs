//! The error table: every code of the reference's §2, for every group API — first the pure map,
//! then the state machine applying it.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    FindCoordinatorResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
    SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::tests::{Harness, ms};
use super::*;

use ErrorAction as A;
use ResponseError as E;
use RetryBackoff as B;

const APIS: [Api; 5] = [
    Api::FindCoordinator,
    Api::JoinGroup,
    Api::SyncGroup,
    Api::Heartbeat,
    Api::LeaveGroup,
];

fn fatal(e: FatalError) -> ErrorAction {
    A::Fatal(e)
}

fn unexpected(api: Api, error: ResponseError) -> ErrorAction {
    A::Fatal(FatalError::Unexpected {
        api,
        error: error.into(),
    })
}

/// One row per error code: the expected action for FindCoordinator, JoinGroup, SyncGroup,
/// Heartbeat and LeaveGroup.
fn table() -> Vec<(ResponseError, [ErrorAction; 5])> {
    use FatalError as F;
    let auth = || fatal(F::GroupAuthorizationFailed);
    let fenced = || fatal(F::FencedInstanceId);
    let exp = || A::Retry(B::Exponential);
    vec![
        (
            E::GroupAuthorizationFailed,
            [auth(), auth(), auth(), auth(), A::Ignore],
        ),
        (
            E::CoordinatorNotAvailable,
            [
                exp(),
                A::RediscoverCoordinator,
                A::RediscoverCoordinator,
                A::RediscoverCoordinator,
                A::Ignore,
            ],
        ),
        (
            E::NotCoordinator,
            [
                exp(),
                A::RediscoverCoordinator,
                A::RediscoverCoordinator,
                A::RediscoverCoordinator,
                A::Ignore,
            ],
        ),
        (
            E::CoordinatorLoadInProgress,
            [exp(), A::Retry(B::Fixed), exp(), exp(), A::Ignore],
        ),
        (
            E::UnknownMemberId,
            [
                unexpected(Api::FindCoordinator, E::UnknownMemberId),
                A::ResetMemberIdAndRejoin,
                A::ResetMemberIdAndRejoin,
                A::ResetMemberIdAndRejoin,
                A::Ignore,
            ],
        ),
        (
            E::IllegalGeneration,
            [
                unexpected(Api::FindCoordinator, E::IllegalGeneration),
                A::ResetGenerationAndRejoin,
                A::ResetGenerationAndRejoin,
                A::ResetGenerationAndRejoin,
                A::Ignore,
            ],
        ),
        (
            E::FencedInstanceId,
            [fenced(), fenced(), fenced(), fenced(), A::Ignore],
        ),
        (
            E::InconsistentGroupProtocol,
            [
                unexpected(Api::FindCoordinator, E::InconsistentGroupProtocol),
                fatal(F::InconsistentGroupProtocol),
                fatal(F::InconsistentGroupProtocol),
                exp(),
                A::Ignore,
            ],
        ),
        (
            E::InvalidSessionTimeout,
            [
                unexpected(Api::FindCoordinator, E::InvalidSessionTimeout),
                fatal(F::InvalidSessionTimeout),
                unexpected(Api::SyncGroup, E::InvalidSessionTimeout),
                exp(),
                A::Ignore,
            ],
        ),
        (
            E::InvalidGroupId,
            [
                unexpected(Api::FindCoordinator, E::InvalidGroupId),
                fatal(F::InvalidGroupId),
                unexpected(Api::SyncGroup, E::InvalidGroupId),
                exp(),
                A::Ignore,
            ],
        ),
        (
            E::GroupMaxSizeReached,
            [
                unexpected(Api::FindCoordinator, E::GroupMaxSizeReached),
                fatal(F::GroupMaxSizeReached),
                unexpected(Api::SyncGroup, E::GroupMaxSizeReached),
                exp(),
                A::Ignore,
            ],
        ),
        (
            E::UnsupportedVersion,
            [
                unexpected(Api::FindCoordinator, E::UnsupportedVersion),
                fatal(F::UnsupportedVersion),
                fatal(F::UnsupportedVersion),
                fatal(F::UnsupportedVersion),
                A::Ignore,
            ],
        ),
        (
            E::MemberIdRequired,
            [
                unexpected(Api::FindCoordinator, E::MemberIdRequired),
                A::RejoinWithAssignedMemberId,
                unexpected(Api::SyncGroup, E::MemberIdRequired),
                exp(),
                A::Ignore,
            ],
        ),
        (
            E::RebalanceInProgress,
            [
                unexpected(Api::FindCoordinator, E::RebalanceInProgress),
                A::Rejoin,
                A::Rejoin,
                A::Rejoin,
                A::Ignore,
            ],
        ),
        // "Other": retriable ones are retried, the rest stop the member (heartbeats always retry).
        (E::RequestTimedOut, [exp(), exp(), exp(), exp(), A::Ignore]),
        (
            E::UnknownServerError,
            [
                unexpected(Api::FindCoordinator, E::UnknownServerError),
                unexpected(Api::JoinGroup, E::UnknownServerError),
                unexpected(Api::SyncGroup, E::UnknownServerError),
                exp(),
                A::Ignore,
            ],
        ),
        (
            E::Unknown(9999),
            [
                unexpected(Api::FindCoordinator, E::Unknown(9999)),
                unexpected(Api::JoinGroup, E::Unknown(9999)),
                unexpected(Api::SyncGroup, E::Unknown(9999)),
                exp(),
                A::Ignore,
            ],
        ),
    ]
}

#[test]
fn action_table_covers_every_code_for_every_api() {
    for (error, expected) in table() {
        for (api, expected) in APIS.into_iter().zip(expected) {
            assert_eq!(action_for(api, error), expected, "{api:?} {error}");
        }
    }
}

/// Drives a fresh member to the point where it awaits a response of `api`, delivers `error`,
/// and checks what it does next against the table.
#[test]
fn state_machine_applies_the_table() {
    for (error, expected) in table() {
        for (api, action) in APIS.into_iter().zip(expected) {
            check(api, error, &action);
        }
    }
}

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_owned())
}

fn check(api: Api, error: ResponseError, action: &ErrorAction) {
    let ctx = format!("{api:?} {error} {action:?}");
    let mut h = Harness::dynamic();
    // Every API but FindCoordinator is reached from a stable generation 1 ("m1").
    let t = if api == Api::FindCoordinator {
        ms(0)
    } else {
        h.stable_follower(1)
    };
    let code = error.code();
    let (tag, response) = match api {
        Api::FindCoordinator => {
            let out = h.expect(t);
            let r = FindCoordinatorResponse::default().with_error_code(code);
            (out.tag, Response::FindCoordinator(r))
        }
        Api::JoinGroup => {
            h.member.request_rejoin(h.at(t), "test");
            h.events();
            let out = h.expect(t);
            let r = JoinGroupResponse::default()
                .with_error_code(code)
                .with_member_id(s("m9"));
            (out.tag, Response::JoinGroup(r))
        }
        Api::SyncGroup => {
            h.member.request_rejoin(h.at(t), "test");
            let join = h.expect(t);
            let ok = JoinGroupResponse::default()
                .with_generation_id(2)
                .with_protocol_name(Some(s("sticky")))
                .with_leader(s("m0"))
                .with_member_id(s("m1"));
            h.respond(t, join.tag, Response::JoinGroup(ok));
            h.events();
            let out = h.expect(t);
            let r = SyncGroupResponse::default().with_error_code(code);
            (out.tag, Response::SyncGroup(r))
        }
        Api::Heartbeat => {
            let out = h.expect(ms(3020));
            let r = HeartbeatResponse::default().with_error_code(code);
            (out.tag, Response::Heartbeat(r))
        }
        Api::LeaveGroup => {
            h.member.leave(h.at(t), "test");
            let out = h.expect(t);
            let r = LeaveGroupResponse::default().with_error_code(code);
            (out.tag, Response::LeaveGroup(r))
        }
    };
    let now = match api {
        Api::Heartbeat => ms(3030),
        _ => t + ms(5),
    };
    let generation_before = h.member.generation().cloned();
    h.respond(now, tag, response);
    let events = h.events();
    let lost = events.iter().any(|e| matches!(e, MemberEvent::Lost { .. }));
    let next = h.poll(now).map(|o| o.request);
    let join_member_id = |next: &Option<Request>| match next {
        Some(Request::JoinGroup(j)) => Some(j.member_id.to_string()),
        _ => None,
    };
    match action {
        A::Retry(backoff) => {
            assert!(!lost, "{ctx}: {events:?}");
            let wait = match backoff {
                B::Fixed | B::Exponential => ms(100),
            };
            if api == Api::Heartbeat {
                assert!(next.is_none(), "{ctx}: {next:?}");
                let retry = h.poll(now + wait).map(|o| o.request);
                assert!(
                    matches!(retry, Some(Request::Heartbeat(_))),
                    "{ctx}: {retry:?}"
                );
            } else {
                assert!(next.is_none(), "{ctx}: {next:?}");
                assert_eq!(h.member.poll_timeout(), Some(h.at(now + wait)), "{ctx}");
                let retry = h.poll(now + wait).map(|o| o.request.api());
                assert_eq!(retry, Some(api), "{ctx}");
            }
            assert_eq!(h.member.generation(), generation_before.as_ref(), "{ctx}");
        }
        A::RediscoverCoordinator => {
            assert!(!lost, "{ctx}: {events:?}");
            assert!(
                matches!(next, Some(Request::FindCoordinator(_))),
                "{ctx}: {next:?}"
            );
            assert_eq!(h.member.generation(), generation_before.as_ref(), "{ctx}");
        }
        A::Rejoin => {
            assert!(!lost, "{ctx}: {events:?}");
            if api == Api::Heartbeat {
                assert!(
                    matches!(events.as_slice(), [MemberEvent::Revoked { .. }]),
                    "{ctx}: {events:?}"
                );
            }
            assert_eq!(
                join_member_id(&next).as_deref(),
                Some("m1"),
                "{ctx}: {next:?}"
            );
            assert!(
                h.member.generation().is_some(),
                "{ctx}: the generation is held"
            );
        }
        A::ResetGenerationAndRejoin | A::ResetMemberIdAndRejoin | A::RejoinWithAssignedMemberId => {
            assert!(lost, "{ctx}: {events:?}");
            let expected_id = match action {
                A::ResetGenerationAndRejoin => "m1",
                A::ResetMemberIdAndRejoin => "",
                _ => "m9",
            };
            assert_eq!(
                join_member_id(&next).as_deref(),
                Some(expected_id),
                "{ctx}: {next:?}"
            );
            assert!(h.member.generation().is_none(), "{ctx}");
        }
        A::Fatal(e) => {
            assert_eq!(h.member.state(), MemberState::Fatal, "{ctx}");
            assert_eq!(h.member.fatal_error(), Some(e), "{ctx}");
            assert_eq!(lost, api != Api::FindCoordinator, "{ctx}: {events:?}");
            let last = events.last();
            if *e == FatalError::FencedInstanceId {
                assert!(
                    matches!(last, Some(MemberEvent::Fenced { .. })),
                    "{ctx}: {events:?}"
                );
            } else {
                assert_eq!(last, Some(&MemberEvent::Fatal(e.clone())), "{ctx}");
            }
            assert!(next.is_none(), "{ctx}");
        }
        A::Ignore => {
            assert_eq!(api, Api::LeaveGroup, "{ctx}");
            assert_eq!(events, vec![MemberEvent::Left], "{ctx}");
            assert_eq!(h.member.state(), MemberState::Left, "{ctx}");
        }
    }
}
