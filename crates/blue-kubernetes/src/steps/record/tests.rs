use super::*;
use crate::Event;

const UID: &str = "0f3e-uid";
const NOW: u64 = 1_764_000_000_000;

fn desired(generation: i64, event: Event) -> Desired<'static> {
    Desired {
        uid: UID,
        generation,
        request: "t1",
        event,
    }
}

fn run_of(record: &Record, name: &str) -> (String, bool) {
    let mut again = record.clone();
    match again.begin(UID, name, NOW).unwrap() {
        Begun::Run { key, interrupted } => (key, interrupted),
        Begun::Recorded(_) => panic!("{name} is done"),
    }
}

#[test]
fn a_first_attempt_is_not_interrupted_a_later_one_is_with_the_same_key() {
    let mut record = Record::current(None, &desired(1, Event::Create), NOW);
    let Begun::Run { key, interrupted } = record.begin(UID, "role", NOW).unwrap() else {
        panic!("not done yet")
    };
    assert!(!interrupted);
    assert_eq!(record.steps[0].state, State::Running);
    // The process dies here: the stored record says Running.
    let stored = serde_json::to_value(&record).unwrap();
    let status = json!({ "workflow": stored });
    let resumed = Record::current(
        Record::stored(Some(&status)),
        &desired(1, Event::Create),
        NOW,
    );
    assert_eq!(resumed.run, record.run, "the same run");
    assert_eq!(run_of(&resumed, "role"), (key.clone(), true));
    // A failure is an interruption too: its effect may have happened.
    record.failed("role", NOW);
    assert_eq!(run_of(&record, "role"), (key, true));
    assert_eq!(record.state, State::Failed);
}

#[test]
fn a_done_step_hands_back_its_result_and_stays_done() {
    let mut record = Record::current(None, &desired(1, Event::Create), NOW);
    record.begin(UID, "network", NOW).unwrap();
    record
        .done("network", json!({"id": "net-1"}), NOW + 5)
        .unwrap();
    record.begin(UID, "unit", NOW).unwrap();
    record.done("unit", Value::Null, NOW + 6).unwrap();
    let before = record.clone();
    assert_eq!(
        record.begin(UID, "network", NOW + 9),
        Ok(Begun::Recorded(json!({"id": "net-1"})))
    );
    assert_eq!(
        record.begin(UID, "unit", NOW + 9),
        Ok(Begun::Recorded(Value::Null))
    );
    assert_eq!(record, before, "skipping records nothing");
    assert!(
        record.steps[1].result.is_none(),
        "null results are not written"
    );
}

#[test]
fn new_desired_state_or_a_finished_run_starts_a_new_run_with_new_keys() {
    let mut record = Record::current(None, &desired(1, Event::Create), NOW);
    let (key, _) = run_of(&record, "role");
    record.begin(UID, "role", NOW).unwrap();
    let stored = || Some(record.clone());
    let same = Record::current(stored(), &desired(1, Event::Create), NOW);
    assert_eq!(same.sequence, 1);
    for other in [desired(2, Event::Create), desired(1, Event::Delete)] {
        let next = Record::current(stored(), &other, NOW);
        assert_eq!(next.sequence, 2);
        assert!(next.steps.is_empty());
        assert_ne!(run_of(&next, "role").0, key);
    }
    record.finish(NOW);
    let again = Record::current(Some(record.clone()), &desired(1, Event::Create), NOW);
    assert_eq!(again.sequence, 2, "a done run is not resumed");
    assert_ne!(run_of(&again, "role").0, key);
}

#[test]
fn a_record_of_another_shape_counts_as_none() {
    for workflow in [json!("x"), json!({"run": 1}), json!({"steps": "no"})] {
        assert_eq!(Record::stored(Some(&json!({ "workflow": workflow }))), None);
    }
    assert_eq!(Record::stored(None), None);
    let forged = json!({"workflow": {"run": "feed", "sequence": 9, "generation": 1,
        "event": "create", "state": "Running", "startTime": "2025-01-01T00:00:00Z"}});
    let next = Record::current(
        Record::stored(Some(&forged)),
        &desired(1, Event::Create),
        NOW,
    );
    assert_eq!(next.sequence, 10, "a run id that is not ours starts over");
}

#[test]
fn results_and_step_counts_are_bounded() {
    let mut record = Record::current(None, &desired(1, Event::Create), NOW);
    record.begin(UID, "big", NOW).unwrap();
    let just = json!("x".repeat(MAX_STEP_RESULT_BYTES - 2));
    let over = json!("x".repeat(MAX_STEP_RESULT_BYTES - 1));
    assert_eq!(
        record.done("big", over, NOW),
        Err(Refused::ResultTooLarge(MAX_STEP_RESULT_BYTES + 1))
    );
    assert_eq!(record.steps[0].state, State::Failed, "never truncated");
    record.begin(UID, "big", NOW).unwrap();
    assert_eq!(record.done("big", just, NOW), Ok(()));
    for i in 1..MAX_STEPS_PER_RUN {
        record.begin(UID, &format!("s{i}"), NOW).unwrap();
    }
    assert_eq!(
        record.begin(UID, "one-more", NOW),
        Err(Refused::TooManySteps)
    );
    assert!(
        record.begin(UID, "s1", NOW).is_ok(),
        "a recorded step still runs"
    );
}

#[test]
fn the_largest_record_the_bounds_allow_fits_in_max_workflow_bytes() {
    let mut record = Record::current(None, &desired(i64::MIN, Event::Delete), u64::MAX);
    record.sequence = u64::MAX;
    for i in 0..MAX_STEPS_PER_RUN {
        let name = format!("{i:02}{}", "x".repeat(61));
        record.begin(UID, &name, u64::MAX).unwrap();
        let result = json!("r".repeat(MAX_STEP_RESULT_BYTES - 2));
        record.done(&name, result, u64::MAX).unwrap();
        record.steps[i].attempts = u32::MAX;
    }
    record.end_time = Some(format_ms(u64::MAX));
    let size = record.to_value().to_string().len();
    assert!(size <= MAX_WORKFLOW_BYTES, "{size}");
}

#[test]
fn progress_names_the_step_in_generic_words() {
    let mut record = Record::current(None, &desired(1, Event::Create), NOW);
    assert_eq!(record.progress(false), None);
    record.begin(UID, "role", NOW).unwrap();
    record.done("role", json!("r"), NOW).unwrap();
    record.begin(UID, "database", NOW).unwrap();
    assert_eq!(
        record.progress(false).as_deref(),
        Some("converging infrastructure: step 2 (database)")
    );
    assert_eq!(
        record.progress(true).as_deref(),
        Some("destroying infrastructure: step 2 (database)")
    );
    record.failed("database", NOW);
    assert_eq!(
        record.progress(false).as_deref(),
        Some("infrastructure work failed at step 2 (database); retrying")
    );
    record.begin(UID, "database", NOW).unwrap();
    record.done("database", Value::Null, NOW).unwrap();
    assert_eq!(record.progress(false), None, "nothing in progress");
}

#[test]
fn the_record_round_trips_through_its_json() {
    let mut record = Record::current(None, &desired(3, Event::Stop), NOW);
    record.begin(UID, "a", NOW).unwrap();
    record.done("a", json!({"n": 1}), NOW + 1).unwrap();
    record.begin(UID, "b", NOW + 2).unwrap();
    let value = record.to_value();
    assert_eq!(value["event"], "stop");
    assert_eq!(value["steps"][0]["state"], "Done");
    assert_eq!(value["steps"][1]["state"], "Running");
    assert!(value["steps"][1].get("endTime").is_none());
    let back = Record::stored(Some(&json!({ "workflow": value }))).unwrap();
    assert_eq!(back, record);
}
