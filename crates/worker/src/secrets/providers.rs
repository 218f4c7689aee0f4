//! The two built-in providers: `env` (this worker's environment) and `file` (a Java properties
//! file on this worker's disk). Each answers from the source at every call, never from a
//! cache: a secret rotated on the worker is picked up by the task's next start.
//!
//! Their errors name what is missing (the variable, the file, the key) and never a value.

use std::path::Path;

use super::{ConfigProvider, ProviderError};

/// `${env:NAME}`: the environment variable `NAME` of the worker process.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EnvProvider;

impl ConfigProvider for EnvProvider {
    fn get(&self, path: Option<&str>, key: &str) -> Result<String, ProviderError> {
        if path.is_some() {
            return Err("the env provider takes no path: write ${env:NAME}".into());
        }
        match std::env::var(key) {
            Ok(value) => Ok(value),
            Err(std::env::VarError::NotPresent) => Err(format!(
                "the environment variable {key} is not set on this worker; set it in the \
                 worker's environment"
            )
            .into()),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!(
                "the environment variable {key} is not valid UTF-8 on this worker"
            )
            .into()),
        }
    }
}

/// `${file:PATH:KEY}`: the value of `KEY` in the Java properties file `PATH` (`key=value` or
/// `key: value` lines, `#` and `!` comments), read at every call.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FileProvider;

impl ConfigProvider for FileProvider {
    fn get(&self, path: Option<&str>, key: &str) -> Result<String, ProviderError> {
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            return Err("the file provider needs a path and a key: write ${file:PATH:KEY}".into());
        };
        let text = std::fs::read_to_string(Path::new(path)).map_err(|error| {
            // The IO error says why (missing, permission); it holds no content.
            format!("cannot read the properties file {path} on this worker: {error}")
        })?;
        // The parser's errors carry a line number and a rule, never the line's text.
        let mut properties = crate::java_properties::parse(&text).map_err(|(line, reason)| {
            format!("the properties file {path} does not parse at line {line}: {reason}")
        })?;
        properties
            .remove(key)
            .ok_or_else(|| format!("the properties file {path} has no key {key}").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kroupier-secrets-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("secrets.properties");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn env_reads_the_process_environment() {
        // Cargo sets CARGO_PKG_NAME for the tests it runs; the unsafe `set_var` is not needed.
        let value = EnvProvider.get(None, "CARGO_PKG_NAME").unwrap();
        assert_eq!(value, "kroupier-worker");
        let error = EnvProvider
            .get(None, "KROUPIER_SURELY_UNSET_VARIABLE")
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("KROUPIER_SURELY_UNSET_VARIABLE is not set"),
            "{error}"
        );
        let error = EnvProvider.get(Some("x"), "Y").unwrap_err();
        assert!(error.to_string().contains("no path"), "{error}");
    }

    #[test]
    fn file_reads_properties_with_both_separators_and_comments() {
        let path = temp_file(
            "read",
            "# comment\n! another\npassword = s3cret\nuser: app\n  spaced\\ key=v\n",
        );
        let path = path.to_str().unwrap();
        assert_eq!(FileProvider.get(Some(path), "password").unwrap(), "s3cret");
        assert_eq!(FileProvider.get(Some(path), "user").unwrap(), "app");
        assert_eq!(FileProvider.get(Some(path), "spaced key").unwrap(), "v");
        let error = FileProvider
            .get(Some(path), "token")
            .unwrap_err()
            .to_string();
        assert!(error.contains("has no key token"), "{error}");
        assert!(!error.contains("s3cret"), "{error}");
    }

    #[test]
    fn file_errors_name_the_file_and_never_its_content() {
        let error = FileProvider
            .get(Some("/nonexistent/kroupier.properties"), "k")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("/nonexistent/kroupier.properties"),
            "{error}"
        );
        let error = FileProvider.get(None, "k").unwrap_err().to_string();
        assert!(error.contains("${file:PATH:KEY}"), "{error}");
        let path = temp_file("bad", "ok=1\nbad=\\u12zz-hunter2\n");
        let error = FileProvider
            .get(path.to_str(), "ok")
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 2"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}
