//! CreateTopics' checks: what a topic may be called and how it may be laid out here (one
//! partition, one replica, on this node), with Kafka's error for each refusal.

use std::collections::BTreeMap;

use super::error::LogError;

/// Kafka's longest topic name (`Topic.MAX_NAME_LENGTH`).
pub(crate) const MAX_NAME_LENGTH: usize = 249;

/// A topic as CreateTopics asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewTopic {
    /// The name.
    pub(crate) name: String,
    /// Partitions asked for; -1 is the broker default (1 here).
    pub(crate) num_partitions: i32,
    /// Replicas asked for; -1 is the broker default (1 here).
    pub(crate) replication_factor: i16,
    /// A manual assignment: (partition, broker ids).
    pub(crate) assignments: Vec<(i32, Vec<i32>)>,
    /// Configs, as given.
    pub(crate) configs: Vec<(String, Option<String>)>,
}

/// Kafka's topic name rule: 1 to 249 of `[a-zA-Z0-9._-]`, and not `.` or `..`.
///
/// # Errors
/// [`LogError::InvalidTopic`] saying which part of the rule failed.
pub(crate) fn validate_name(name: &str) -> Result<(), LogError> {
    let invalid = |why: String| Err(LogError::InvalidTopic(why));
    if name.is_empty() {
        return invalid("topic name is illegal, it can't be empty".to_string());
    }
    if name == "." || name == ".." {
        return invalid(format!("topic name cannot be \"{name}\""));
    }
    if name.len() > MAX_NAME_LENGTH {
        return invalid(format!(
            "topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, \
             topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
    {
        return invalid(format!(
            "topic name {name} is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

impl NewTopic {
    /// Checks the request against what this single-node, single-partition store can hold and
    /// returns the configs to keep.
    ///
    /// # Errors
    /// Kafka's refusal for the first rule broken: the name, then partitions, replication and
    /// assignment, then config values.
    pub(crate) fn validate(
        &self,
        node_id: i32,
    ) -> Result<BTreeMap<String, Option<String>>, LogError> {
        validate_name(&self.name)?;
        if !self.assignments.is_empty()
            && (self.num_partitions != -1 || self.replication_factor != -1)
        {
            return Err(LogError::InvalidRequest(
                "both numPartitions or replicationFactor and replicasAssignments were set; both \
                 cannot be used at the same time"
                    .to_string(),
            ));
        }
        match self.num_partitions {
            -1 | 1 => {}
            n if n < 1 => {
                return Err(LogError::InvalidPartitions(format!(
                    "number of partitions was set to an invalid non-positive value ({n})"
                )));
            }
            n => {
                return Err(LogError::InvalidPartitions(format!(
                    "the embedded kroupier coordinator serves one partition per topic, not {n}; \
                     create the topic with 1 partition (or use Kafka for more)"
                )));
            }
        }
        match self.replication_factor {
            -1 | 1 => {}
            n if n < 1 => {
                return Err(LogError::InvalidReplicationFactor(format!(
                    "replication factor must be larger than 0, or -1 to use the default ({n})"
                )));
            }
            n => {
                return Err(LogError::InvalidReplicationFactor(format!(
                    "unable to replicate the partition {n} time(s): the embedded kroupier \
                     coordinator is a single broker; use replication factor 1 or -1"
                )));
            }
        }
        if !self.assignments.is_empty() {
            if self.assignments.len() != 1 || self.assignments[0].0 != 0 {
                return Err(LogError::InvalidPartitions(
                    "the embedded kroupier coordinator serves one partition per topic: assign \
                     partition 0 only"
                        .to_string(),
                ));
            }
            if self.assignments[0].1 != [node_id] {
                return Err(LogError::InvalidReplicaAssignment(format!(
                    "partition 0 assigned to brokers {:?}; the only broker is {node_id}",
                    self.assignments[0].1
                )));
            }
        }
        let mut configs = BTreeMap::new();
        for (key, value) in &self.configs {
            let Some(value) = value else {
                return Err(LogError::InvalidConfig(format!(
                    "null value not supported for topic configs: {key}"
                )));
            };
            check_config(key, value)?;
            configs.insert(key.clone(), Some(value.clone()));
        }
        Ok(configs)
    }
}

/// The configs this store reads are checked; any other is kept as given.
fn check_config(key: &str, value: &str) -> Result<(), LogError> {
    match key {
        "cleanup.policy" => {
            let ok = !value.trim().is_empty()
                && value
                    .split(',')
                    .all(|p| matches!(p.trim(), "compact" | "delete"));
            if !ok {
                return Err(LogError::InvalidConfig(format!(
                    "invalid value {value} for configuration cleanup.policy: String must be one \
                     of: compact, delete"
                )));
            }
        }
        "max.message.bytes" if value.trim().parse::<i32>().map_or(true, |v| v < 0) => {
            return Err(LogError::InvalidConfig(format!(
                "invalid value {value} for configuration max.message.bytes: a non-negative \
                 integer is expected"
            )));
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str) -> NewTopic {
        NewTopic {
            name: name.to_string(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: Vec::new(),
            configs: Vec::new(),
        }
    }

    #[test]
    fn kafka_names_pass_and_others_are_invalid_topics() {
        for ok in ["a", "kroupier-tasks-demo", "x.y_z-1", &"n".repeat(249)] {
            assert_eq!(validate_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", ".", "..", "a b", "ü", "a/b", &"n".repeat(250)] {
            assert!(
                matches!(validate_name(bad), Err(LogError::InvalidTopic(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn one_partition_and_one_replica_only() {
        for n in [-1, 1] {
            let t = NewTopic {
                num_partitions: n,
                ..topic("t")
            };
            assert!(t.validate(0).is_ok());
        }
        let t = NewTopic {
            num_partitions: 3,
            ..topic("t")
        };
        assert!(
            matches!(t.validate(0), Err(LogError::InvalidPartitions(m)) if m.contains("one partition"))
        );
        let t = NewTopic {
            num_partitions: 0,
            ..topic("t")
        };
        assert!(matches!(t.validate(0), Err(LogError::InvalidPartitions(_))));
        let t = NewTopic {
            replication_factor: 3,
            ..topic("t")
        };
        assert!(matches!(
            t.validate(0),
            Err(LogError::InvalidReplicationFactor(_))
        ));
        let t = NewTopic {
            assignments: vec![(0, vec![0])],
            ..topic("t")
        };
        assert!(t.validate(0).is_ok());
        let t = NewTopic {
            assignments: vec![(0, vec![1])],
            ..topic("t")
        };
        assert!(matches!(
            t.validate(0),
            Err(LogError::InvalidReplicaAssignment(_))
        ));
        let t = NewTopic {
            assignments: vec![(0, vec![0]), (1, vec![0])],
            ..topic("t")
        };
        assert!(matches!(t.validate(0), Err(LogError::InvalidPartitions(_))));
        let t = NewTopic {
            assignments: vec![(0, vec![0])],
            num_partitions: 1,
            ..topic("t")
        };
        assert!(matches!(t.validate(0), Err(LogError::InvalidRequest(_))));
    }

    #[test]
    fn configs_are_kept_and_the_ones_used_here_are_checked() {
        let config = |k: &str, v: Option<&str>| NewTopic {
            configs: vec![(k.to_string(), v.map(str::to_string))],
            ..topic("t")
        };
        let kept = config("cleanup.policy", Some("compact"))
            .validate(0)
            .expect("valid");
        assert_eq!(
            kept.get("cleanup.policy"),
            Some(&Some("compact".to_string()))
        );
        assert!(
            config("cleanup.policy", Some("compact,delete"))
                .validate(0)
                .is_ok()
        );
        assert!(config("retention.ms", Some("whatever")).validate(0).is_ok());
        for (k, v) in [
            ("cleanup.policy", Some("shrink")),
            ("cleanup.policy", Some("")),
            ("max.message.bytes", Some("-1")),
            ("max.message.bytes", Some("big")),
            ("retention.ms", None),
        ] {
            assert!(
                matches!(config(k, v).validate(0), Err(LogError::InvalidConfig(_))),
                "{k}={v:?}"
            );
        }
    }
}
