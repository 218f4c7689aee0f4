//! Java `.properties` text, as Kafka's tools read `--command-config` files: the one parser of
//! the worker's config files (`WorkerConfig::from_properties_file`) and of the secrets that
//! `FileConfigProvider` reads. A leaf: it knows nothing of either.

use std::collections::BTreeMap;

/// The key/value pairs of a Java `.properties` text; a later key replaces an earlier one.
/// Errors carry the (1-based) line number.
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, String>, (usize, &'static str)> {
    let mut properties = BTreeMap::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let mut logical = line.trim_start().to_owned();
        if logical.is_empty() || logical.starts_with('#') || logical.starts_with('!') {
            continue;
        }
        // An odd number of trailing backslashes continues the line.
        while ends_with_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let (key, value) = split_key_value(&logical);
        let key = unescape(key).map_err(|reason| (index + 1, reason))?;
        let value = unescape(value).map_err(|reason| (index + 1, reason))?;
        if key.is_empty() {
            return Err((index + 1, "the line has a value but no key"));
        }
        properties.insert(key, value);
    }
    Ok(properties)
}

fn ends_with_continuation(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or whitespace (then skips whitespace and one `=`/`:`).
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => return (&line[..i], line[i + 1..].trim_start()),
            c if c.is_whitespace() => {
                let rest = line[i..].trim_start();
                let rest = rest.strip_prefix(['=', ':']).map_or(rest, str::trim_start);
                return (&line[..i], rest);
            }
            _ => {}
        }
    }
    (line, "")
}

fn unescape(s: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or("a \\u escape needs four hex digits of a character")?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}
