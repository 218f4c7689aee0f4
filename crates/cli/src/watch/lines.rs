//! The watch view without a terminal: what changed between two snapshots of a group, as
//! plain text lines (`kroupier watch --plain`, and `kroupier demo` off a terminal) or as JSON
//! lines (`kroupier watch --json`). Pure: every input carries its time; nothing is printed here.
//!
//! A line is written only for a change: the group's state or members' tasks, each move, an
//! error describing the group (repeated errors once). Formats, documented in
//! docs/operations.md:
//!
//! ```text
//! Stable generation 4: w1 2, w2 1            (plain, a stable group: each member's task count)
//! PreparingRebalance: 2 members              (plain, any other state)
//! task-3: w1 → w2 (unowned 0.30 s)           (plain, a move)
//! error: no answer from ...                  (plain, describing failed)
//! {"at_ms":…,"event":"group","group":{…}}    (JSON: the `kroupier describe --json` object)
//! {"at_ms":…,"event":"move","task":"task-3","from":"w1","to":"w2","unowned_ms":300}
//! {"at_ms":…,"event":"error","error":"no answer from ..."}
//! ```

use serde::Serialize;

use super::model::Move;
use crate::describe::GroupView;

/// One JSON line of `kroupier watch --json`.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "lowercase")]
enum Event<'a> {
    /// The group changed: the whole `describe --json` object.
    Group { at_ms: u64, group: &'a GroupView },
    /// A task changed owner.
    Move {
        at_ms: u64,
        task: &'a str,
        from: &'a str,
        to: &'a str,
        unowned_ms: u128,
    },
    /// Describing the group failed.
    Error { at_ms: u64, error: &'a str },
}

/// Remembers what was last written, so that only changes are.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    last_group: String,
    last_error: Option<String>,
}

impl Changes {
    /// Nothing written yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The plain lines for one poll: `fresh` moves, then the group's line if it changed, or the
    /// error if it is new.
    pub(crate) fn plain(
        &mut self,
        view: Option<&GroupView>,
        error: Option<&str>,
        fresh: &[Move],
    ) -> Vec<String> {
        let mut lines: Vec<String> = fresh
            .iter()
            .map(|m| {
                format!(
                    "{}: {} → {} (unowned {:.2} s)",
                    m.task,
                    m.from,
                    m.to,
                    m.unowned_for.as_secs_f64()
                )
            })
            .collect();
        if let Some(error) = self.new_error(error) {
            lines.push(format!("error: {error}"));
        }
        if let Some(view) = view {
            let line = summary(view);
            if line != self.last_group {
                self.last_group.clone_from(&line);
                lines.push(line);
            }
        }
        lines
    }

    /// The JSON lines for one poll at `at_ms` (Unix milliseconds), in the same order as
    /// [`plain`](Self::plain)'s; the group is written whenever its `describe --json` object
    /// changed.
    ///
    /// # Errors
    /// When a line cannot be serialized.
    pub(crate) fn json(
        &mut self,
        at_ms: u64,
        view: Option<&GroupView>,
        error: Option<&str>,
        fresh: &[Move],
    ) -> Result<Vec<String>, serde_json::Error> {
        let mut lines = Vec::new();
        for m in fresh {
            lines.push(serde_json::to_string(&Event::Move {
                at_ms,
                task: &m.task,
                from: &m.from,
                to: &m.to,
                unowned_ms: m.unowned_for.as_millis(),
            })?);
        }
        if let Some(error) = self.new_error(error) {
            lines.push(serde_json::to_string(&Event::Error { at_ms, error })?);
        }
        if let Some(view) = view {
            let group = serde_json::to_string(view)?;
            if group != self.last_group {
                self.last_group = group;
                lines.push(serde_json::to_string(&Event::Group { at_ms, group: view })?);
            }
        }
        Ok(lines)
    }

    /// `error` when it differs from the last one; a success clears the last one.
    fn new_error<'a>(&mut self, error: Option<&'a str>) -> Option<&'a str> {
        let Some(error) = error else {
            self.last_error = None;
            return None;
        };
        if self.last_error.as_deref() == Some(error) {
            return None;
        }
        self.last_error = Some(error.to_owned());
        Some(error)
    }
}

/// The plain line for a group: each member's task count when stable, else the state and how
/// many members it has.
fn summary(view: &GroupView) -> String {
    if view.state != "Stable" {
        return format!("{}: {} members", view.state, view.members.len());
    }
    format!(
        "{} generation {}: {}",
        view.state,
        view.generation
            .map_or_else(|| "-".to_owned(), |g| g.to_string()),
        view.members
            .iter()
            .map(|m| format!("{} {}", m.name(), m.tasks.as_ref().map_or(0, Vec::len)))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests;
