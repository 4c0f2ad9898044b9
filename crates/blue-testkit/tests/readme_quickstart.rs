//! The top-level README's quick start: `readme_quickstart/notes_operator.rs` is its
//! code block copied verbatim (the first test compares them), so the
//! binary the README shows compiles here, and its package does what the
//! README says when the controller drives it: a Note becomes its file,
//! follows edits and drift, is removed by Destroy and kept by Retain, and a
//! profile that could be a path is refused before any file is touched.

// `main` runs the binary; these tests drive its package.
#[allow(dead_code)]
mod quick_start {
    include!("readme_quickstart/notes_operator.rs");

    mod tests {
        use super::{Notes, Package};
        use blue_kubernetes::resource::{Phase, Reason};
        use blue_kubernetes::Report;
        use blue_testkit::TestOperator;
        use serde_json::json;
        use std::fs;
        use std::path::Path;

        const READY: Report = Report::Reconciled(Phase::Ready, Reason::Converged);

        /// The README's package writing under `dir`, over a fake API
        /// server with the CRD the binary prints.
        fn operator(dir: &Path) -> TestOperator {
            TestOperator::new(Package::new(Notes(dir.to_path_buf())).unwrap()).with_crds()
        }

        #[tokio::test]
        async fn a_note_becomes_its_file_and_follows_edits_and_drift() {
            let dir = tempfile::tempdir().unwrap();
            let notes = dir.path().join("notes");
            let op = operator(&notes);
            op.create("hello", json!({"config": {"text": "hi"}}));
            assert_eq!(op.settle("hello").await, READY);
            let file = notes.join("default--hello");
            assert_eq!(fs::read_to_string(&file).unwrap(), "hi");

            op.edit_spec("hello", |spec| {
                spec["config"]["text"] = json!("hello again")
            });
            assert_eq!(op.settle("hello").await, READY);
            assert_eq!(fs::read_to_string(&file).unwrap(), "hello again");

            // Someone edits the file: the next periodic check (60s by
            // default, stretched by under a tenth) puts it back.
            fs::write(&file, "tampered").unwrap();
            op.clock().advance(66_000);
            assert_eq!(op.reconcile("hello").await, READY);
            assert_eq!(fs::read_to_string(&file).unwrap(), "hello again");
        }

        #[tokio::test]
        async fn destroy_removes_the_file_and_retain_keeps_it() {
            let dir = tempfile::tempdir().unwrap();
            let op = operator(dir.path());
            op.create(
                "gone",
                json!({"config": {"text": "a"}, "deletionPolicy": "Destroy"}),
            );
            op.create("kept", json!({"config": {"text": "b"}}));
            assert_eq!(op.settle("gone").await, READY);
            assert_eq!(op.settle("kept").await, READY);

            op.delete("gone");
            op.delete("kept");
            assert_eq!(op.settle("gone").await, Report::Released);
            assert_eq!(op.settle("kept").await, Report::Released);
            assert!(!dir.path().join("default--gone").exists());
            assert_eq!(
                fs::read_to_string(dir.path().join("default--kept")).unwrap(),
                "b"
            );
        }

        #[tokio::test]
        async fn a_profile_that_could_be_a_path_is_refused_before_any_file_is_touched() {
            let dir = tempfile::tempdir().unwrap();
            let notes = dir.path().join("notes");
            let op = operator(&notes);
            let spec = json!({"config": {"text": "x", "profile": "../escaped"}});
            op.create("sneaky", spec);
            let report = op.reconcile("sneaky").await;
            let invalid = Report::Reconciled(Phase::Invalid, Reason::InvalidConfiguration);
            assert_eq!(report, invalid);
            assert!(!dir.path().join("escaped").exists());
            assert!(!notes.exists(), "nothing was written");
        }
    }
}

#[test]
fn the_tested_binary_is_the_readme_quick_start_verbatim() {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("\n## Quick start")
        .nth(1)
        .expect("the README has its quick start");
    let block = section
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```\n").next())
        .expect("the quick start has a rust block");
    let copy = include_str!("readme_quickstart/notes_operator.rs");
    assert_eq!(
        block,
        copy.trim_end(),
        "README.md's quick start and tests/readme_quickstart/notes_operator.rs differ: \
         copy one onto the other"
    );
    let lines = copy.lines().count();
    assert!(
        lines <= 60,
        "the quick start is {lines} lines; the README promises at most 60"
    );
}
