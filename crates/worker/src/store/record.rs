//! The task record: what the store's topic holds for one task.
//!
//! Key: the task id, UTF-8. Value: JSON,
//! `{"kind":"beat","config":{...},"state":"running","weight":1,"restart":0}`; a tombstone (no
//! value) deletes the task. A task a generator declared also carries
//! `"generated_by":{"generator":"<id>","generation":N}` (see [generated tasks](super#generated-tasks)),
//! absent in every other record, so records written before generators read as tasks no
//! generator owns. Readers ignore fields they do not know, so a newer writer that adds
//! one stays readable, and take the documented default for a missing one. A value that is not a
//! task record (not JSON, a wrong type, an unknown state, weight 0, an empty kind) is skipped
//! with a warning and reported by the reader, never a panic: one bad record must not stop a
//! group.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{StoreDetail, StoreError};
use crate::catalogue::TaskSpec;

/// The largest record value the store writes: 512 KiB. Half of Kafka's default
/// `max.message.bytes` (1 MiB), so a record fits a stock broker with room for its batch, and
/// every worker holds every task's config in memory.
pub const MAX_VALUE_BYTES: usize = 512 * 1024;

/// Whether the task should run. Pausing keeps the task's place in the store (and its
/// checkpoint); the owner stops it without a rebalance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DesiredState {
    /// Run the task (the default).
    #[default]
    Running,
    /// Keep the task stopped.
    Paused,
}

impl DesiredState {
    /// `running` or `paused`, as in the record.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DesiredState::Running => "running",
            DesiredState::Paused => "paused",
        }
    }
}

impl std::fmt::Display for DesiredState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task as the store holds it (the key, the task id, is apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The registered kind that runs it.
    pub kind: String,
    /// The config handed to the kind's constructor; `null` when missing.
    #[serde(default)]
    pub config: serde_json::Value,
    /// Running or paused; running when missing.
    #[serde(default)]
    pub state: DesiredState,
    /// Relative cost for weight-aware assignors, at least 1; 1 when missing.
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Restart generation: each restart request adds 1, and the owner restarts the task when
    /// it sees the number change. 0 when missing.
    #[serde(default)]
    pub restart: u64,
    /// The generator that declared this task; `None` for a task put by anyone else, and when
    /// missing (records written before generators existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_by: Option<GeneratedBy>,
}

/// Which generator declared a task, and under which fencing token: the generation in which
/// the generator's worker was granted the generator. Readers ignore a write carrying a
/// generation older than the newest one the generator claimed (see
/// [generated tasks](super#generated-tasks)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratedBy {
    /// The generator's task id.
    pub generator: String,
    /// The generation in which the generator's worker was granted it.
    pub generation: i32,
}

fn default_weight() -> u32 {
    1
}

impl TaskRecord {
    /// A running task of `kind` with `config`, weight 1, never restarted.
    pub fn new(kind: impl Into<String>, config: serde_json::Value) -> Self {
        TaskRecord {
            kind: kind.into(),
            config,
            state: DesiredState::Running,
            weight: 1,
            restart: 0,
            generated_by: None,
        }
    }

    /// The same record with another weight.
    pub fn with_weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// The same record in another desired state.
    pub fn with_state(mut self, state: DesiredState) -> Self {
        self.state = state;
        self
    }

    /// The id and record of a task defined in code: running, never restarted.
    #[cfg(test)]
    pub(crate) fn from_spec(spec: TaskSpec) -> (String, TaskRecord) {
        let record = TaskRecord::new(spec.kind, spec.config).with_weight(spec.weight);
        (spec.id, record)
    }

    /// The catalogue entry of this record under `id` (desired state and restart apart).
    pub(crate) fn to_spec(&self, id: &str) -> TaskSpec {
        TaskSpec::new(id, self.kind.clone(), self.config.clone()).with_weight(self.weight)
    }

    unstable_pub! {
    /// The record's value, checked: a valid id, a non-empty kind, weight at least 1, at most
    /// [`MAX_VALUE_BYTES`].
    ///
    /// # Errors
    /// `InvalidId`, `InvalidRecord` or `TooLarge`;
    /// nothing is written then.
    pub fn encode(&self, id: &str) -> Result<Bytes, StoreError> {
        validate_id(id)?;
        self.check().map_err(|reason| StoreDetail::InvalidRecord {
            id: id.to_owned(),
            reason: reason.to_owned(),
        })?;
        let value = serde_json::to_vec(self).map_err(|error| StoreDetail::InvalidRecord {
            id: id.to_owned(),
            reason: format!("its config does not serialize to JSON: {error}"),
        })?;
        if value.len() > MAX_VALUE_BYTES {
            return Err(StoreDetail::TooLarge {
                id: id.to_owned(),
                bytes: value.len(),
                max: MAX_VALUE_BYTES,
            }
            .into());
        }
        Ok(Bytes::from(value))
    }
    }

    /// Reads a record's value.
    ///
    /// # Errors
    /// Why the value is not a task record (serde's message, or the rule it breaks).
    pub(crate) fn decode(value: &[u8]) -> Result<TaskRecord, String> {
        let record: TaskRecord =
            serde_json::from_slice(value).map_err(|error| format!("not a task record: {error}"))?;
        record.check()?;
        Ok(record)
    }

    /// The rules every reader holds a record to, so that the assignor never sees a bad one.
    fn check(&self) -> Result<(), &'static str> {
        if self.kind.is_empty() {
            return Err("its kind is empty; name a registered task kind");
        }
        if self.weight == 0 {
            return Err("its weight is 0; weights must be at least 1");
        }
        if let Some(by) = &self.generated_by
            && validate_id(&by.generator).is_err()
        {
            return Err("its generator is not a task id");
        }
        Ok(())
    }
}

unstable_pub! {
/// Checks a task id against the one rule every entry holds it to (the CLI, the status API's
/// `PUT /tasks/{id}`, the builder's tasks, the task store and its readers): Kafka's rule for
/// topic names, kept in `task_id.rs`. Non-empty, at most
/// [`MAX_ID_BYTES`](crate::store::MAX_ID_BYTES) characters, only ASCII letters, digits, `.`,
/// `_` and `-`.
///
/// # Errors
/// `InvalidId` saying which rule the id breaks.
pub fn validate_id(id: &str) -> Result<(), StoreError> {
    crate::task_id::check(id).map_err(|invalid| StoreDetail::InvalidId(invalid).into())
}
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::StoreErrorKind;
    use crate::task_id::MAX_ID_BYTES;

    #[test]
    fn writes_the_documented_value_format() {
        let record = TaskRecord::new("beat", json!({"every_ms": 100}))
            .with_state(DesiredState::Paused)
            .with_weight(3);
        let value = record.encode("beat-0").unwrap();
        assert_eq!(
            std::str::from_utf8(&value).unwrap(),
            r#"{"kind":"beat","config":{"every_ms":100},"state":"paused","weight":3,"restart":0}"#
        );
        assert_eq!(TaskRecord::decode(&value).unwrap(), record);
    }

    #[test]
    fn ignores_unknown_fields_and_defaults_missing_ones() {
        let record =
            TaskRecord::decode(br#"{"kind":"beat","owner_hint":"w1","labels":{"a":1}}"#).unwrap();
        assert_eq!(record, TaskRecord::new("beat", serde_json::Value::Null));
    }

    #[test]
    fn refuses_values_that_are_not_task_records() {
        for (value, expected) in [
            (&b"not json"[..], "not a task record"),
            (br#"{"config":{}}"#, "missing field `kind`"),
            (br#"{"kind":7}"#, "not a task record"),
            (br#"{"kind":"beat","state":"stopped"}"#, "unknown variant"),
            (br#"{"kind":"beat","weight":-1}"#, "not a task record"),
            (br#"{"kind":"beat","weight":0}"#, "weight is 0"),
            (br#"{"kind":""}"#, "kind is empty"),
            (b"\xff\xfe", "not a task record"),
            (b"", "not a task record"),
        ] {
            let reason = TaskRecord::decode(value).unwrap_err();
            assert!(reason.contains(expected), "{value:?}: {reason}");
        }
    }

    #[test]
    fn refuses_to_encode_what_readers_would_skip() {
        let error = TaskRecord::new("", json!({})).encode("t").unwrap_err();
        assert!(error.kind() == StoreErrorKind::InvalidRecord, "{error}");
        let error = TaskRecord::new("beat", json!({}))
            .with_weight(0)
            .encode("t")
            .unwrap_err();
        assert!(error.to_string().contains("weight"), "{error}");
    }

    #[test]
    fn checks_ids() {
        for id in ["task-0", "beat_1.b-C9", "0", &"x".repeat(MAX_ID_BYTES)] {
            assert!(validate_id(id).is_ok(), "{id:?}");
        }
        let error = validate_id("").unwrap_err();
        assert!(error.to_string().contains("empty"), "{error}");
        let error = validate_id(&"x".repeat(MAX_ID_BYTES + 1)).unwrap_err();
        assert!(error.to_string().contains("250 characters long"), "{error}");
        // What breaks tables, URLs and file names: refused, saying what an id may hold.
        for id in ["✓\n", "x/y", "a b", "é", "t@3", "a:b", "a\\b", "\0"] {
            let error = validate_id(id).unwrap_err();
            assert!(error.kind() == StoreErrorKind::InvalidId, "{id:?}: {error}");
            assert!(error.to_string().contains("it holds"), "{error}");
        }
        let error = TaskRecord::new("beat", json!({})).encode("").unwrap_err();
        assert!(error.kind() == StoreErrorKind::InvalidId, "{error}");
        let error = TaskRecord::new("beat", json!({}))
            .encode("x/y")
            .unwrap_err();
        assert!(error.kind() == StoreErrorKind::InvalidId, "{error}");
    }

    #[test]
    fn refuses_values_over_the_limit() {
        // The bytes of the value around the config string's characters.
        let frame = TaskRecord::new("k", json!("")).encode("t").unwrap().len();
        let fits = TaskRecord::new("k", json!("x".repeat(MAX_VALUE_BYTES - frame)));
        assert_eq!(fits.encode("t").unwrap().len(), MAX_VALUE_BYTES);
        let over = TaskRecord::new("k", json!("x".repeat(MAX_VALUE_BYTES - frame + 1)));
        match over.encode("t").unwrap_err() {
            error if error.kind() == StoreErrorKind::TooLarge => {
                let (bytes, max) = error.too_large().unwrap();
                assert_eq!(
                    (error.task_id().unwrap(), bytes, max),
                    ("t", MAX_VALUE_BYTES + 1, MAX_VALUE_BYTES)
                );
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    #[test]
    fn converts_to_and_from_task_specs() {
        let spec = TaskSpec::new("beat-1", "beat", json!({"every_ms": 5})).with_weight(2);
        let (id, record) = TaskRecord::from_spec(spec.clone());
        assert_eq!(id, "beat-1");
        assert_eq!(record.state, DesiredState::Running);
        assert_eq!(record.restart, 0);
        assert_eq!(record.to_spec(&id), spec);
    }

    #[test]
    fn desired_states_print_as_stored() {
        assert_eq!(DesiredState::Paused.to_string(), "paused");
        assert_eq!(
            serde_json::to_string(&DesiredState::Running).unwrap(),
            r#""running""#
        );
    }
}
