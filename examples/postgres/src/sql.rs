//! Quoting for the SQL this package sends. Role and database names are
//! identifiers, which cannot be bind parameters, and `CREATE`/`ALTER ROLE`
//! take their password and comment as literals, not parameters either.
//! Names are validated first ([`crate::desired`]); quoting is the second
//! line of defence, not the only one.

/// `name` as a quoted identifier: in double quotes, with every `"`
/// doubled, so it is taken exactly as written (case included).
///
/// ```
/// use postgres_operator::sql::quote_ident;
/// assert_eq!(quote_ident("app"), r#""app""#);
/// assert_eq!(quote_ident(r#"a"b"#), r#""a""b""#);
/// ```
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A value that cannot be a literal safely: it holds a backslash (taken as
/// an escape when `standard_conforming_strings` is off), a NUL or a control
/// character.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a value cannot be written as an SQL literal")]
pub struct UnsafeLiteral;

/// `value` as a string literal: in single quotes, every `'` doubled;
/// refuses what could be read differently by a misconfigured server.
///
/// ```
/// use postgres_operator::sql::quote_literal;
/// assert_eq!(quote_literal("it's").unwrap(), "'it''s'");
/// assert!(quote_literal(r"a\b").is_err());
/// ```
pub fn quote_literal(value: &str) -> Result<String, UnsafeLiteral> {
    if value.chars().any(|c| c == '\\' || c.is_control()) {
        return Err(UnsafeLiteral);
    }
    Ok(format!("'{}'", value.replace('\'', "''")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_keep_case_and_double_every_quote() {
        assert_eq!(quote_ident("App"), "\"App\"");
        assert_eq!(quote_ident("\""), "\"\"\"\"");
        assert_eq!(
            quote_ident("x\"; DROP ROLE y; --"),
            "\"x\"\"; DROP ROLE y; --\""
        );
        assert_eq!(quote_ident(""), "\"\"");
    }

    #[test]
    fn literals_double_quotes_and_refuse_escapes_and_controls() {
        assert_eq!(quote_literal("").unwrap(), "''");
        assert_eq!(quote_literal("'; --").unwrap(), "'''; --'");
        for bad in ["a\\", "a\0b", "line\nbreak", "tab\t"] {
            assert_eq!(quote_literal(bad), Err(UnsafeLiteral), "{bad:?}");
        }
    }
}
