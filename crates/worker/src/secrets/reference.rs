//! The syntax of a secret reference inside a config string: `${provider:key}` or
//! `${provider:path:key}`, with `$${` for a literal `${`.
//!
//! A reference starts at `${` followed by a provider name (ASCII letters, digits, `_`, `.`,
//! `-`) and a `:`, and ends at the next `}`; the part between the first `:` and the `}` is the
//! provider's argument, split at its last `:` into a path and a key (Kafka Connect's
//! `${provider:[path:]key}`). Any other `${` is plain text, so a config that never meant a
//! reference (`${HOME}`, a template) is left alone. Nothing here panics, whatever the text.

/// One reference found in a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference<'a> {
    /// The whole reference as written, `${...}`: what every message shows.
    pub(crate) text: &'a str,
    /// The provider's name (`env`, `file`, ...).
    pub(crate) provider: &'a str,
    /// The part before the last `:` of the argument, if it has one.
    pub(crate) path: Option<&'a str>,
    /// The part after the last `:` of the argument.
    pub(crate) key: &'a str,
}

/// A piece of a config string: text kept as is, or a reference to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// Literal text (an escaped `$${` already turned into `${`).
    Text(&'a str),
    /// A reference.
    Reference(Reference<'a>),
}

/// Why a string's references cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed {
    /// The offending text, from its `${` (at most up to the next `}`), with no value in it:
    /// nothing has been resolved yet.
    pub(crate) text: String,
    /// What is wrong and what to write instead.
    pub(crate) reason: &'static str,
}

/// Whether `s` may hold a reference (or an escape): the fast path for the common config
/// string without `${`.
pub(crate) fn may_hold_reference(s: &str) -> bool {
    s.contains("${")
}

/// Splits `s` into text and references.
///
/// # Errors
/// [`Malformed`] for a reference without its `}` or with an empty key.
pub(crate) fn parse(s: &str) -> Result<Vec<Piece<'_>>, Malformed> {
    let mut pieces = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        // `$${`: an escaped, literal `${`.
        if at > 0 && rest.as_bytes()[at - 1] == b'$' {
            push_text(&mut pieces, &rest[..at - 1]);
            push_text(&mut pieces, "${");
            rest = &rest[at + 2..];
            continue;
        }
        let inner = &rest[at + 2..];
        let name_len = inner
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            .count();
        if name_len == 0 || inner.as_bytes().get(name_len) != Some(&b':') {
            // Not a reference: plain text up to and including the `${`.
            push_text(&mut pieces, &rest[..at + 2]);
            rest = inner;
            continue;
        }
        let Some(close) = inner.find('}') else {
            return Err(Malformed {
                text: rest[at..].to_owned(),
                reason: "the reference has no closing `}`; write ${provider:key}, or $${ for \
                         a literal ${",
            });
        };
        let text = &rest[at..at + 2 + close + 1];
        let provider = &inner[..name_len];
        let argument = &inner[name_len + 1..close];
        let (path, key) = match argument.rsplit_once(':') {
            Some((path, key)) => (Some(path), key),
            None => (None, argument),
        };
        if key.is_empty() {
            return Err(Malformed {
                text: text.to_owned(),
                reason: "the reference names no key; write ${env:NAME} or ${file:PATH:KEY}",
            });
        }
        push_text(&mut pieces, &rest[..at]);
        pieces.push(Piece::Reference(Reference {
            text,
            provider,
            path,
            key,
        }));
        rest = &inner[close + 1..];
    }
    push_text(&mut pieces, rest);
    Ok(pieces)
}

fn push_text<'a>(pieces: &mut Vec<Piece<'a>>, text: &'a str) {
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn reference<'a>(
        text: &'a str,
        provider: &'a str,
        path: Option<&'a str>,
        key: &'a str,
    ) -> Piece<'a> {
        Piece::Reference(Reference {
            text,
            provider,
            path,
            key,
        })
    }

    #[test]
    fn finds_env_and_file_references_among_text() {
        assert_eq!(
            parse("postgres://app:${env:DB_PASSWORD}@db/${file:/etc/app.properties:name}").unwrap(),
            vec![
                Piece::Text("postgres://app:"),
                reference("${env:DB_PASSWORD}", "env", None, "DB_PASSWORD"),
                Piece::Text("@db/"),
                reference(
                    "${file:/etc/app.properties:name}",
                    "file",
                    Some("/etc/app.properties"),
                    "name"
                ),
            ]
        );
        // The path is everything up to the last `:`.
        assert_eq!(
            parse("${vault:secret/db:x:password}").unwrap(),
            vec![reference(
                "${vault:secret/db:x:password}",
                "vault",
                Some("secret/db:x"),
                "password"
            )]
        );
    }

    #[test]
    fn text_that_is_no_reference_stays_as_is() {
        for s in [
            "",
            "plain",
            "${HOME}",
            "${",
            "$",
            "a ${ b",
            "${:x}",
            "${ env:X}",
            "}",
        ] {
            let pieces = parse(s).unwrap();
            let joined: String = pieces
                .iter()
                .map(|p| match p {
                    Piece::Text(t) => *t,
                    Piece::Reference(_) => panic!("{s:?} holds no reference"),
                })
                .collect();
            assert_eq!(joined, s);
        }
    }

    #[test]
    fn a_doubled_dollar_escapes_a_reference() {
        assert_eq!(
            parse("$${env:X} and $${").unwrap(),
            vec![
                Piece::Text("${"),
                Piece::Text("env:X} and "),
                Piece::Text("${"),
            ]
        );
    }

    #[test]
    fn malformed_references_are_errors_that_say_what_to_write() {
        let error = parse("x ${env:}").unwrap_err();
        assert_eq!(error.text, "${env:}");
        assert!(error.reason.contains("no key"), "{error:?}");
        let error = parse("${file:/etc/x:}").unwrap_err();
        assert_eq!(error.text, "${file:/etc/x:}");
        let error = parse("${env:X").unwrap_err();
        assert_eq!(error.text, "${env:X");
        assert!(error.reason.contains("closing"), "{error:?}");
    }

    proptest! {
        /// Any text: an answer, never a panic; and text without a reference comes back whole.
        #[test]
        fn never_panics(s in "(\\PC|\\$|\\{|\\}|:){0,40}") {
            if let Ok(pieces) = parse(&s) {
                for piece in pieces {
                    if let Piece::Reference(r) = piece {
                        prop_assert!(!r.key.is_empty());
                        let framed = r.text.starts_with("${") && r.text.ends_with('}');
                        prop_assert!(framed, "{:?}", r.text);
                    }
                }
            }
        }
    }
}
