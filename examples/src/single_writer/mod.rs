//! `single_writer`: N replicas of a key-value service in Schema Registry's shape, one writer
//! among them, on kroupier's generic group membership.
//!
//! The protocol ([`protocol::SingleWriter`]) is a
//! [`GroupProtocol`](kroupier::protocol::GroupProtocol) of its own, not the
//! `Elector`: each replica's metadata carries what the election's cannot, its URL and whether
//! it may write, and the assignment tells every replica where the writer answers. The Kafka
//! group leader's assign function chooses the writer (sticky, then the lowest eligible id),
//! exactly as Schema Registry's leader does inside Java's `AbstractCoordinator`.
//!
//! Safety rests on two checks of the writer's fencing token (its generation id): the
//! membership's, at the moment of the write (false once the session may have ended), and the
//! store's ([`store::Store`]), in the write's own transaction (older than the newest token
//! seen: rejected). A new writer claims its token in the store as it takes over, so nothing
//! its predecessor still tries lands.

pub mod http;
pub mod protocol;
pub mod store;
