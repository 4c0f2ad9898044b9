//! Checks the renderer and hash against vectors produced by real Clojure
//! (see `gen_reference_vectors.py`).

use blue_identity::{render, state_identity_hash};
use serde_json::Value;

const VECTORS: &str = include_str!("reference_vectors.json");

struct Case {
    name: String,
    input: Vec<Option<String>>,
    pr_str: String,
    sha256: String,
}

fn cases() -> Vec<Case> {
    let doc: Value = serde_json::from_str(VECTORS).expect("reference_vectors.json is valid JSON");
    doc["cases"]
        .as_array()
        .expect("`cases` is an array")
        .iter()
        .map(|case| Case {
            name: case["name"].as_str().expect("name").to_string(),
            input: case["input"]
                .as_array()
                .expect("input is an array")
                .iter()
                .map(|element| match element {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    other => panic!("unexpected input element {other}"),
                })
                .collect(),
            pr_str: case["pr_str"].as_str().expect("pr_str").to_string(),
            sha256: case["sha256"].as_str().expect("sha256").to_string(),
        })
        .collect()
}

#[test]
fn reference_file_has_enough_cases() {
    let cases = cases();
    assert!(cases.len() >= 30, "only {} reference cases", cases.len());
    for required in [
        "empty_vector",
        "single_nil",
        "all_nils",
        "spec_example",
        "realistic_local_kubernetes",
        "all_c0_controls_and_del",
        "emoji",
    ] {
        assert!(
            cases.iter().any(|c| c.name == required),
            "missing case {required}"
        );
    }
}

#[test]
fn every_reference_vector_renders_like_clojure_pr_str() {
    let failures: Vec<String> = cases()
        .into_iter()
        .filter_map(|case| {
            let got = render(&case.input);
            (got != case.pr_str).then(|| {
                format!(
                    "{}: expected {:?}, rendered {:?}",
                    case.name, case.pr_str, got
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_reference_vector_hashes_like_clojure() {
    let failures: Vec<String> = cases()
        .into_iter()
        .filter_map(|case| {
            let got = state_identity_hash(&case.input);
            (got != case.sha256)
                .then(|| format!("{}: expected {}, hashed {}", case.name, case.sha256, got))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn spec_example_renders_as_documented() {
    let input = vec![Some("a".to_string()), None, Some("x\"y".to_string())];
    assert_eq!(render(&input), r#"["a" nil "x\"y"]"#);
}
