//! Fencing tokens: what a callback is told about the ownership of the
//! Lease it runs under, and how the next owner's token is chosen from the
//! Lease's record.
//!
//! The Lease's own counter (`spec.leaseTransitions`) cannot carry it: it is
//! an int32 that stops at its top, anyone who can write Leases can set it
//! back, and a Lease deleted and created again starts it at zero. So the
//! elector keeps the token itself in an annotation on the Lease, written
//! in the same guarded write that acquires it, together with the Lease's
//! uid; where that record cannot be continued, a new epoch begins.

use blue_kubernetes_client::Lease;
use std::fmt;

/// The annotation holding the last token issued on a Lease, as
/// `<token>/<uid of the Lease it was issued on>` (no uid when written by
/// the create that made the Lease, before the API server assigned one).
pub(crate) const TOKEN_ANNOTATION: &str = "blue.kubernetes/fencing-token";

/// Which ownership of a Lease a pass runs under, for infrastructure that
/// can refuse the writes of an owner that was deposed while its callback
/// still ran (a conditional write, a compare-and-set, a "reject if older
/// token" check).
///
/// # Shape
/// Two numbers, an *epoch* and a *counter*; tokens compare as the pair,
/// epoch first.
/// - Each new owner of the Lease gets a greater token than every owner
///   before it. Within an epoch the counter grows by one per new owner;
///   that rests on the guarded writes to the Lease alone, never on clocks.
/// - All passes of one ownership carry the same token; a process that
///   loses the Lease and takes it again is a new owner.
/// - A new epoch (counter 1) begins when the Lease's record cannot carry
///   the count on: the Lease was deleted and created again or restored
///   from a backup, its record was damaged, or the counter reached its
///   maximum. The epoch is the time it began, in milliseconds since the
///   Unix epoch on the clock of the replica that began it, and is always
///   greater than any epoch that replica saw on the Lease. A replica that
///   saw the old epoch (every running replica reads the Lease at each
///   attempt) therefore always begins a greater one; one that never saw
///   it (say, every replica restarted after the Lease was deleted) begins
///   a greater one as long as its clock is not behind the old epoch's
///   start. That is the only place a clock enters.
/// - Tokens of different Leases are unrelated: each shard has its own
///   Lease, and changing the number of shards moves resources to other
///   Leases.
///
/// # Using it
/// Keep the greatest token accepted so far beside what it protects (per
/// Lease); accept a write whose token is greater than or equal to it (and
/// keep the new one), refuse a smaller one. A change of epoch means the
/// Lease's history was broken (it was recreated or tampered with):
/// infrastructure that cannot accept the clock caveat above can refuse a
/// token of a new epoch until a person confirms it.
///
/// # Text form
/// [`Display`](fmt::Display) writes `<epoch>-<counter>`, each as 16
/// lowercase hexadecimal digits: fixed width, so comparing two texts as
/// strings orders them as the tokens are ordered (a text column, an
/// object tag).
///
/// ```
/// use blue_kubernetes::{package::CallbackInput, replicas::FencingToken};
///
/// /// The infrastructure's side: act only under the greatest token seen.
/// fn admit(greatest: &mut Option<FencingToken>, offered: FencingToken) -> bool {
///     if greatest.is_some_and(|g| offered < g) {
///         return false; // a deposed owner
///     }
///     *greatest = Some(offered);
///     true
/// }
///
/// // In a callback: without leader election or sharding (or while not
/// // leading) there is no token, and nothing to fence with.
/// let opts = CallbackInput::from_resource(&serde_json::json!({}));
/// if let Some(token) = opts.fencing_token() {
///     let mut greatest = None;
///     assert!(admit(&mut greatest, token));
///     assert_eq!(token.to_string().len(), 33);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken {
    epoch: u64,
    counter: u64,
}

impl FencingToken {
    /// When this token's epoch began (milliseconds since the Unix epoch,
    /// by the clock of the replica that began it): it changes only when
    /// the Lease's record could not be continued.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The owner's number within the epoch, from 1.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// The first token of an epoch beginning at `now_ms`, or later if
    /// that is needed to be greater than every token in `floors` (at the
    /// very top of the range it saturates: a record forged that far is
    /// beyond repair).
    fn first_after(now_ms: u64, floors: impl IntoIterator<Item = Option<Self>>) -> Self {
        let epoch = floors
            .into_iter()
            .flatten()
            .map(|t| t.epoch.saturating_add(1))
            .fold(now_ms, u64::max);
        Self { epoch, counter: 1 }
    }

    /// The next owner's token in this epoch, unless the counter is spent.
    fn successor(self) -> Option<Self> {
        let counter = self.counter.checked_add(1)?;
        Some(Self { counter, ..self })
    }

    fn parse(text: &str) -> Option<Self> {
        let (epoch, counter) = text.split_once('-')?;
        let hex = |s: &str| {
            (s.len() == 16 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
                .then(|| u64::from_str_radix(s, 16).ok())
                .flatten()
        };
        let token = Self {
            epoch: hex(epoch)?,
            counter: hex(counter)?,
        };
        (token.counter > 0).then_some(token)
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}-{:016x}", self.epoch, self.counter)
    }
}

/// The token recorded on `lease`, and whether it was issued on this very
/// Lease object (same uid, or written by its create); `None` when there is
/// none or it does not parse.
pub(crate) fn recorded(lease: &Lease) -> Option<(FencingToken, bool)> {
    let text = lease.annotations.get(TOKEN_ANNOTATION)?;
    let (token, uid) = match text.split_once('/') {
        Some((token, uid)) => (token, Some(uid)),
        None => (text.as_str(), None),
    };
    let same_object = uid.is_none_or(|uid| Some(uid) == lease.uid.as_deref());
    Some((FencingToken::parse(token)?, same_object))
}

/// Records `token` on `lease` (its uid too, once the Lease has one).
pub(crate) fn record(lease: &mut Lease, token: FencingToken) {
    let text = match &lease.uid {
        Some(uid) => format!("{token}/{uid}"),
        None => token.to_string(),
    };
    lease.annotations.insert(TOKEN_ANNOTATION.to_owned(), text);
}

/// The token of the next owner of a Lease whose record is `current`
/// (`None`: it is being created), decided at `now_ms` by an elector that
/// has seen tokens up to `highest` on it: the recorded token's successor
/// when the record is this object's, spendable and ahead of everything
/// seen; else the first token of a new epoch above all of those.
pub(crate) fn next(
    current: Option<&Lease>,
    highest: Option<FencingToken>,
    now_ms: u64,
) -> FencingToken {
    let recorded = current.and_then(recorded);
    let continued = recorded
        .filter(|(_, same_object)| *same_object)
        .and_then(|(token, _)| token.successor())
        .filter(|token| highest.is_none_or(|h| *token > h));
    continued
        .unwrap_or_else(|| FencingToken::first_after(now_ms, [recorded.map(|(t, _)| t), highest]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use blue_kubernetes_client::LeaseSpec;

    const NOW: u64 = 1_704_067_200_000;

    fn token(epoch: u64, counter: u64) -> FencingToken {
        FencingToken { epoch, counter }
    }

    fn lease(uid: &str, annotation: Option<&str>) -> Lease {
        let mut lease = Lease::new("ns", "l", LeaseSpec::default());
        lease.uid = Some(uid.into());
        if let Some(text) = annotation {
            lease
                .annotations
                .insert(TOKEN_ANNOTATION.into(), text.into());
        }
        lease
    }

    #[test]
    fn the_text_form_is_fixed_width_hex_and_orders_as_the_tokens_do() {
        let tokens = [token(1, u64::MAX), token(2, 1), token(2, 16), token(NOW, 3)];
        let texts: Vec<String> = tokens.iter().map(ToString::to_string).collect();
        assert_eq!(texts[2], "0000000000000002-0000000000000010");
        let mut sorted = texts.clone();
        sorted.sort();
        assert_eq!(sorted, texts);
        assert!(tokens.windows(2).all(|w| w[0] < w[1]));
        for (token, text) in tokens.iter().zip(&texts) {
            assert_eq!(FencingToken::parse(text), Some(*token));
        }
    }

    #[test]
    fn damaged_text_is_no_token() {
        for text in [
            "",
            "1-2",
            "0000000000000002-0000000000000000",
            "0000000000000002-000000000000000G",
            "000000000000002-00000000000000010",
            "0000000000000002+0000000000000001",
            "+000000000000002-0000000000000001",
        ] {
            assert_eq!(FencingToken::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_next_owner_continues_the_epoch_recorded_on_the_same_object() {
        let same = lease("u1", Some("0000000000000007-0000000000000004/u1"));
        assert_eq!(next(Some(&same), None, NOW), token(7, 5));
        let from_create = lease("u1", Some("0000000000000007-0000000000000004"));
        assert_eq!(
            next(Some(&from_create), Some(token(7, 4)), NOW),
            token(7, 5)
        );
    }

    #[test]
    fn a_record_that_cannot_be_continued_begins_a_greater_epoch() {
        let recorded = "0000000000000007-0000000000000004";
        let cases = [
            // Created again (or restored from a backup): another uid.
            (lease("u2", Some(&format!("{recorded}/u1"))), None),
            // Missing or damaged.
            (lease("u1", None), None),
            (lease("u1", Some("seven")), None),
            // Set back below what this elector saw.
            (
                lease("u1", Some(&format!("{recorded}/u1"))),
                Some(token(7, 9)),
            ),
        ];
        for (record, highest) in cases {
            let next = next(Some(&record), highest, NOW);
            assert_eq!(next, token(NOW, 1), "{record:?}");
        }
        assert_eq!(next(None, None, NOW), token(NOW, 1), "a new Lease");
    }

    #[test]
    fn a_new_epoch_is_above_every_epoch_seen_even_on_a_clock_behind() {
        let ahead = NOW + 60_000;
        let record = lease("u2", Some(&format!("{:016x}-0000000000000009/u1", ahead)));
        assert_eq!(next(Some(&record), None, NOW), token(ahead + 1, 1));
        assert_eq!(
            next(None, Some(token(ahead, 3)), NOW),
            token(ahead + 1, 1),
            "deleted: the epoch this elector saw is the floor"
        );
    }

    #[test]
    fn a_spent_counter_begins_a_new_epoch() {
        let spent = format!("{:016x}-{:016x}/u1", 7, u64::MAX);
        let next = next(Some(&lease("u1", Some(&spent))), None, NOW);
        assert_eq!(next, token(NOW, 1));
        assert!(next > token(7, u64::MAX));
    }

    #[test]
    fn the_recorded_token_carries_the_uid_once_there_is_one() {
        let mut lease = lease("u1", None);
        record(&mut lease, token(7, 2));
        assert_eq!(
            lease.annotations[TOKEN_ANNOTATION],
            "0000000000000007-0000000000000002/u1"
        );
        assert_eq!(recorded(&lease), Some((token(7, 2), true)));
        lease.uid = None;
        record(&mut lease, token(7, 3));
        assert_eq!(recorded(&lease), Some((token(7, 3), true)));
    }
}
