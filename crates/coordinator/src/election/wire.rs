//! The election's member metadata and assignment, versioned and forward compatible, in the
//! [`codec`](crate::codec) kroupier's worker protocol uses too.

use crate::codec::{DecodeError, Reader, Versioned, Writer};

/// What each member tells the leader at JoinGroup.
///
/// v0 body: `id: string, eligible: bool, led_generation: int32` (−1 = never led).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionMetadata {
    /// The member's stable id (its `--id`), the same across restarts.
    pub id: String,
    /// Whether the member may lead.
    pub eligible: bool,
    /// The latest generation this member led, −1 if none. Makes leadership sticky.
    pub led_generation: i32,
}

impl Versioned for ElectionMetadata {
    const VERSION: i16 = 0;

    fn encode_body(&self, writer: &mut Writer) {
        writer.string(&self.id);
        writer.bool(self.eligible);
        writer.i32(self.led_generation);
    }

    fn decode_body(_version: i16, reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            id: reader.string("id")?,
            eligible: reader.bool("eligible")?,
            led_generation: reader.i32("led_generation")?,
        })
    }
}

/// What the leader tells every member: who leads. The same for all members.
///
/// v0 body: `leader_member_id: nullable string, leader_id: nullable string`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionAssignment {
    /// The Kafka member id of the elected leader; `None` if no member is eligible.
    pub leader_member_id: Option<String>,
    /// The stable id of the elected leader.
    pub leader_id: Option<String>,
}

impl Versioned for ElectionAssignment {
    const VERSION: i16 = 0;

    fn encode_body(&self, writer: &mut Writer) {
        writer.nullable_string(self.leader_member_id.as_deref());
        writer.nullable_string(self.leader_id.as_deref());
    }

    fn decode_body(_version: i16, reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            leader_member_id: reader.nullable_string("leader_member_id")?,
            leader_id: reader.nullable_string("leader_id")?,
        })
    }
}
