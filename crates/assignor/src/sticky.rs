//! `sticky`: eager, balanced, and moving as few tasks as possible.

use crate::assemble::assemble;
use crate::balance::{Mode, place};
use crate::prepare::{NONE, is_member, prepare};
use crate::{AssignmentInput, Assignor, AssignorError, Plan, RebalanceProtocol};

/// The `sticky` assignor (eager): members keep what they own up to their balanced share;
/// only the surplus and the tasks of departed members move.
///
/// Double claims are resolved by generation (the same generation: neither keeps the task).
/// With unit weights and no capacities the number of moves is the lower bound
/// (`check::lower_bound_moves`, feature `testing`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sticky;

impl Assignor for Sticky {
    fn name(&self) -> &'static str {
        "sticky"
    }

    fn protocol(&self) -> RebalanceProtocol {
        RebalanceProtocol::Eager
    }

    fn assign(&self, input: &AssignmentInput<'_>) -> Result<Plan, AssignorError> {
        let p = prepare(input)?;
        let mut target: Vec<u32> = p
            .owner
            .iter()
            .map(|&o| if is_member(o) { o } else { NONE })
            .collect();
        place(input, &p, &mut target, Mode::Balance);
        let (assignments, unplaced) = assemble(input, &target);
        Ok(Plan {
            assignments,
            unplaced,
            state: input.state,
            ..Plan::default()
        })
    }
}
