//! A [`WorkerConfig`] from Kafka client properties (`bootstrap.servers`, `group.id`,
//! `session.timeout.ms`, ...), given as a map or as a `.properties` file, as Kafka's own tools
//! take them with `--command-config`. The keys are listed in the [module guide](super).

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use kroupier_coordinator::connection::{Secret, Security, SecurityError};

use super::WorkerConfig;

/// Why client properties could not become a [`WorkerConfig`]: the message names the key (or
/// the file and line) and what it takes; [`kind`](Self::kind) tells the cases apart.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct PropertiesError(pub(crate) Problem);

impl PropertiesError {
    /// What is wrong with the properties.
    pub fn kind(&self) -> PropertiesErrorKind {
        match &self.0 {
            Problem::UnknownKey { .. } => PropertiesErrorKind::UnknownKey,
            Problem::InvalidValue { .. } => PropertiesErrorKind::InvalidValue,
            Problem::Security(_) => PropertiesErrorKind::Security,
            Problem::Read { .. } => PropertiesErrorKind::Read,
            Problem::Syntax { .. } => PropertiesErrorKind::Syntax,
        }
    }
}

/// What a [`PropertiesError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PropertiesErrorKind {
    /// A key kroupier does not read.
    UnknownKey,
    /// A value that does not parse.
    InvalidValue,
    /// The security properties (`security.protocol`, `sasl.*`, `ssl.*`) do not make a usable
    /// [`Security`]; the error names the key, never a secret's value (its source is the
    /// [`SecurityError`]).
    Security,
    /// The properties file cannot be read (its source is the IO error).
    Read,
    /// A line of the properties file is not `key=value`.
    Syntax,
}

impl From<Problem> for PropertiesError {
    fn from(problem: Problem) -> Self {
        PropertiesError(problem)
    }
}

impl From<SecurityError> for PropertiesError {
    fn from(error: SecurityError) -> Self {
        PropertiesError(Problem::Security(error))
    }
}

/// The cases of [`PropertiesError`], with what their messages name.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Problem {
    /// A key kroupier does not read.
    #[error("unknown property `{key}`: {hint}")]
    UnknownKey {
        /// The key.
        key: String,
        /// What to do instead.
        hint: &'static str,
    },
    /// A value that does not parse.
    #[error("property `{key}` has the invalid value `{value}`: expected {expected}")]
    InvalidValue {
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// What the key takes.
        expected: &'static str,
    },
    /// The security properties (`security.protocol`, `sasl.*`, `ssl.*`) do not make a usable
    /// [`Security`]; the error names the key, never a secret's value.
    #[error("invalid security property {0}")]
    Security(#[from] SecurityError),
    /// The properties file cannot be read.
    #[error("cannot read the properties file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// A line of the properties file is not `key=value`.
    #[error("{}:{line}: {reason}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Kafka security properties (`security.protocol`, `sasl.*`, `ssl.*`) as read, the source of
/// the typed `member.cluster.security`.
///
/// Values may be secrets (`sasl.jaas.config`, `ssl.key.password`): `Debug` shows the keys only.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct SecurityProperties(BTreeMap<String, String>);

impl SecurityProperties {
    /// Whether `key` is a security property: `security.protocol`, `sasl.*` or `ssl.*`.
    pub(crate) fn is_security_key(key: &str) -> bool {
        key == "security.protocol" || key.starts_with("sasl.") || key.starts_with("ssl.")
    }

    /// The value of `key`.
    #[cfg(test)]
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The properties, sorted by key.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The keys, sorted.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Sets `key` to `value`.
    pub(crate) fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.0.insert(key.into(), value.into());
    }
}

impl fmt::Debug for SecurityProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl WorkerConfig {
    /// The defaults, changed by Kafka client `properties` (see the
    /// [table](WorkerConfig#kafka-client-properties) of keys).
    ///
    /// # Errors
    /// a [`PropertiesError`] of kind `UnknownKey` or `InvalidValue`, naming the key.
    /// Rules between values are checked later, by [`validate`](Self::validate).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use std::time::Duration;
    /// use kroupier_worker::WorkerConfig;
    ///
    /// let properties = BTreeMap::from([
    ///     ("bootstrap.servers".to_owned(), "kafka-1:9092,kafka-2:9092".to_owned()),
    ///     ("group.id".to_owned(), "orders".to_owned()),
    ///     ("session.timeout.ms".to_owned(), "6000".to_owned()),
    /// ]);
    /// let config = WorkerConfig::from_properties(&properties)?;
    /// assert_eq!(config.member.cluster.bootstrap_servers, ["kafka-1:9092", "kafka-2:9092"]);
    /// assert_eq!(config.member.membership.session_timeout, Duration::from_secs(6));
    /// # Ok::<(), kroupier_worker::PropertiesError>(())
    /// ```
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Result<Self, PropertiesError> {
        let mut config = WorkerConfig::default();
        for (key, value) in properties {
            config.set_property(key, value)?;
        }
        config.apply_security_properties()?;
        Ok(config)
    }

    /// Builds `member.cluster.security` from the security properties set so far, as one set
    /// (a key alone, say `sasl.mechanism` without `sasl.jaas.config`, is incomplete): every
    /// public way in calls it after its last `set_property`.
    ///
    /// # Errors
    /// a [`PropertiesError`] of kind `Security` naming the key at fault.
    pub(crate) fn apply_security_properties(&mut self) -> Result<(), PropertiesError> {
        self.member.cluster.security = Security::from_properties(self.security.iter())?;
        Ok(())
    }

    /// [`from_properties`](Self::from_properties) with the properties of a Java `.properties`
    /// file: `key=value` (or `key: value`) lines, `#` and `!` comments, `\` line continuations
    /// and escapes.
    ///
    /// # Errors
    /// a [`PropertiesError`] of kind `Read` or `Syntax`, or those of `from_properties`.
    pub fn from_properties_file(path: impl AsRef<Path>) -> Result<Self, PropertiesError> {
        let mut config = WorkerConfig::default();
        config.set_properties_file(path)?;
        Ok(config)
    }

    /// Sets the fields that the keys of a Java `.properties` file name (as
    /// [`from_properties_file`](Self::from_properties_file) reads it), over this config: what
    /// the file leaves out keeps its value here. A program with defaults of its own sets them
    /// first, then the file, then the flags its user gave.
    ///
    /// # Errors
    /// As [`from_properties_file`](Self::from_properties_file).
    pub fn set_properties_file(&mut self, path: impl AsRef<Path>) -> Result<(), PropertiesError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Problem::Read {
            path: path.to_owned(),
            source,
        })?;
        let properties = parse(&text).map_err(|(line, reason)| Problem::Syntax {
            path: path.to_owned(),
            line,
            reason,
        })?;
        for (key, value) in &properties {
            self.set_property(key, value)?;
        }
        self.apply_security_properties()
    }

    /// Sets the field that Kafka client property `key` names.
    ///
    /// # Errors
    /// a [`PropertiesError`] of kind `UnknownKey` or `InvalidValue`, naming the key.
    pub(crate) fn set_property(&mut self, key: &str, value: &str) -> Result<(), PropertiesError> {
        let member = &mut self.member;
        let value = value.trim();
        match key {
            "bootstrap.servers" => {
                member.cluster.bootstrap_servers = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "client.id" => value.clone_into(&mut member.cluster.connection.client_id),
            "client.rack" => self.rack = Some(value.to_owned()),
            "group.id" => value.clone_into(&mut member.membership.group_id),
            "group.instance.id" => member.membership.group_instance_id = Some(value.to_owned()),
            "session.timeout.ms" => member.membership.session_timeout = millis(key, value)?,
            "heartbeat.interval.ms" => member.membership.heartbeat_interval = millis(key, value)?,
            "rebalance.timeout.ms" => member.membership.rebalance_timeout = millis(key, value)?,
            "request.timeout.ms" => {
                member.cluster.connection.request_timeout = millis(key, value)?;
            }
            "retry.backoff.ms" => member.cluster.retry_backoff = millis(key, value)?,
            "retry.backoff.max.ms" => member.cluster.retry_backoff_max = millis(key, value)?,
            "reconnect.backoff.ms" => member.cluster.reconnect_backoff = millis(key, value)?,
            "reconnect.backoff.max.ms" => {
                member.cluster.reconnect_backoff_max = millis(key, value)?;
            }
            "socket.connection.setup.timeout.ms" => {
                member.cluster.connection.connect_timeout = millis(key, value)?;
            }
            "task.shutdown.graceful.timeout.ms" => {
                self.tasks.graceful_stop_timeout = millis(key, value)?;
            }
            "tasks.store.enabled" => {
                self.tasks.store.enabled = parse_as(key, value, "`true` or `false`")?;
            }
            "tasks.store.topic" => {
                self.tasks.store.topic = (!value.is_empty()).then(|| value.to_owned());
            }
            "tasks.checkpoint.topic" => {
                self.tasks.store.checkpoint_topic = (!value.is_empty()).then(|| value.to_owned());
            }
            "tasks.transactional.id.prefix" => {
                self.tasks.store.transactional_id_prefix =
                    (!value.is_empty()).then(|| value.to_owned());
            }
            "kroupier.worker.id" => value.clone_into(&mut self.worker_id),
            "kroupier.capacity" => {
                self.capacity = Some(parse_as(key, value, "a whole number of weight units")?);
            }
            "kroupier.task.abort.timeout.ms" => {
                self.tasks.abort_timeout = Some(millis(key, value)?);
            }
            "kroupier.self.fence.margin.ms" => {
                member.membership.self_fence_margin = Some(millis(key, value)?);
            }
            "kroupier.group.min.session.timeout.ms" => {
                member.membership.min_session_timeout = millis(key, value)?;
            }
            "kroupier.status.addr" => {
                self.status.addr = if value.eq_ignore_ascii_case("none") {
                    None
                } else {
                    Some(parse_as::<SocketAddr>(
                        key,
                        value,
                        "`ip:port` (port 0 picks a free one) or `none`",
                    )?)
                };
            }
            "kroupier.status.advertised.address" => {
                self.status.advertised_addr = if value.is_empty() {
                    None
                } else {
                    super::advertised::check(value).map_err(|_| Problem::InvalidValue {
                        key: key.to_owned(),
                        value: value.to_owned(),
                        expected: super::advertised::EXPECTED,
                    })?;
                    Some(value.to_owned())
                };
            }
            "kroupier.status.token" => {
                // The value is a secret: never quoted in an error.
                self.status.token = (!value.is_empty()).then(|| Secret::new(value));
            }
            "kroupier.status.token.protect.reads" => {
                self.status.protect_reads = parse_as(key, value, "`true` or `false`")?;
            }
            "kroupier.status.tls.certificate" => {
                self.status.tls_certificate = Some(PathBuf::from(value));
            }
            "kroupier.status.tls.key" => self.status.tls_key = Some(PathBuf::from(value)),
            "kroupier.failover.fast" => {
                self.status.fast_failover = parse_as(key, value, "`true` or `false`")?;
            }
            _ if SecurityProperties::is_security_key(key) => self.security.insert(key, value),
            "partition.assignment.strategy" => {
                return Err(Problem::UnknownKey {
                    key: key.to_owned(),
                    hint: "assignors are values: give them to WorkerBuilder::assignor",
                }
                .into());
            }
            _ => {
                return Err(Problem::UnknownKey {
                    key: key.to_owned(),
                    hint: "kroupier does not read it; fix its spelling or remove it (the \
                           documentation of kroupier_worker::WorkerConfig lists the keys)",
                }
                .into());
            }
        }
        Ok(())
    }
}

fn parse_as<T: FromStr>(
    key: &str,
    value: &str,
    expected: &'static str,
) -> Result<T, PropertiesError> {
    value.parse().map_err(|_| {
        Problem::InvalidValue {
            key: key.to_owned(),
            value: value.to_owned(),
            expected,
        }
        .into()
    })
}

fn millis(key: &str, value: &str) -> Result<Duration, PropertiesError> {
    parse_as(key, value, "a whole number of milliseconds").map(Duration::from_millis)
}
pub(crate) use crate::java_properties::parse;
