use super::*;

fn entry(nanos: u128, replica: &str, identity: &str, phase: Phase) -> AuditEntry {
    AuditEntry {
        unix_nanos: nanos,
        replica: replica.into(),
        identity: identity.into(),
        callback: "converge".into(),
        event: "create".into(),
        phase,
    }
}

fn run(replica: &str, identity: &str, start: u128, end: u128) -> [AuditEntry; 2] {
    [
        entry(start, replica, identity, Phase::Start),
        entry(end, replica, identity, Phase::End),
    ]
}

#[test]
fn a_line_is_six_space_separated_fields_and_parses_back() {
    let e = entry(1_700_000_000_123_456_789, "pod-a", "ab12", Phase::Start);
    assert_eq!(
        e.line(),
        "1700000000123456789 pod-a ab12 converge create start\n"
    );
    let mut end = e.clone();
    end.phase = Phase::End;
    let text = format!("{}\n{}", e.line(), end.line());
    assert_eq!(parse_audit(&text), Ok(vec![e, end]));
}

#[test]
fn malformed_lines_are_errors_naming_the_line() {
    let good = entry(1, "a", "x", Phase::Start).line();
    for (bad, problem) in [
        ("1 a x converge create", "6 space-separated"),
        ("1 a x converge create begin", "neither start nor end"),
        ("soon a x converge create end", "unix nanos"),
        ("1 a  converge create end", "empty field"),
    ] {
        let err = parse_audit(&format!("{good}{bad}\n")).unwrap_err();
        assert_eq!(err.line, 2, "{bad}");
        assert!(err.to_string().contains(problem), "{bad}: {err}");
    }
}

#[test]
fn overlapping_runs_of_one_identity_in_two_replicas_are_found() {
    let entries: Vec<AuditEntry> = [run("a", "x", 10, 20), run("b", "x", 15, 30)].concat();
    let found = overlaps(&entries);
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].0.replica.as_str(), found[0].1.replica.as_str()),
        ("a", "b")
    );
}

#[test]
fn touching_runs_and_other_identities_and_one_replica_are_not_overlaps() {
    let entries: Vec<AuditEntry> = [
        run("a", "x", 10, 20),
        run("b", "x", 20, 30),
        run("c", "y", 12, 18),
        run("a", "y", 15, 25),
    ]
    .concat();
    // x: a ends exactly when b starts (touching). a's y run overlaps its
    // own x run (another identity) and c's y run: only the latter counts.
    let found = overlaps(&entries);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0.identity, "y");
    let same_replica: Vec<AuditEntry> = [run("a", "x", 10, 20), run("a", "x", 15, 30)].concat();
    assert!(overlaps(&same_replica).is_empty());
}

#[test]
fn a_run_without_an_end_overlaps_until_its_replica_is_closed_as_killed() {
    let mut entries = vec![entry(10, "a", "x", Phase::Start)];
    entries.extend(run("b", "x", 100, 110));
    assert_eq!(overlaps(&entries).len(), 1);
    close_killed(&mut entries, "a", 50);
    assert!(overlaps(&entries).is_empty());
    assert_eq!(intervals(&entries)[0].end, Some(50));
    // Killed after b started: the run may have still been going.
    let mut late = vec![entry(10, "a", "x", Phase::Start)];
    late.extend(run("b", "x", 100, 110));
    close_killed(&mut late, "a", 105);
    assert_eq!(overlaps(&late).len(), 1);
}

#[test]
fn replicas_share_one_file_line_by_line() {
    let path = std::env::temp_dir().join(format!("lcm-audit-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let a = AuditLog::open(&path, "pod-a").unwrap();
    let b = AuditLog::open(&path, "pod-b").unwrap();
    a.record("x", "converge", "create", Phase::Start).unwrap();
    b.record("y", "delete", "delete", Phase::Start).unwrap();
    a.record("x", "converge", "create", Phase::End).unwrap();
    let entries = parse_audit(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    let lines: Vec<(&str, &str, Phase)> = entries
        .iter()
        .map(|e| (e.replica.as_str(), e.callback.as_str(), e.phase))
        .collect();
    assert_eq!(
        lines,
        [
            ("pod-a", "converge", Phase::Start),
            ("pod-b", "delete", Phase::Start),
            ("pod-a", "converge", Phase::End)
        ]
    );
    assert!(entries[0].unix_nanos > 0);
}

#[test]
fn a_replica_identity_that_would_split_a_line_is_refused() {
    let path = std::env::temp_dir().join("lcm-audit-never-created");
    assert!(AuditLog::open(&path, "pod a").is_err());
    assert!(AuditLog::open(&path, "").is_err());
    assert!(!path.exists());
}
