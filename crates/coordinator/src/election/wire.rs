//! The election's member metadata and assignment, versioned and forward compatible, in the
//! [`codec`](crate::codec) kroupier's worker protocol uses too.

use crate::codec::{DecodeError, Reader, Versioned, Writer};
use crate::failover::FailoverEndpoint;

/// `present: bool`, then the endpoint if present.
fn encode_endpoint(writer: &mut Writer, endpoint: Option<&FailoverEndpoint>) {
    writer.bool(endpoint.is_some());
    if let Some(endpoint) = endpoint {
        endpoint.encode(writer);
    }
}

fn decode_endpoint(reader: &mut Reader<'_>) -> Result<Option<FailoverEndpoint>, DecodeError> {
    if reader.bool("endpoint.present")? {
        FailoverEndpoint::decode(reader).map(Some)
    } else {
        Ok(None)
    }
}

/// What each member tells the leader at JoinGroup.
///
/// v0 body: `id: string, eligible: bool, led_generation: int32` (−1 = never led).
/// v1 appends `endpoint: bool present, then FailoverEndpoint` (a v0 decoder skips it, and a
/// v0 payload decodes with no endpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionMetadata {
    /// The member's stable id (its `--id`), the same across restarts.
    pub id: String,
    /// Whether the member may lead.
    pub eligible: bool,
    /// The latest generation this member led, −1 if none. Makes leadership sticky.
    pub led_generation: i32,
    /// Its fast-failover endpoint, if it turned fast failover on (v1).
    pub endpoint: Option<FailoverEndpoint>,
}

impl Versioned for ElectionMetadata {
    const VERSION: i16 = 1;

    fn encode_body(&self, writer: &mut Writer) {
        writer.string(&self.id);
        writer.bool(self.eligible);
        writer.i32(self.led_generation);
        encode_endpoint(writer, self.endpoint.as_ref());
    }

    fn decode_body(version: i16, reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            id: reader.string("id")?,
            eligible: reader.bool("eligible")?,
            led_generation: reader.i32("led_generation")?,
            endpoint: if version >= 1 {
                decode_endpoint(reader)?
            } else {
                None
            },
        })
    }
}

/// What the leader tells every member: who leads. The same for all members.
///
/// v0 body: `leader_member_id: nullable string, leader_id: nullable string`.
/// v1 appends `leader_group_instance_id: nullable string, leader_endpoint: bool present, then
/// FailoverEndpoint`: what a follower needs to link to the leader and, on the proof of its
/// end, to remove it (followers never see other members' metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionAssignment {
    /// The Kafka member id of the elected leader; `None` if no member is eligible.
    pub leader_member_id: Option<String>,
    /// The stable id of the elected leader.
    pub leader_id: Option<String>,
    /// The elected leader's `group.instance.id`, if it is static (v1).
    pub leader_group_instance_id: Option<String>,
    /// The elected leader's fast-failover endpoint, if it advertised one (v1).
    pub leader_endpoint: Option<FailoverEndpoint>,
}

impl Versioned for ElectionAssignment {
    const VERSION: i16 = 1;

    fn encode_body(&self, writer: &mut Writer) {
        writer.nullable_string(self.leader_member_id.as_deref());
        writer.nullable_string(self.leader_id.as_deref());
        writer.nullable_string(self.leader_group_instance_id.as_deref());
        encode_endpoint(writer, self.leader_endpoint.as_ref());
    }

    fn decode_body(version: i16, reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let leader_member_id = reader.nullable_string("leader_member_id")?;
        let leader_id = reader.nullable_string("leader_id")?;
        let (leader_group_instance_id, leader_endpoint) = if version >= 1 {
            (
                reader.nullable_string("leader_group_instance_id")?,
                decode_endpoint(reader)?,
            )
        } else {
            (None, None)
        };
        Ok(Self {
            leader_member_id,
            leader_id,
            leader_group_instance_id,
            leader_endpoint,
        })
    }
}
