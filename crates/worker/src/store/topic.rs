//! The default topic names of a group's task store and checkpoints.
//!
//! `kroupier-tasks-<group>` and `kroupier-checkpoints-<group>`: one pair per group, so two groups
//! on one cluster never read each other's tasks. Kafka accepts only `[a-zA-Z0-9._-]` in topic
//! names, at most 249 of them; a group id that does not fit needs an explicit topic name
//! (`tasks.store.topic`, `tasks.checkpoint.topic`) rather than a silently mangled one, which two
//! groups could end up sharing.

use super::{StoreDetail, StoreError};

/// The longest topic name Kafka accepts.
pub(crate) const MAX_TOPIC_NAME_BYTES: usize = 249;

/// The task store's topic of `group`: `kroupier-tasks-<group>`.
///
/// # Errors
/// `InvalidTopic` if the group id is empty, holds a character Kafka refuses in
/// topic names, or makes the name longer than 249 characters.
pub fn tasks_topic(group: &str) -> Result<String, StoreError> {
    topic_of("kroupier-tasks-", group, "tasks.store.topic")
}

/// The checkpoint topic of `group`: `kroupier-checkpoints-<group>`.
///
/// # Errors
/// As [`tasks_topic`].
pub fn checkpoints_topic(group: &str) -> Result<String, StoreError> {
    topic_of("kroupier-checkpoints-", group, "tasks.checkpoint.topic")
}

fn topic_of(prefix: &str, group: &str, setting: &'static str) -> Result<String, StoreError> {
    let invalid = |reason: String| -> StoreError {
        StoreDetail::InvalidTopic {
            group: group.to_owned(),
            reason,
            setting,
        }
        .into()
    };
    if group.is_empty() {
        return Err(invalid("the group id is empty".to_owned()));
    }
    if let Some(bad) = group
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(invalid(format!(
            "it holds {bad:?}, and Kafka topic names allow only ASCII letters, digits, '.', '_' and '-'"
        )));
    }
    let topic = format!("{prefix}{group}");
    if topic.len() > MAX_TOPIC_NAME_BYTES {
        return Err(invalid(format!(
            "`{prefix}<group>` would be {} characters, and Kafka allows at most {MAX_TOPIC_NAME_BYTES}",
            topic.len()
        )));
    }
    Ok(topic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreErrorKind;

    #[test]
    fn names_the_topics_after_the_group() {
        assert_eq!(tasks_topic("beats").unwrap(), "kroupier-tasks-beats");
        assert_eq!(
            checkpoints_topic("a.b_c-D9").unwrap(),
            "kroupier-checkpoints-a.b_c-D9"
        );
    }

    #[test]
    fn refuses_group_ids_kafka_cannot_name_a_topic_after() {
        for group in ["", "a b", "a/b", "é", "a:b"] {
            let error = tasks_topic(group).unwrap_err();
            let message = error.to_string();
            assert!(
                error.kind() == StoreErrorKind::InvalidTopic,
                "{group:?}: {error:?}"
            );
            assert!(message.contains("tasks.store.topic"), "{message}");
        }
        let message = checkpoints_topic("a b").unwrap_err().to_string();
        assert!(message.contains("tasks.checkpoint.topic"), "{message}");
    }

    #[test]
    fn refuses_names_longer_than_kafka_allows() {
        let fits = "g".repeat(MAX_TOPIC_NAME_BYTES - "kroupier-tasks-".len());
        assert_eq!(tasks_topic(&fits).unwrap().len(), MAX_TOPIC_NAME_BYTES);
        let long = format!("{fits}g");
        let message = tasks_topic(&long).unwrap_err().to_string();
        assert!(message.contains("250 characters"), "{message}");
        // The longer prefix makes the same group too long for the checkpoint topic.
        assert!(checkpoints_topic(&fits).is_err());
    }
}
