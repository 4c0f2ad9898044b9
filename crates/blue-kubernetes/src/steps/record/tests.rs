use super::*;
use crate::resource::Intent;

const UID: &str = "0f3e-uid";
const NOW: u64 = 1_764_000_000_000;

/// The desired state most tests' runs are for.
const D: Desired<'static> = Desired {
    uid: UID,
    generation: 1,
    request: "t1",
    event: Intent::Create,
};

fn desired(generation: i64, event: Intent) -> Desired<'static> {
    Desired {
        uid: UID,
        generation,
        request: "t1",
        event,
    }
}

/// The run a process with no memory of the object's runs chooses.
fn current(stored: Option<Record>, desired: &Desired) -> Record {
    Record::current(stored, desired, None, NOW).record
}

/// The key and interruption step `name` would run with in `record`.
fn run_of(record: &Record, desired: &Desired, name: &str) -> (String, bool) {
    let mut again = record.clone();
    match again.begin(desired, name, NOW).unwrap() {
        Begun::Run { key, interrupted } => (key, interrupted),
        Begun::Recorded(_) => panic!("{name} is done"),
    }
}

#[test]
fn a_first_attempt_is_not_interrupted_a_later_one_is_with_the_same_key() {
    let mut record = current(None, &desired(1, Intent::Create));
    let Begun::Run { key, interrupted } = record.begin(&D, "role", NOW).unwrap() else {
        panic!("not done yet")
    };
    assert!(!interrupted);
    assert_eq!(record.steps[0].state, State::Running);
    // The process dies here: the stored record says Running.
    let stored = serde_json::to_value(&record).unwrap();
    let status = json!({ "workflow": stored });
    let resumed = current(Record::stored(Some(&status)), &desired(1, Intent::Create));
    assert_eq!(resumed.run, record.run, "the same run");
    assert_eq!(run_of(&resumed, &D, "role"), (key.clone(), true));
    // A failure is an interruption too: its effect may have happened.
    record.failed("role", NOW);
    assert_eq!(run_of(&record, &D, "role"), (key, true));
    assert_eq!(record.state, State::Failed);
}

#[test]
fn a_done_step_hands_back_its_result_and_stays_done() {
    let mut record = current(None, &desired(1, Intent::Create));
    record.begin(&D, "network", NOW).unwrap();
    record
        .done("network", json!({"id": "net-1"}), NOW + 5)
        .unwrap();
    record.begin(&D, "unit", NOW).unwrap();
    record.done("unit", Value::Null, NOW + 6).unwrap();
    let before = record.clone();
    assert_eq!(
        record.begin(&D, "network", NOW + 9),
        Ok(Begun::Recorded(json!({"id": "net-1"})))
    );
    assert_eq!(
        record.begin(&D, "unit", NOW + 9),
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
    let mut record = current(None, &desired(1, Intent::Create));
    let (key, _) = run_of(&record, &D, "role");
    record.begin(&D, "role", NOW).unwrap();
    let stored = || Some(record.clone());
    let same = current(stored(), &desired(1, Intent::Create));
    assert_eq!(same.sequence, 1);
    for other in [desired(2, Intent::Create), desired(1, Intent::Delete)] {
        let next = current(stored(), &other);
        assert_eq!(next.sequence, 2);
        assert!(next.steps.is_empty());
        assert_ne!(run_of(&next, &other, "role").0, key);
    }
    record.finish(NOW);
    let again = current(Some(record.clone()), &desired(1, Intent::Create));
    assert_eq!(again.sequence, 2, "a done run is not resumed");
    assert_ne!(run_of(&again, &D, "role").0, key);
}

#[test]
fn a_record_of_another_shape_counts_as_none() {
    for workflow in [json!("x"), json!({"run": 1}), json!({"steps": "no"})] {
        assert_eq!(Record::stored(Some(&json!({ "workflow": workflow }))), None);
    }
    assert_eq!(Record::stored(None), None);
    let forged = json!({"workflow": {"run": "feed", "sequence": 9, "generation": 1,
        "event": "create", "state": "Running", "startTime": "2025-01-01T00:00:00Z"}});
    let next = current(Record::stored(Some(&forged)), &desired(1, Intent::Create));
    assert_eq!(next.sequence, 10, "a run id that is not ours starts over");
}

#[test]
fn results_and_step_counts_are_bounded() {
    let mut record = current(None, &desired(1, Intent::Create));
    record.begin(&D, "big", NOW).unwrap();
    let just = json!("x".repeat(MAX_STEP_RESULT_BYTES - 2));
    let over = json!("x".repeat(MAX_STEP_RESULT_BYTES - 1));
    assert_eq!(
        record.done("big", over, NOW),
        Err(Refused::ResultTooLarge(MAX_STEP_RESULT_BYTES + 1))
    );
    assert_eq!(record.steps[0].state, State::Failed, "never truncated");
    record.begin(&D, "big", NOW).unwrap();
    assert_eq!(record.done("big", just, NOW), Ok(()));
    for i in 1..MAX_STEPS_PER_RUN {
        record.begin(&D, &format!("s{i}"), NOW).unwrap();
    }
    assert_eq!(
        record.begin(&D, "one-more", NOW),
        Err(Refused::TooManySteps)
    );
    assert!(
        record.begin(&D, "s1", NOW).is_ok(),
        "a recorded step still runs"
    );
}

#[test]
fn the_largest_record_the_bounds_allow_fits_in_max_workflow_bytes() {
    let mut record =
        Record::current(None, &desired(i64::MIN, Intent::Delete), None, u64::MAX).record;
    record.sequence = u64::MAX;
    for i in 0..MAX_STEPS_PER_RUN {
        let name = format!("{i:02}{}", "x".repeat(61));
        record.begin(&D, &name, u64::MAX).unwrap();
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
    let mut record = current(None, &desired(1, Intent::Create));
    assert_eq!(record.progress(false), None);
    record.begin(&D, "role", NOW).unwrap();
    record.done("role", json!("r"), NOW).unwrap();
    record.begin(&D, "database", NOW).unwrap();
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
    record.begin(&D, "database", NOW).unwrap();
    record.done("database", Value::Null, NOW).unwrap();
    assert_eq!(record.progress(false), None, "nothing in progress");
}

#[test]
fn a_run_that_ends_with_a_step_left_running_records_it_interrupted() {
    let mut record = current(None, &desired(1, Intent::Create));
    record.begin(&D, "role", NOW).unwrap();
    record.done("role", json!("app"), NOW + 1).unwrap();
    record.begin(&D, "grants", NOW + 2).unwrap();
    // A later pass found the infrastructure in place and ended the run.
    record.finish(NOW + 9);
    assert_eq!(record.state, State::Done);
    assert_eq!(record.steps[0].state, State::Done, "done stays done");
    let grants = &record.steps[1];
    assert_eq!((grants.state, grants.attempts), (State::Interrupted, 1));
    assert_eq!(grants.end_time, None, "when it ended is unknown");
    assert_eq!(record.to_value()["steps"][1]["state"], "Interrupted");
    let schema = status_schema();
    let step_states = &schema["properties"]["steps"]["items"]["properties"]["state"]["enum"];
    assert!(step_states
        .as_array()
        .unwrap()
        .contains(&json!("Interrupted")));
    let run_states = &schema["properties"]["state"]["enum"];
    assert!(!run_states
        .as_array()
        .unwrap()
        .contains(&json!("Interrupted")));
}

#[test]
fn the_record_round_trips_through_its_json() {
    let mut record = current(None, &desired(3, Intent::Stop));
    record.begin(&D, "a", NOW).unwrap();
    record.done("a", json!({"n": 1}), NOW + 1).unwrap();
    record.begin(&D, "b", NOW + 2).unwrap();
    let value = record.to_value();
    assert_eq!(value["event"], "stop");
    assert_eq!(value["steps"][0]["state"], "Done");
    assert_eq!(value["steps"][1]["state"], "Running");
    assert!(value["steps"][1].get("endTime").is_none());
    let back = Record::stored(Some(&json!({ "workflow": value }))).unwrap();
    assert_eq!(back, record);
}

fn mark(sequence: u64, ended: bool) -> Option<Mark> {
    Some(Mark { sequence, ended })
}

/// A stored run `sequence` of `D`, in `state`, with step `role` in it.
fn stored_run(sequence: u64, state: State) -> Record {
    let mut record = Record::current(None, &D, mark(sequence - 1, true), NOW).record;
    assert_eq!(record.sequence, sequence);
    record.begin(&D, "role", NOW).unwrap();
    record.state = state;
    record
}

#[test]
fn a_stored_key_is_never_handed_out_the_derived_one_is() {
    let mut record = stored_run(1, State::Failed);
    let (derived, _) = run_of(&record, &D, "role");
    let another = Desired {
        uid: "another-uid",
        ..D
    };
    let (theirs, _) = run_of(&current(None, &another), &another, "role");
    for forged in [theirs.as_str(), "Not A Key!", "", &"k".repeat(300)] {
        record.steps[0].key = forged.to_string();
        let chosen = Record::current(Some(record.clone()), &D, None, NOW);
        assert_eq!(chosen.forged_keys, ["role"], "{forged}");
        assert_eq!(
            chosen.record.steps[0].key, derived,
            "the record is corrected"
        );
        // Even a record never corrected hands out the derived key.
        assert_eq!(run_of(&record, &D, "role"), (derived.clone(), true));
    }
    record.steps[0].key = derived.clone();
    let chosen = Record::current(Some(record), &D, None, NOW);
    assert!(chosen.forged_keys.is_empty() && !chosen.rolled_back);
}

#[test]
fn a_run_behind_what_the_process_used_is_not_resumed_and_no_number_comes_back() {
    // (stored run, its state, the mark) -> (resumed, next number, rolled back)
    let cases = [
        // Resuming the run this process works on.
        (3, State::Failed, mark(3, false), true, 3, false),
        // Another process went further: resumed.
        (5, State::Running, mark(3, true), true, 5, false),
        // A new process: status decides.
        (2, State::Running, None, true, 2, false),
        // The run this process ended, stored as ended: the next run.
        (3, State::Done, mark(3, true), false, 4, false),
        // ... marked unfinished again: not resumed.
        (3, State::Running, mark(3, true), false, 4, true),
        // An older run put back: not resumed, numbered after the mark.
        (1, State::Running, mark(3, false), false, 4, true),
        (1, State::Done, mark(3, true), false, 4, true),
    ];
    for (sequence, state, mark, resumed, next, rolled_back) in cases {
        let stored = stored_run(sequence, state);
        let chosen = Record::current(Some(stored.clone()), &D, mark, NOW);
        let case = format!("run {sequence} {state:?} with {mark:?}");
        assert_eq!(chosen.record.sequence, next, "{case}");
        assert_eq!(chosen.rolled_back, rolled_back, "{case}");
        assert_eq!(chosen.record.steps.len(), usize::from(resumed), "{case}");
    }
    // No stored record: after the mark.
    let chosen = Record::current(None, &D, mark(7, true), NOW);
    assert_eq!((chosen.record.sequence, chosen.rolled_back), (8, false));
}

#[test]
fn a_run_number_past_the_bound_counts_as_no_record() {
    let mut record = stored_run(1, State::Running);
    record.sequence = MAX_SEQUENCE;
    let value = json!({ "workflow": record.to_value() });
    assert!(Record::stored(Some(&value)).is_some());
    record.sequence = MAX_SEQUENCE + 1;
    let value = json!({ "workflow": record.to_value() });
    assert_eq!(Record::stored(Some(&value)), None);
    // Never a number that runs out: the next after the bound still grows.
    let chosen = Record::current(None, &D, mark(MAX_SEQUENCE + 1, true), NOW);
    assert_eq!(chosen.record.sequence, MAX_SEQUENCE + 2);
}
