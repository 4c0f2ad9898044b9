//! How cases are drawn. The weights favour reconciles and user edits, and
//! a race mostly pits both controllers (or both types) on one identity.

use crate::drive::{CrashPoint, Edit, Op};
use crate::world::{Initial, Slot, INTERVALS, PROFILES, SLOTS};
use blue_testkit::{Callback, Fault, Misbehaviour, Operation};
use proptest::prelude::*;

pub fn arb_slot() -> impl Strategy<Value = Slot> {
    (0..SLOTS.len()).prop_map(Slot)
}

pub fn arb_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        2 => Just(Edit::Create),
        3 => Just(Edit::Delete),
        1 => Just(Edit::Replace),
        5 => (0u8..3).prop_map(Edit::Value),
        1 => any::<bool>().prop_map(Edit::Suspend),
        1 => any::<bool>().prop_map(Edit::Stopped),
        2 => proptest::option::of(any::<bool>()).prop_map(Edit::Destroy),
        2 => any::<bool>().prop_map(Edit::Protect),
        1 => any::<bool>().prop_map(Edit::Invalid),
        1 => proptest::option::of(0..PROFILES.len()).prop_map(Edit::Profile),
        1 => proptest::option::of(0..INTERVALS.len()).prop_map(Edit::Interval),
        2 => (0u8..3).prop_map(Edit::Request),
        1 => any::<bool>().prop_map(Edit::Foreign),
    ]
}

/// A conflict or an outage of one of `operations`.
pub fn faults_on(
    operations: impl Strategy<Value = Operation>,
) -> impl Strategy<Value = (Operation, Fault)> {
    let fault = prop_oneof![Just(Fault::Conflict), Just(Fault::Unavailable)];
    (operations, fault)
}

fn arb_fault() -> impl Strategy<Value = (Operation, Fault)> {
    faults_on(prop_oneof![
        Just(Operation::UpdateStatus),
        Just(Operation::UpdateFinalizers),
        Just(Operation::Get),
        Just(Operation::List),
    ])
}

fn arb_script() -> impl Strategy<Value = (Callback, Misbehaviour)> {
    let step = prop_oneof![
        1 => Just(Callback::Validate),
        1 => Just(Callback::Identity),
        2 => Just(Callback::Observe),
        2 => Just(Callback::Converge),
        2 => Just(Callback::Delete),
    ];
    // `Exit(0)` claims success without doing anything: only observing
    // again can tell.
    let m = prop_oneof![
        Just(Misbehaviour::Error),
        Just(Misbehaviour::Panic),
        Just(Misbehaviour::Exit(1)),
        Just(Misbehaviour::Exit(0)),
    ];
    (step, m)
}

/// Where a crash strikes: a pass writes at most 5 statuses (the last step
/// of a run of 3 and Ready), and holds at most 3 effects.
fn arb_crash_point() -> impl Strategy<Value = CrashPoint> {
    prop_oneof![
        (1u8..=5).prop_map(CrashPoint::AfterWrite),
        (1u8..=5).prop_map(CrashPoint::BeforeWrite),
        (1u8..=3).prop_map(CrashPoint::InEffect),
    ]
}

fn arb_step_script() -> impl Strategy<Value = (usize, Misbehaviour)> {
    let m = prop_oneof![Just(Misbehaviour::Error), Just(Misbehaviour::Panic)];
    (0usize..5, m)
}

fn arb_advance() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), Just(1_000), Just(60_000), 0u64..=120_000,]
}

pub fn arb_op() -> impl Strategy<Value = Op> {
    let by = 0usize..2;
    let hold = 0u8..3;
    prop_oneof![
        12 => (arb_slot(), arb_edit()).prop_map(|(s, e)| Op::User(s, e)),
        4 => arb_advance().prop_map(Op::Advance),
        2 => (0..PROFILES.len(), proptest::option::of(0u8..3)).prop_map(|(p, v)| Op::Drift(p, v)),
        1 => (0..PROFILES.len(), any::<bool>()).prop_map(|(p, r)| Op::Ready(p, r)),
        2 => arb_fault().prop_map(|(o, f)| Op::Fault(o, f)),
        2 => arb_script().prop_map(|(s, m)| Op::Script(s, m)),
        14 => (arb_slot(), by.clone(), hold.clone())
            .prop_map(|(at, by, hold)| Op::Reconcile { at, by, hold }),
        4 => (
            arb_slot(),
            by.clone(),
            0u8..4,
            arb_slot(),
            by.clone(),
            hold.clone(),
            proptest::option::weighted(0.3, (0u8..10, arb_edit())),
        )
            .prop_map(|(sa, ca, pick, sr, cr, hold, edit)| {
                let b = match pick {
                    0 | 1 => (sa, 1 - ca),
                    2 => (sa.partner(), cr),
                    _ => (sr, cr),
                };
                Op::Race {
                    a: (sa, ca),
                    b,
                    hold,
                    edit,
                }
            }),
        4 => (arb_slot(), by.clone(), 0u8..10, arb_edit(), hold.clone()).prop_map(
            |(at, by, after, edit, hold)| Op::Interrupted { at, by, after, edit, hold }
        ),
        1 => (by.clone(), hold.clone()).prop_map(|(by, hold)| Op::Poll { by, hold }),
        // Mostly the gadget, whose converge and delete run durable steps.
        5 => (
            prop_oneof![3 => Just(Slot(2)), 1 => arb_slot()],
            by,
            proptest::option::weighted(0.6, 0u8..3),
            arb_crash_point(),
            hold,
        )
            .prop_map(|(at, by, value, point, hold)| Op::Crash { at, by, value, point, hold }),
        2 => arb_step_script().prop_map(|(s, m)| Op::ScriptStep(s, m)),
    ]
}

pub fn arb_initial() -> impl Strategy<Value = Initial> {
    [
        (0u8..3, any::<bool>()),
        (0u8..3, any::<bool>()),
        (0u8..3, any::<bool>()),
    ]
}
