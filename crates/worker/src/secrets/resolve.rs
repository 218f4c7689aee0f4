//! Substituting references in a task's JSON config, and redacting substituted values from
//! messages.
//!
//! The resolved config exists only while the task is built: it is handed to the kind's
//! constructor and dropped. What outlives the build is [`Secrets`], the list of (reference,
//! value) pairs of this start, kept with the run so that any message that may quote a value
//! (the constructor's error, a serde message such as `invalid type: string "hunter2"`, the
//! task's own errors and panics) is redacted before it reaches a log line or a status.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use super::ConfigProviders;
use super::reference::{self, Piece};

/// A config with its references resolved, and the values that went in.
#[derive(Debug)]
pub(crate) struct Resolved<'a> {
    /// The config the constructor sees: the original when it holds no reference.
    pub(crate) config: Cow<'a, Value>,
    /// Every substituted value with its reference.
    pub(crate) secrets: Secrets,
}

/// The values substituted into one start's config, each with the reference it replaced.
#[derive(Default, Clone)]
pub(crate) struct Secrets {
    /// (reference as written, value).
    substituted: Vec<(String, String)>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The references only: a value must not reach a `{:?}` either.
        f.debug_list()
            .entries(self.substituted.iter().map(|(reference, _)| reference))
            .finish()
    }
}

/// Why a config's references could not be resolved; names the reference, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unresolved {
    /// The reference as written (or the malformed text).
    pub(crate) reference: String,
    /// Why, and what to do.
    pub(crate) message: String,
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "secret reference `{}` does not resolve: {}",
            self.reference, self.message
        )
    }
}

impl ConfigProviders {
    /// `config` with every reference in its string values replaced by its value.
    ///
    /// # Errors
    /// [`Unresolved`] for the first reference that is malformed, names an unknown provider, or
    /// that its provider cannot answer.
    pub(crate) fn resolve<'a>(&self, config: &'a Value) -> Result<Resolved<'a>, Unresolved> {
        let mut secrets = Secrets::default();
        if !holds_reference(config) {
            return Ok(Resolved {
                config: Cow::Borrowed(config),
                secrets,
            });
        }
        let mut resolved = config.clone();
        self.substitute(&mut resolved, &mut secrets)?;
        Ok(Resolved {
            config: Cow::Owned(resolved),
            secrets,
        })
    }

    fn substitute(&self, value: &mut Value, secrets: &mut Secrets) -> Result<(), Unresolved> {
        match value {
            Value::String(s) if reference::may_hold_reference(s) => {
                *s = self.substitute_str(s, secrets)?;
                Ok(())
            }
            Value::Array(items) => items
                .iter_mut()
                .try_for_each(|item| self.substitute(item, secrets)),
            Value::Object(map) => map
                .values_mut()
                .try_for_each(|item| self.substitute(item, secrets)),
            _ => Ok(()),
        }
    }

    fn substitute_str(&self, s: &str, secrets: &mut Secrets) -> Result<String, Unresolved> {
        let pieces = reference::parse(s).map_err(|malformed| Unresolved {
            reference: malformed.text,
            message: malformed.reason.to_owned(),
        })?;
        let mut out = String::with_capacity(s.len());
        for piece in pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Reference(r) => {
                    let provider = self.get(r.provider).ok_or_else(|| Unresolved {
                        reference: r.text.to_owned(),
                        message: format!(
                            "no config provider `{}` on this worker (it has: {}); register it \
                             with WorkerBuilder::config_provider",
                            r.provider,
                            self.names()
                        ),
                    })?;
                    let value = provider.get(r.path, r.key).map_err(|error| Unresolved {
                        reference: r.text.to_owned(),
                        // A provider's message should hold no value; redacted anyway, in
                        // case it quotes one resolved before it.
                        message: secrets.redact(&error.to_string()),
                    })?;
                    out.push_str(&value);
                    secrets.substituted.push((r.text.to_owned(), value));
                }
            }
        }
        Ok(out)
    }
}

/// Whether any string in `value` may hold a reference.
fn holds_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => reference::may_hold_reference(s),
        Value::Array(items) => items.iter().any(holds_reference),
        Value::Object(map) => map.values().any(holds_reference),
        _ => false,
    }
}

/// What a message says instead when a value would still show after redaction (a value that
/// is part of its own reference's text, or of the message's other words).
const WITHHELD: &str = "[message withheld: it would show a secret value]";

impl Secrets {
    /// Whether nothing was substituted (nothing to redact).
    pub(crate) fn is_empty(&self) -> bool {
        self.substituted.is_empty()
    }

    /// `message` with every substituted value replaced by its reference: the value as is, and
    /// as Rust's and JSON's string escaping quote it (serde's messages use the former). Should
    /// a value still show after that, the whole message is withheld.
    pub(crate) fn redact(&self, message: &str) -> String {
        if self.is_empty() {
            return message.to_owned();
        }
        let mut forms: Vec<(String, &str)> = Vec::new();
        for (reference, value) in &self.substituted {
            if value.is_empty() {
                continue;
            }
            for form in forms_of(value) {
                if !form.is_empty() && !forms.iter().any(|(f, _)| *f == form) {
                    forms.push((form, reference));
                }
            }
        }
        // Longest first: a value that holds another is replaced whole.
        forms.sort_by_key(|(form, _)| std::cmp::Reverse(form.len()));
        let mut redacted = message.to_owned();
        for (form, reference) in &forms {
            if redacted.contains(form.as_str()) {
                redacted = redacted.replace(form.as_str(), reference);
            }
        }
        if forms
            .iter()
            .any(|(form, _)| redacted.contains(form.as_str()))
        {
            return WITHHELD.to_owned();
        }
        redacted
    }
}

/// The ways a message may spell `value`: as is, escaped as by `{:?}`, escaped as JSON.
fn forms_of(value: &str) -> [String; 3] {
    let unquote = |quoted: String| {
        quoted
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .map(str::to_owned)
            .unwrap_or(quoted)
    };
    [
        value.to_owned(),
        unquote(format!("{value:?}")),
        unquote(serde_json::to_string(value).unwrap_or_default()),
    ]
}
