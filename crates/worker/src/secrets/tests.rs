//! Resolution of references in JSON configs, and redaction: a substituted value never shows
//! in a message built from the resolved config.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;

use super::resolve::Unresolved;
use super::{ConfigProvider, ConfigProviders};
use crate::TaskContext;
use crate::TaskSpec;
use crate::task::{Registry, Task, TaskError};

/// A provider answering from a map: `${mem:KEY}`.
struct Memory(HashMap<String, String>);

impl ConfigProvider for Memory {
    fn get(
        &self,
        _path: Option<&str>,
        key: &str,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        self.0
            .get(key)
            .cloned()
            .ok_or_else(|| format!("no key {key}").into())
    }
}

fn providers(pairs: &[(&str, &str)]) -> ConfigProviders {
    let mut providers = ConfigProviders::default();
    let map = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    providers.insert("mem", Arc::new(Memory(map)));
    providers
}

#[test]
fn references_resolve_in_nested_strings_and_the_original_is_untouched() {
    let providers = providers(&[("pw", "hunter2"), ("user", "app")]);
    let config = json!({
        "url": "postgres://${mem:user}:${mem:pw}@db/orders",
        "nested": {"list": ["${mem:pw}", 5, null, {"deep": "${mem:user}"}]},
        "${mem:pw}": "keys are never read",
        "escaped": "$${mem:pw}",
        "plain": "no reference",
    });
    let before = config.clone();
    let resolved = providers.resolve(&config).unwrap();
    assert_eq!(
        *resolved.config,
        json!({
            "url": "postgres://app:hunter2@db/orders",
            "nested": {"list": ["hunter2", 5, null, {"deep": "app"}]},
            "${mem:pw}": "keys are never read",
            "escaped": "${mem:pw}",
            "plain": "no reference",
        })
    );
    assert_eq!(config, before);
    assert_eq!(
        format!("{:?}", resolved.secrets),
        // In the map's key order; the references only, never a value.
        r#"["${mem:pw}", "${mem:user}", "${mem:user}", "${mem:pw}"]"#
    );
}

#[test]
fn a_config_without_references_is_borrowed() {
    let config = json!({"every_ms": 100, "name": "$ {not}"});
    let resolved = ConfigProviders::default().resolve(&config).unwrap();
    assert!(matches!(resolved.config, std::borrow::Cow::Borrowed(_)));
    assert!(resolved.secrets.is_empty());
}

#[test]
fn unresolvable_references_name_the_reference_never_a_value() {
    let providers = providers(&[("pw", "hunter2")]);
    let cases = [
        (
            json!({"a": "${env:KROUPIER_SURELY_UNSET}"}),
            "${env:KROUPIER_SURELY_UNSET}",
            "not set",
        ),
        (
            json!({"a": "${file:/nonexistent/x.properties:pw}"}),
            "${file:/nonexistent/x.properties:pw}",
            "cannot read",
        ),
        (
            json!({"a": "${vault:secret/x:pw}"}),
            "${vault:secret/x:pw}",
            "no config provider `vault`",
        ),
        (
            json!({"a": "${mem:pw}", "b": "${env:}"}),
            "${env:}",
            "names no key",
        ),
        (
            json!({"a": "${mem:pw}", "b": ["${mem:nope}"]}),
            "${mem:nope}",
            "no key nope",
        ),
        (json!("${env:X"), "${env:X", "closing"),
    ];
    for (config, reference, why) in cases {
        let Unresolved {
            reference: named,
            message,
        } = providers.resolve(&config).unwrap_err();
        assert_eq!(named, reference);
        assert!(message.contains(why), "{reference}: {message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
}

#[test]
fn redaction_covers_the_value_as_serde_quotes_it() {
    let providers = providers(&[("pw", "a\"b\\c\n")]);
    let config = json!({"pw": "${mem:pw}"});
    let resolved = providers.resolve(&config).unwrap();
    // serde's message escapes the string as `{:?}` does.
    let message = format!("invalid type: string {:?}, expected u64", "a\"b\\c\n");
    assert_eq!(
        resolved.secrets.redact(&message),
        "invalid type: string \"${mem:pw}\", expected u64"
    );
}

#[test]
fn a_value_that_would_show_through_its_own_reference_withholds_the_message() {
    // The value `mem` is part of its reference `${mem:k}`.
    let providers = providers(&[("k", "mem")]);
    let config = json!("${mem:k}");
    let resolved = providers.resolve(&config).unwrap();
    let redacted = resolved.secrets.redact("value mem is wrong");
    assert!(!redacted.contains("mem"), "{redacted}");
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct Port {
    host: String,
    port: u64,
}

impl Task for Port {
    async fn run(self, _ctx: TaskContext) -> Result<(), TaskError> {
        Ok(())
    }
}

proptest! {
    /// Whatever the secret (quotes, escapes, unicode), and wherever it lands in the config,
    /// the message of a constructor that refuses the resolved config does not hold it.
    #[test]
    fn a_substituted_value_never_shows_in_the_constructors_message(
        secret in "[^\u{0}]{6,24}",
        prefix in "[a-z:/]{0,6}",
        field in 0usize..3,
    ) {
        let providers = providers(&[("s", &secret)]);
        let value = format!("{prefix}${{mem:s}}");
        let config = match field {
            0 => json!({"host": "h", "port": value}),
            1 => json!({"host": 7, "port": value}),
            _ => json!({"host": [value], "port": 1}),
        };
        let resolved = providers.resolve(&config).unwrap();
        let mut registry = Registry::new();
        registry.register::<Port>("port");
        let spec = TaskSpec::new("t", "port", config.clone());
        let Err(error) = registry.build_config(&spec, &resolved.config) else {
            // A config that deserializes (a secret that happens to be a number) has no message.
            return Ok(());
        };
        let message = resolved.secrets.redact(&error.to_string());
        prop_assert!(!message.contains(&secret), "{message}");
        prop_assert!(!message.contains(&format!("{secret:?}").trim_matches('"').to_owned()), "{message}");
    }
}
