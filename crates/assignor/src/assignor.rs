//! The [`Assignor`] trait and lookup by name.

use crate::error::Repr;
use crate::{AssignmentInput, AssignorError, Cooperative, Plan, RoundRobin, Sticky};

/// Whether members stop everything at each rebalance, or only what they are told to revoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RebalanceProtocol {
    /// Members revoke all their tasks when a rebalance starts (Connect's eager protocol).
    Eager,
    /// Members keep running their tasks and stop only the revoked ones (KIP-415).
    Cooperative,
}

/// A pure, deterministic function from the group's members and tasks to a [`Plan`].
///
/// Implementations do no IO and read no clock: the same input gives the same plan on every
/// leader. The name is the protocol name offered in JoinGroup.
///
/// The trait is object safe, and `Send + Sync`: a worker holds its assignors as values
/// (`Arc<dyn Assignor>`), built-in or the application's own, and calls the one the group
/// selected on whichever member leads. State an assignor needs across rounds travels in the
/// plan and the next input ([`CooperativeState`](crate::CooperativeState)), not in the value.
pub trait Assignor: Send + Sync {
    /// The protocol name, as offered in JoinGroup (`round-robin`, `sticky`, `cooperative`).
    fn name(&self) -> &'static str;

    /// Whether members revoke everything at each rebalance or only what the plan says.
    fn protocol(&self) -> RebalanceProtocol;

    /// Computes the plan for one round.
    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError>;
}

/// A shared assignor is an assignor: a list of values of different types is a
/// `Vec<Arc<dyn Assignor>>`, and each element plugs in where an assignor is expected.
impl<A: Assignor + ?Sized> Assignor for std::sync::Arc<A> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn protocol(&self) -> RebalanceProtocol {
        (**self).protocol()
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError> {
        (**self).assign(input)
    }
}

/// A boxed assignor (as [`by_name`] returns) is an assignor.
impl<A: Assignor + ?Sized> Assignor for Box<A> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn protocol(&self) -> RebalanceProtocol {
        (**self).protocol()
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError> {
        (**self).assign(input)
    }
}

/// The built-in assignor called `name` (with default configuration).
pub fn by_name(name: &str) -> Result<Box<dyn Assignor>, AssignorError> {
    match name {
        "round-robin" => Ok(Box::new(RoundRobin)),
        "sticky" => Ok(Box::new(Sticky)),
        "cooperative" => Ok(Box::new(Cooperative::default())),
        _ => Err(Repr::UnknownAssignor { name: name.into() }.into()),
    }
}
