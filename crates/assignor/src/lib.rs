//! # kroupier-assignor
//!
//! Pure, synchronous, deterministic assignors: given the members of a group (with what their
//! metadata says they own and can run) and the set of tasks, compute who runs what.
//!
//! ```
//! use kroupier_assignor::{AssignmentInput, Assignor, Cooperative, MemberInput, TaskSet, check};
//!
//! // Six tasks of one kind, interned once to dense indices.
//! let tasks = TaskSet::uniform(6, "sink");
//! // Round 1: two members, nothing owned yet.
//! let members = vec![MemberInput::new("worker-a"), MemberInput::new("worker-b")];
//! let assignor = Cooperative::default();
//! let plan = assignor.assign(&AssignmentInput::new(&tasks, &members))?;
//! assert_eq!(plan.assignments[0].assigned.len(), 3);
//!
//! // Round 2: a third member joins. The others report what they own (granted in generation 1).
//! let previous = plan.to_previous();
//! let mut members: Vec<MemberInput> = plan
//!     .assignments
//!     .iter()
//!     .map(|a| MemberInput::new(a.member_id.clone()).with_owned(1, a.assigned.clone()))
//!     .collect();
//! members.push(MemberInput::new("worker-c"));
//! let input = AssignmentInput::new(&tasks, &members)
//!     .with_previous(&previous)
//!     .with_state(plan.state);
//! let plan = assignor.assign(&input)?;
//! // Cooperative: two tasks are revoked now and handed to worker-c in the follow-up round.
//! assert_eq!(plan.revoked_count(), 2);
//! assert_eq!(plan.held_back.len(), 2);
//! assert!(plan.assignments[2].assigned.is_empty());
//! check::cooperative(&input, &plan)?;
//! check::coverage(&input, &plan)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Shape
//!
//! * [`TaskSet`] interns task ids and kinds to dense [`TaskIndex`] / [`KindIndex`] values once;
//!   assignors work on `Vec`s indexed by them, never on strings.
//! * [`MemberInput`]: a member's metadata (owned tasks with the generation it got them in, the kinds
//!   it can run, optional capacity and rack). Members are passed sorted by [`MemberId`].
//! * [`AssignmentInput`] → [`Assignor::assign`] → [`Plan`]: each member's full target set and
//!   what it must revoke; tasks held back this round; tasks that cannot be placed, and why.
//! * Assignors: [`RoundRobin`] (`round-robin`, eager), [`Sticky`] (`sticky`, eager, minimal
//!   movement), [`Cooperative`] (`cooperative`, Kafka Connect's KIP-415 semantics). The state
//!   the cooperative assignor needs across rounds is explicit: [`CooperativeState`] goes out in
//!   the plan and back in with the next input.
//! * `check` (feature `testing`): reusable invariant checkers, for tests and benchmarks.
//!
//! No IO, no clock, no async: `now` is an input. See `docs/assignors.md` for the algorithms,
//! worked examples and measured timings.

#![warn(unreachable_pub)]

/// Declares a `pub` item shared with kroupier's own crates (the worker's leader, the tests) but
/// not promised to users: `pub` and hidden from the docs with the `unstable` feature (which
/// kroupier-worker turns on), `pub(crate)` without it.
macro_rules! unstable_pub {
    ($(#[$attr:meta])* pub $($item:tt)*) => {
        $(#[$attr])*
        #[cfg(feature = "unstable")]
        #[doc(hidden)]
        pub $($item)*
        $(#[$attr])*
        #[cfg(not(feature = "unstable"))]
        #[allow(dead_code)]
        pub(crate) $($item)*
    };
}

mod assemble;
mod assignor;
mod balance;
// The invariant checkers: public with the `testing` feature (tests, benchmarks, the CLI's
// `assign`); the cooperative assignor checks its own plans with them either way.
#[cfg(feature = "testing")]
pub mod check;
#[cfg(not(feature = "testing"))]
#[allow(dead_code, unreachable_pub)]
mod check;
mod cooperative;
mod error;
mod input;
mod member;
mod plan;
mod prepare;
mod round_robin;
mod runs;
mod sticky;
mod task;
mod violation;

pub use assignor::{Assignor, RebalanceProtocol, by_name};
pub use cooperative::{Cooperative, CooperativeConfig, CooperativeState};
pub use error::{AssignorError, AssignorErrorKind};
pub use input::AssignmentInput;
pub use member::{Kinds, MemberId, MemberInput, PreviousAssignment, PreviousOwner};
pub use plan::{HeldBack, HoldReason, MemberPlan, Plan, Unplaced, UnplacedReason};
pub use round_robin::RoundRobin;
pub use sticky::Sticky;
pub use task::{KindIndex, TaskIndex, TaskSet};
// A galloping id lookup for the worker's leader, which decodes each member's claims in id
// order: kroupier's own (`unstable`), no promise of stability.
#[cfg(feature = "unstable")]
#[doc(hidden)]
pub use task::IdCursor;
