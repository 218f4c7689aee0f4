//! The text tables of `kroupier describe` and `kroupier tasks list`: a header line, then one
//! line per row, cells separated by spaces, so that `awk`, `cut` or a shell's `read` can take
//! them apart.
//!
//! Every cell is one word. An empty or absent value prints [`NONE`] (`-`). A character that
//! would split a cell or break a line — whitespace, a control character — prints
//! percent-encoded as in URLs (`%20` for a space, `%0A` for a newline), and so do `%` itself
//! (`%25`), `,` (`%2C`, it separates the items of a list cell) and a value that is `-` itself
//! (`%2D`). A URL decoder gives every value back.

/// What a cell shows for an empty or absent value.
const NONE: &str = "-";

/// `value` as one cell: [`NONE`] when empty, percent-encoded where it would break a column.
pub(crate) fn cell(value: &str) -> String {
    if value.is_empty() {
        return NONE.to_owned();
    }
    if value == NONE {
        return "%2D".to_owned();
    }
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_whitespace() || c.is_control() || c == '%' || c == ',' {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// An optional value as one cell: [`NONE`] when absent.
pub(crate) fn optional(value: Option<&str>) -> String {
    value.map_or_else(|| NONE.to_owned(), cell)
}

/// Items as one cell, comma-separated: [`NONE`] when there are none.
pub(crate) fn list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let cells: Vec<String> = items.into_iter().map(cell).collect();
    if cells.is_empty() {
        NONE.to_owned()
    } else {
        cells.join(",")
    }
}

/// The table: `header`, then `rows` (already made of cells), each column padded to its widest
/// cell but the last.
pub(crate) fn render<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: [&str; N]| {
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push('\n');
    };
    line(header);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_one_word_and_decodes_back() {
        assert_eq!(cell(""), "-");
        assert_eq!(cell("-"), "%2D");
        assert_eq!(cell("worker-a"), "worker-a");
        assert_eq!(cell("my client"), "my%20client");
        assert_eq!(cell("a\tb\nc"), "a%09b%0Ac");
        assert_eq!(cell("100%,x"), "100%25%2Cx");
        assert_eq!(cell("no\u{a0}break"), "no%C2%A0break");
        assert_eq!(cell("✓"), "✓");
        assert_eq!(optional(None), "-");
        assert_eq!(list([]), "-");
        assert_eq!(list(["a", "b c", "d,e"]), "a,b%20c,d%2Ce");
    }

    #[test]
    fn every_line_has_as_many_words_as_the_header() {
        let rows = [
            [cell("a b"), cell(""), list(["x", "y z"])],
            [cell("long-value"), cell("v"), list([])],
        ];
        let text = render(["ONE", "TWO", "THREE"], &rows);
        for line in text.lines() {
            assert_eq!(line.split_whitespace().count(), 3, "{text}");
        }
        assert!(text.starts_with("ONE         TWO  THREE\n"), "{text}");
    }
}
