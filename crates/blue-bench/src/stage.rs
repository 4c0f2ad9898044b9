//! The `operators` part as stages: one step of the run, measured for every
//! contender before the next begins, in the order that keeps the small
//! figures first.

use crate::outcome::Sizes;

/// Rounds of the bursts (new resources, Destroy deletions).
pub const BURST_ROUNDS: usize = 3;

/// One step of the run, measured for every contender before the next
/// begins, so contenders alternate and share the machine's state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stage {
    /// New resources to Ready, then Destroy deletions: one round of
    /// [`BURST_ROUNDS`], each a stage of its own so contenders alternate.
    New { round: usize },
    /// A steady population: its window, and/or the restart on it.
    Steady {
        n: usize,
        interval: u64,
        window: bool,
        restart: bool,
    },
    /// Reactions at one size (and its idle cost, on the first run).
    AtSize { n: usize, run: usize },
}

pub fn stages(sizes: &Sizes, reactions_only: bool) -> Vec<Stage> {
    let runs = sizes.reaction_runs;
    let at_size =
        (sizes.latency.iter()).flat_map(|&n| (0..runs).map(move |run| Stage::AtSize { n, run }));
    if reactions_only {
        return at_size.collect();
    }
    let mut out: Vec<_> = (0..BURST_ROUNDS)
        .map(|round| Stage::New { round })
        .collect();
    for &(n, interval) in &sizes.steady {
        out.push(Stage::Steady {
            n,
            interval,
            window: true,
            restart: sizes.restart == Some((n, interval)),
        });
    }
    if let Some((n, interval)) = sizes.restart.filter(|r| !sizes.steady.contains(r)) {
        out.push(Stage::Steady {
            n,
            interval,
            window: false,
            restart: true,
        });
    }
    out.extend(at_size);
    // Smaller populations first: a long run stopped early (a loaded
    // machine, a deadline) has every small figure already written. Within
    // a size, reactions and idle cost, then the restart, then the rest.
    out.sort_by_key(|s| (s.size(), s.rank()));
    out
}

impl Stage {
    fn rank(&self) -> u8 {
        match *self {
            Stage::AtSize { .. } | Stage::New { .. } => 0,
            Stage::Steady { restart: true, .. } => 1,
            Stage::Steady { .. } => 2,
        }
    }

    /// The population a stage works on.
    pub fn size(&self) -> usize {
        match *self {
            Stage::New { .. } => 0,
            Stage::Steady { n, .. } | Stage::AtSize { n, .. } => n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_restart_joins_its_steady_window_and_reactions_only_keeps_the_sizes() {
        let sizes = Sizes::new(false, Some(vec![10, 1_000, 10_000]));
        let all = stages(&sizes, false);
        let rounds: Vec<_> = (0..BURST_ROUNDS)
            .map(|round| Stage::New { round })
            .collect();
        assert_eq!(
            all[..BURST_ROUNDS],
            rounds,
            "the bursts' rounds first, in order"
        );
        let sizes_in_order: Vec<usize> = all.iter().map(Stage::size).collect();
        assert!(sizes_in_order.is_sorted(), "{all:?}");
        let restarts: Vec<_> = all
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    Stage::Steady {
                        restart: true,
                        window: true,
                        ..
                    }
                )
            })
            .collect();
        assert_eq!(restarts.len(), 1, "{all:?}");
        let reactions = sizes.latency.len() * sizes.reaction_runs;
        assert_eq!(all.len(), BURST_ROUNDS + sizes.steady.len() + reactions);
        let sizes = Sizes::new(false, Some(vec![10, 1_000]));
        assert_eq!(
            sizes.steady,
            [(1_000, 10), (1_000, 60)],
            "only sizes asked for"
        );
        assert_eq!(sizes.restart, None);
        let reactions = stages(&sizes, true);
        let at = |n, run| Stage::AtSize { n, run };
        assert_eq!(
            reactions,
            [
                at(10, 0),
                at(10, 1),
                at(10, 2),
                at(1_000, 0),
                at(1_000, 1),
                at(1_000, 2)
            ],
            "three runs at each size, each a stage of its own so contenders alternate"
        );
    }
}
