//! Secret references in task configs: `${env:NAME}` and `${file:PATH:KEY}` (and any provider
//! registered with [`WorkerBuilder::config_provider`](crate::WorkerBuilder::config_provider)),
//! resolved on the worker each time a task is built to start, never written anywhere.
//!
//! Why: a task's config lives in plain JSON in the task store's Kafka topic, which anyone who
//! may read the topic can read, and which `kroupier tasks list`, the status API and the console
//! print. A reference keeps the secret on the workers; the store, and everything that shows a
//! config, holds only the reference.
//!
//! - [`reference`]: the syntax;
//! - [`providers`]: the built-in `env` and `file` providers;
//! - [`resolve`]: substitution in a JSON config, and the redaction of the messages that could
//!   quote a substituted value.

mod providers;
pub(crate) mod reference;
mod resolve;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

pub(crate) use resolve::Secrets;

/// A source of secret values for the references in task configs, such as Kafka Connect's
/// config providers (KIP-297).
///
/// A string value anywhere in a task's JSON config (in nested objects and arrays too; keys are
/// never read) may hold references `${NAME:KEY}` or `${NAME:PATH:KEY}`, where `NAME` is the
/// name the provider was registered under. Each time a task is built to start (its first start
/// and every restart), the worker asks the provider for each reference's value and puts it in
/// place of the reference, inside the string; the task's constructor sees the values, the task
/// store keeps the references. `$${` stands for a literal `${`; a `${` not followed by a
/// provider name and `:` is plain text.
///
/// Two providers are built in: `env` (`${env:NAME}`, the worker's environment variable) and
/// `file` (`${file:PATH:KEY}`, the key of a Java properties file on the worker). Register one
/// of your own for a secret manager, a vault, a cloud KMS.
///
/// A reference that does not resolve (an unknown provider, an error from the provider) makes
/// the task `FAILED` with a reason that names the reference and the provider's message, as an
/// invalid config does. Any message that could quote a substituted value (the constructor's,
/// the task's own errors and panics) shows the reference in its place.
///
/// `get` is called on the worker's runtime, synchronously, while the task is built: answer from
/// memory. A provider that fetches over the network keeps its values in a cache it refreshes
/// on its own (a tokio task), and answers from the cache.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::{Arc, RwLock};
/// use kroupier_worker::{ConfigProvider, WorkerBuilder, WorkerConfig};
///
/// /// `${vault:PATH:KEY}`: the values a background task fetched from the vault.
/// #[derive(Default)]
/// struct Vault {
///     fetched: Arc<RwLock<HashMap<(String, String), String>>>,
/// }
///
/// impl ConfigProvider for Vault {
///     fn get(
///         &self,
///         path: Option<&str>,
///         key: &str,
///     ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
///         let path = path.ok_or("write ${vault:PATH:KEY}")?;
///         let fetched = self.fetched.read().map_err(|_| "the vault cache is poisoned")?;
///         fetched
///             .get(&(path.to_owned(), key.to_owned()))
///             .cloned()
///             .ok_or_else(|| format!("the vault has no key {key} under {path}").into())
///     }
/// }
///
/// // A task config may now say {"password": "${vault:secret/orders-db:password}"}.
/// let builder = WorkerBuilder::new(WorkerConfig::new("orders"))
///     .config_provider("vault", Vault::default());
/// ```
pub trait ConfigProvider: Send + Sync + 'static {
    /// The value of `key` under `path` (`None` when the reference has no path: `${NAME:KEY}`).
    ///
    /// # Errors
    /// Why there is no value; it becomes part of the task's `FAILED` reason, so name what is
    /// missing and what to do, never a value.
    fn get(
        &self,
        path: Option<&str>,
        key: &str,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
}

/// What a provider's error is.
pub(crate) type ProviderError = Box<dyn std::error::Error + Send + Sync>;

/// The providers a worker resolves references with, by name: `env` and `file`, and those the
/// application registered.
#[derive(Clone)]
pub(crate) struct ConfigProviders {
    providers: BTreeMap<String, Arc<dyn ConfigProvider>>,
}

impl Default for ConfigProviders {
    fn default() -> Self {
        let mut providers = ConfigProviders {
            providers: BTreeMap::new(),
        };
        providers.insert("env", Arc::new(providers::EnvProvider));
        providers.insert("file", Arc::new(providers::FileProvider));
        providers
    }
}

impl fmt::Debug for ConfigProviders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.providers.keys()).finish()
    }
}

impl ConfigProviders {
    /// Registers `provider` as `name`, replacing one of that name (a built-in one too).
    pub(crate) fn insert(&mut self, name: impl Into<String>, provider: Arc<dyn ConfigProvider>) {
        self.providers.insert(name.into(), provider);
    }

    /// The provider called `name`.
    fn get(&self, name: &str) -> Option<&Arc<dyn ConfigProvider>> {
        self.providers.get(name)
    }

    /// The registered names, sorted, for the message about an unknown provider.
    fn names(&self) -> String {
        let names: Vec<&str> = self.providers.keys().map(String::as_str).collect();
        names.join(", ")
    }
}

#[cfg(test)]
mod tests;
