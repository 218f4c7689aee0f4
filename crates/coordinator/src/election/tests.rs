//! Election: the leader's choice, the roles, and a full group on the membership machine.

use bytes::Bytes;

use super::*;
use crate::codec::Versioned;
use crate::failover::FailoverEndpoint;
use crate::membership::{
    AssignContext, Generation, GroupMember, GroupProtocol, LostReason, MemberEvent,
    ProtocolMetadata, RebalanceTimes,
};

/// The member's event: `generation`'s assignment `bytes` arrived.
fn assigned_event(generation: Generation, bytes: &[u8]) -> MemberEvent {
    MemberEvent::Assigned {
        generation,
        assignment: Bytes::copy_from_slice(bytes),
        valid_until: std::time::Instant::now(),
        times: RebalanceTimes::default(),
    }
}

/// The member's event: a rebalance of `generation` started.
fn revoked(generation: Generation) -> MemberEvent {
    MemberEvent::Revoked {
        generation,
        reason: "a member joined".into(),
    }
}

/// The member's event: `generation` was lost for `reason`.
fn lost_event(generation: Option<Generation>, reason: &LostReason) -> MemberEvent {
    MemberEvent::Lost {
        generation,
        reason: reason.clone(),
    }
}

fn member(member_id: &str, id: &str, eligible: bool, led: i32) -> GroupMember {
    GroupMember {
        member_id: member_id.into(),
        group_instance_id: None,
        metadata: ElectionMetadata {
            id: id.into(),
            eligible,
            led_generation: led,
            endpoint: None,
        }
        .encode(),
    }
}

fn generation(id: i32, member_id: &str) -> Generation {
    Generation {
        generation_id: id,
        member_id: member_id.into(),
        protocol_name: ELECTION_PROTOCOL_NAME.into(),
        leader_id: "whoever".into(),
    }
}

fn leader(members: &[GroupMember]) -> Option<String> {
    choose_leader(members).map(|(_, id)| id)
}

#[test]
fn lowest_eligible_id_leads_when_nobody_led() {
    let members = [
        member("m1", "c", true, -1),
        member("m2", "a", false, -1),
        member("m3", "b", true, -1),
    ];
    assert_eq!(leader(&members).as_deref(), Some("b"));
}

#[test]
fn the_current_leader_keeps_leading() {
    let members = [
        member("m1", "a", true, -1), // newcomer with a lower id
        member("m2", "z", true, 7),  // led generation 7
        member("m3", "b", true, 3),  // led an older generation, then was cut off
    ];
    assert_eq!(leader(&members).as_deref(), Some("z"));
}

#[test]
fn ineligible_or_broken_members_never_lead() {
    let broken = GroupMember {
        member_id: "m0".into(),
        group_instance_id: None,
        metadata: Bytes::from_static(b"\x00"),
    };
    assert_eq!(leader(&[broken.clone(), member("m1", "x", false, 9)]), None);
    assert_eq!(
        leader(&[broken, member("m2", "y", true, -1)]).as_deref(),
        Some("y")
    );
    assert_eq!(leader(&[]), None);
}

#[test]
fn duplicate_ids_break_ties_by_member_id() {
    let members = [member("m9", "a", true, -1), member("m2", "a", true, -1)];
    assert_eq!(choose_leader(&members), Some(("m2".into(), "a".into())));
}

#[test]
fn roles_follow_the_assignment_and_leadership_is_claimed_next_time() {
    let a = LeaderElection::new("a", true);
    let b = LeaderElection::new("b", true);
    let members = [
        GroupMember {
            member_id: "m-a".into(),
            group_instance_id: None,
            metadata: a.protocols()[0].metadata.clone(),
        },
        GroupMember {
            member_id: "m-b".into(),
            group_instance_id: None,
            metadata: b.protocols()[0].metadata.clone(),
        },
    ];
    let assignments = b
        .assign(
            &AssignContext::new(1, "m-b", ELECTION_PROTOCOL_NAME),
            &members,
        )
        .expect("assign");
    assert_eq!(assignments.len(), 2);
    assert_eq!(assignments[0].assignment, assignments[1].assignment);
    a.handle_event(&assigned_event(
        generation(1, "m-a"),
        &assignments[0].assignment,
    ));
    b.handle_event(&assigned_event(
        generation(1, "m-b"),
        &assignments[1].assignment,
    ));
    assert_eq!(
        a.poll_event(),
        Some(ElectionEvent::Leader {
            token: generation(1, "m-a").token()
        })
    );
    assert_eq!(
        b.poll_event(),
        Some(ElectionEvent::Follower {
            generation_id: 1,
            leader_id: Some("a".into())
        })
    );
    assert_eq!(a.metadata().led_generation, 1);
    assert_eq!(b.metadata().led_generation, -1);
    // A rebalance does not move leadership; losing the generation ends it.
    a.handle_event(&revoked(generation(1, "m-a")));
    assert_eq!(a.poll_event(), None);
    let lost = LostReason::HeartbeatTimeout {
        deadline: std::time::Instant::now(),
    };
    a.handle_event(&lost_event(Some(generation(1, "m-a")), &lost));
    assert_eq!(
        a.poll_event(),
        Some(ElectionEvent::Lost {
            generation_id: Some(1)
        })
    );
    a.handle_event(&lost_event(None, &lost));
    assert_eq!(a.poll_event(), None, "lost once");
    assert!(
        a.assign(&AssignContext::new(2, "m-a", "other"), &members)
            .is_err()
    );
}

#[test]
fn a_broken_assignment_makes_a_follower() {
    let a = LeaderElection::new("a", true);
    a.handle_event(&assigned_event(
        generation(2, "m-a"),
        &Bytes::from_static(b"\xff"),
    ));
    assert_eq!(
        a.poll_event(),
        Some(ElectionEvent::Follower {
            generation_id: 2,
            leader_id: None
        })
    );
}

#[test]
fn metadata_is_forward_compatible() {
    let mut bytes = ElectionMetadata {
        id: "a".into(),
        eligible: true,
        led_generation: 4,
        endpoint: Some(endpoint("127.0.0.1:7")),
    }
    .encode()
    .to_vec();
    bytes[1] = 3; // a future version with a trailing field
    bytes.extend_from_slice(b"future");
    let decoded = ElectionMetadata::decode(&bytes).expect("decodes");
    assert_eq!((decoded.id.as_str(), decoded.led_generation), ("a", 4));
    assert_eq!(decoded.endpoint, Some(endpoint("127.0.0.1:7")));
    let offered: Vec<ProtocolMetadata> = LeaderElection::new("a", false).protocols();
    assert_eq!(offered[0].name, ELECTION_PROTOCOL_NAME);
}

fn endpoint(addr: &str) -> FailoverEndpoint {
    FailoverEndpoint {
        addr: addr.into(),
        process: "p-1".into(),
        network: Some("boot/1".into()),
    }
}

/// A version 0 payload, as releases before fast failover write it.
fn v0_metadata(id: &str, eligible: bool, led: i32) -> Bytes {
    let mut writer = crate::codec::Writer::new();
    writer.i16(0);
    writer.string(id);
    writer.bool(eligible);
    writer.i32(led);
    writer.finish().into()
}

#[test]
fn version_0_metadata_and_assignments_still_decode() {
    let decoded = ElectionMetadata::decode(&v0_metadata("a", true, 3)).expect("decodes");
    assert_eq!(
        decoded,
        ElectionMetadata {
            id: "a".into(),
            eligible: true,
            led_generation: 3,
            endpoint: None,
        }
    );
    let mut writer = crate::codec::Writer::new();
    writer.i16(0);
    writer.nullable_string(Some("m-a"));
    writer.nullable_string(Some("a"));
    let bytes: Bytes = writer.finish().into();
    let decoded = ElectionAssignment::decode(&bytes).expect("decodes");
    assert_eq!(decoded.leader_member_id.as_deref(), Some("m-a"));
    assert_eq!(
        (decoded.leader_group_instance_id, decoded.leader_endpoint),
        (None, None)
    );
    // A group of old and new members: the old one's metadata counts as before.
    let members = [
        GroupMember {
            member_id: "m-old".into(),
            group_instance_id: None,
            metadata: v0_metadata("a", true, -1),
        },
        member("m-new", "b", true, -1),
    ];
    assert_eq!(leader(&members).as_deref(), Some("a"));
}

#[test]
fn a_version_0_reader_skips_what_version_1_appends() {
    // What a release before fast failover does with a v1 payload: read v0, skip the rest.
    let bytes = ElectionAssignment {
        leader_member_id: Some("m-a".into()),
        leader_id: Some("a".into()),
        leader_group_instance_id: Some("i-a".into()),
        leader_endpoint: Some(endpoint("10.0.0.1:7")),
    }
    .encode();
    let mut reader = crate::codec::Reader::new(&bytes);
    let sent = reader.version().unwrap();
    assert_eq!(sent, 1);
    assert_eq!(reader.nullable_string("a").unwrap().as_deref(), Some("m-a"));
    assert_eq!(reader.nullable_string("b").unwrap().as_deref(), Some("a"));
    assert!(
        reader.end(sent, 0).is_ok(),
        "a newer version's tail is skipped"
    );
}

#[test]
fn followers_learn_the_leader_s_endpoint_and_instance_id_from_the_assignment() {
    let a = LeaderElection::new("a", true).with_endpoint(endpoint("127.0.0.1:7"));
    let b = LeaderElection::new("b", true);
    let members = vec![
        GroupMember {
            member_id: "m-a".into(),
            group_instance_id: Some("i-a".into()),
            metadata: a.protocols()[0].metadata.clone(),
        },
        GroupMember {
            member_id: "m-b".into(),
            group_instance_id: None,
            metadata: b.protocols()[0].metadata.clone(),
        },
    ];
    let context = AssignContext::new(5, "m-b", ELECTION_PROTOCOL_NAME);
    let assignments = b.assign(&context, &members).unwrap();
    let decoded = ElectionAssignment::decode(&assignments[0].assignment).unwrap();
    assert_eq!(decoded.leader_group_instance_id.as_deref(), Some("i-a"));
    assert_eq!(decoded.leader_endpoint, Some(endpoint("127.0.0.1:7")));

    b.handle_event(&assigned_event(
        generation(5, "m-b"),
        &assignments[1].assignment,
    ));
    let watched = b.watched().expect("the follower watches the leader");
    assert_eq!(watched.member_id, "m-a");
    assert_eq!(watched.group_instance_id.as_deref(), Some("i-a"));
    assert_eq!(watched.endpoint, endpoint("127.0.0.1:7"));
    a.handle_event(&assigned_event(
        generation(5, "m-a"),
        &assignments[0].assignment,
    ));
    assert_eq!(a.watched(), None, "the leader watches nobody");
    let lost = LostReason::HeartbeatTimeout {
        deadline: std::time::Instant::now(),
    };
    b.handle_event(&lost_event(None, &lost));
    assert_eq!(b.watched(), None, "without a generation, nobody");
    b.handle_event(&assigned_event(
        generation(6, "m-b"),
        &assignments[1].assignment,
    ));
    b.resign();
    assert_eq!(b.watched(), None, "a resigned member watches nobody");
}

#[test]
fn a_member_that_leads_after_following_another_names_its_predecessor() {
    let a = LeaderElection::new("a", true);
    let b = LeaderElection::new("b", true);
    let both = vec![member("m-a", "a", true, -1), member("m-b", "b", true, -1)];
    let assigned = b
        .assign(&AssignContext::new(1, "m-b", ELECTION_PROTOCOL_NAME), &both)
        .unwrap();
    b.handle_event(&assigned_event(
        generation(1, "m-b"),
        &assigned[1].assignment,
    ));
    assert_eq!(b.succeeded(), None, "b follows a");

    // a vanishes; b's generation is lost on the way (its lease may have ended): a may still act.
    let lost = LostReason::HeartbeatTimeout {
        deadline: std::time::Instant::now(),
    };
    b.handle_event(&lost_event(None, &lost));
    let alone = vec![member("m-b", "b", true, -1)];
    let assigned = b
        .assign(
            &AssignContext::new(2, "m-b", ELECTION_PROTOCOL_NAME),
            &alone,
        )
        .unwrap();
    b.handle_event(&assigned_event(
        generation(2, "m-b"),
        &assigned[0].assignment,
    ));
    assert_eq!(b.succeeded().as_deref(), Some("m-a"), "b leads after a");

    // Leading again names nobody; a first leader names nobody.
    b.handle_event(&assigned_event(
        generation(3, "m-b"),
        &assigned[0].assignment,
    ));
    assert_eq!(b.succeeded(), None);
    let assigned = a
        .assign(&AssignContext::new(1, "m-a", ELECTION_PROTOCOL_NAME), &both)
        .unwrap();
    a.handle_event(&assigned_event(
        generation(1, "m-a"),
        &assigned[0].assignment,
    ));
    assert_eq!(a.succeeded(), None);
}
