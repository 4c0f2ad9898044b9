//! Clojure `pr-str` rendering of a vector of strings and nils.

/// Renders `identity` exactly as Clojure's `pr-str` prints a vector of
/// strings and nils (with the default `*print-readably*`).
///
/// * The vector is `[` + elements joined by one space + `]`; empty is `[]`.
/// * `None` prints as `nil`.
/// * A string prints in double quotes with exactly these escapes:
///   `"` → `\"`, `\` → `\\`, newline → `\n`, tab → `\t`,
///   carriage return → `\r`, form feed → `\f`, backspace → `\b`.
///   Every other character, including other control characters (`U+0000`,
///   `U+001B`, `U+007F`, …) and all non-ASCII text, is printed as-is.
///
/// ```
/// use blue_identity::render;
///
/// assert_eq!(render(&[]), "[]");
/// assert_eq!(
///     render(&[Some("a".into()), None, Some("x\"y".into())]),
///     r#"["a" nil "x\"y"]"#
/// );
/// assert_eq!(render(&[Some("tab\there é".into())]), "[\"tab\\there é\"]");
/// ```
#[must_use]
pub fn render(identity: &[Option<String>]) -> String {
    let capacity = 2 + identity
        .iter()
        .map(|element| element.as_ref().map_or(3, |s| s.len() + 2) + 1)
        .sum::<usize>();
    let mut out = String::with_capacity(capacity);
    out.push('[');
    for (index, element) in identity.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        match element {
            None => out.push_str("nil"),
            Some(string) => push_string(&mut out, string),
        }
    }
    out.push(']');
    out
}

/// Appends `string` as a double-quoted, escaped Clojure string literal.
fn push_string(out: &mut String, string: &str) {
    out.push('"');
    for c in string.chars() {
        match escape(c) {
            Some(escaped) => out.push_str(escaped),
            None => out.push(c),
        }
    }
    out.push('"');
}

/// The escape sequence Clojure's printer uses for `c`, if any
/// (`clojure.core/char-escape-string`).
fn escape(c: char) -> Option<&'static str> {
    match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '\n' => Some("\\n"),
        '\t' => Some("\\t"),
        '\r' => Some("\\r"),
        '\u{0c}' => Some("\\f"),
        '\u{08}' => Some("\\b"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    fn some(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn empty_vector_renders_as_empty_brackets() {
        assert_eq!(render(&[]), "[]");
    }

    #[test]
    fn none_renders_as_nil() {
        assert_eq!(render(&[None]), "[nil]");
        assert_eq!(render(&[None, None]), "[nil nil]");
    }

    #[test]
    fn elements_are_joined_by_one_space() {
        assert_eq!(
            render(&[some("local-kubernetes"), some("dev"), some("dev--web")]),
            r#"["local-kubernetes" "dev" "dev--web"]"#
        );
    }

    #[test]
    fn string_nil_is_quoted_and_distinct_from_none() {
        assert_eq!(render(&[some("nil"), None]), r#"["nil" nil]"#);
    }

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(render(&[some(r#"a"b\c"#)]), r#"["a\"b\\c"]"#);
    }

    #[test]
    fn each_escaped_control_char_uses_its_short_escape() {
        assert_eq!(render(&[some("\n\t\r\u{0c}\u{08}")]), r#"["\n\t\r\f\b"]"#);
    }

    #[test]
    fn other_control_chars_are_printed_raw() {
        let raw = "\u{00}\u{01}\u{0b}\u{1b}\u{1f}\u{7f}\u{85}";
        assert_eq!(render(&[some(raw)]), format!("[\"{raw}\"]"));
    }

    #[test]
    fn non_ascii_is_printed_raw() {
        assert_eq!(render(&[some("é日本😀")]), "[\"é日本😀\"]");
    }
}
