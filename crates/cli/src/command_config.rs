//! `--command-config FILE`: Kafka client properties for every subcommand that connects, as
//! Kafka's own tools take them (`kafka-consumer-groups.sh --command-config`).
//!
//! The file is read by the worker's parser,
//! [`WorkerConfig::from_properties_file`]: a Java `.properties` file whose keys are Kafka's
//! (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.location`, ...)
//! or kroupier's. An unknown key, a bad value or an unreadable file ends the command with exit
//! code 2 and the reason on stderr; a reason names the key, never a secret's value.
//!
//! - `describe`, `watch` and `demo --bootstrap` connect with the file's security settings
//!   (TLS, SASL); its other keys are checked but not used.
//! - The workers `demo` starts get the file as is: their defaults, then its keys, then the
//!   flags given.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;

use kroupier_coordinator::connection::Security;
use kroupier_worker::WorkerConfig;

/// A mistake in the command line or in a file it names: exit code 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for UsageError {}

/// The `--command-config` flag, flattened into each subcommand that connects.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct CommandConfig {
    /// Kafka client properties (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
    /// `ssl.truststore.location`, ...), as Kafka's own tools take them.
    #[arg(long, value_name = "FILE")]
    pub command_config: Option<PathBuf>,
}

impl CommandConfig {
    /// `defaults` with the file's keys set over them (`defaults` without a file): what the file
    /// leaves out keeps its default, so a subcommand's own defaults never override the file.
    ///
    /// # Errors
    /// A [`UsageError`] naming the file and the key at fault.
    pub(crate) fn worker_config(
        &self,
        mut defaults: WorkerConfig,
    ) -> Result<WorkerConfig, UsageError> {
        if let Some(path) = &self.command_config {
            defaults
                .set_properties_file(path)
                .map_err(|e| UsageError(format!("--command-config {}: {e}", path.display())))?;
        }
        Ok(defaults)
    }

    /// The connection security the file sets (PLAINTEXT without a file).
    ///
    /// # Errors
    /// As [`worker_config`](Self::worker_config).
    pub(crate) fn security(&self) -> Result<Security, UsageError> {
        Ok(self
            .worker_config(WorkerConfig::default())?
            .member
            .cluster
            .security)
    }
}
