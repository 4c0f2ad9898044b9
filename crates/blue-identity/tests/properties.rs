//! Property tests of the renderer's invariants over arbitrary inputs.

use blue_identity::{render, state_identity_hash};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

/// Characters the printer escapes (and that must never appear raw inside a
/// rendered string).
const ESCAPED: [char; 7] = ['"', '\\', '\n', '\t', '\r', '\u{0c}', '\u{08}'];

/// Reads a rendering back: the inverse of `render`, accepting only exactly
/// what the printer may produce (single-space separators, `nil`, and the seven
/// escapes), and rejecting any raw escaped character inside a string.
fn parse(rendered: &str) -> Result<Vec<Option<String>>, String> {
    let mut chars = rendered.chars().peekable();
    if chars.next() != Some('[') {
        return Err("does not start with `[`".into());
    }
    let mut out = Vec::new();
    if chars.peek() == Some(&']') {
        chars.next();
    } else {
        loop {
            match chars.next() {
                Some('n') => {
                    if (chars.next(), chars.next()) != (Some('i'), Some('l')) {
                        return Err("bad `nil`".into());
                    }
                    out.push(None);
                }
                Some('"') => {
                    let mut s = String::new();
                    loop {
                        match chars.next() {
                            None => return Err("unterminated string".into()),
                            Some('"') => break,
                            Some('\\') => s.push(match chars.next() {
                                Some('"') => '"',
                                Some('\\') => '\\',
                                Some('n') => '\n',
                                Some('t') => '\t',
                                Some('r') => '\r',
                                Some('f') => '\u{0c}',
                                Some('b') => '\u{08}',
                                other => return Err(format!("unknown escape {other:?}")),
                            }),
                            Some(c) if ESCAPED.contains(&c) => {
                                return Err(format!("raw {c:?} inside a string"))
                            }
                            Some(c) => s.push(c),
                        }
                    }
                    out.push(Some(s));
                }
                other => return Err(format!("unexpected element start {other:?}")),
            }
            match chars.next() {
                Some(' ') => continue,
                Some(']') => break,
                other => return Err(format!("unexpected separator {other:?}")),
            }
        }
    }
    match chars.next() {
        None => Ok(out),
        Some(c) => Err(format!("trailing {c:?} after `]`")),
    }
}

fn interesting_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => prop::sample::select(ESCAPED.to_vec()),
        3 => (0u32..=0x1f).prop_map(|c| char::from_u32(c).expect("C0 control")),
        1 => Just('\u{7f}'),
        3 => prop::char::range(' ', '~'),
        2 => prop::sample::select(vec!['é', '日', '本', '😀', '\u{85}', '\u{a0}', '\u{2028}', '\u{feff}', 'n', 'i', 'l', '[', ']', ' ']),
        2 => any::<char>(),
    ]
}

fn identity() -> impl Strategy<Value = Vec<Option<String>>> {
    let string = prop_oneof![
        4 => prop::collection::vec(interesting_char(), 0..16).prop_map(String::from_iter),
        1 => Just(String::new()),
        1 => Just("nil".to_string()),
    ];
    prop::collection::vec(prop::option::weighted(0.8, string), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn rendering_is_bracketed(input in identity()) {
        let rendered = render(&input);
        prop_assert!(rendered.starts_with('['), "{rendered:?}");
        prop_assert!(rendered.ends_with(']'), "{rendered:?}");
    }

    #[test]
    fn rendering_reads_back_to_the_input(input in identity()) {
        let rendered = render(&input);
        let parsed = parse(&rendered);
        prop_assert_eq!(parsed, Ok(input), "rendered {:?}", rendered);
    }

    #[test]
    fn unescaped_characters_are_printed_as_is(s in prop::collection::vec(interesting_char(), 0..16).prop_map(String::from_iter)) {
        let rendered = render(&[Some(s.clone())]);
        let extra_chars: usize = s.chars().filter(|c| ESCAPED.contains(c)).count();
        prop_assert_eq!(rendered.chars().count(), s.chars().count() + extra_chars + 4);
        if !s.chars().any(|c| ESCAPED.contains(&c)) {
            prop_assert_eq!(rendered, format!("[\"{s}\"]"));
        }
    }

    #[test]
    fn hash_is_lowercase_hex_sha256_of_rendering(input in identity()) {
        let hash = state_identity_hash(&input);
        prop_assert_eq!(hash.len(), 64);
        prop_assert!(hash.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')), "{hash}");
        let expected: String = Sha256::digest(render(&input).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        prop_assert_eq!(hash, expected);
    }
}

#[test]
fn parser_rejects_raw_escaped_characters() {
    for c in ESCAPED {
        if c == '"' || c == '\\' {
            continue;
        }
        assert!(parse(&format!("[\"a{c}b\"]")).is_err(), "{c:?}");
    }
    assert!(parse(r#"["a\u0041"]"#).is_err());
    assert!(parse(r#"["a"  nil]"#).is_err());
    assert_eq!(
        parse(r#"["a\"b" nil "\\"]"#),
        Ok(vec![Some("a\"b".into()), None, Some("\\".into())])
    );
}
