//! Which replica owns which shard, and which shard a resource is in: pure
//! functions of the membership and the state identity, so every replica
//! that sees the same members computes the same answer without talking to
//! the others.
//!
//! Assignment is rendezvous (highest-random-weight) hashing with a bounded
//! load: pure rendezvous moves only the shards that must move, but at 32
//! shards over 3 to 5 members it leaves some members with twice the shards
//! of others. Here every (shard, member) pair is ranked by its weight and
//! taken greedily, best first, while the member has room; room is
//! `floor(shards / members)`, and `shards mod members` members may take
//! one more. Loads are therefore always within one of even. The price is
//! that a join or a leave, which changes every member's room, can move a
//! few shards between members that stay (measured: at most 5 beyond the
//! minimum at 32 shards for 1 to 6 members; the unit tests hold it).

use sha2::{Digest, Sha256};

/// The shard of a resource whose state identity is `identity`; `None` (it
/// could not be computed, or the pass runs no callback) is always shard 0.
pub(crate) fn shard_of(identity: Option<&[Option<String>]>, shards: u32) -> u32 {
    let Some(identity) = identity else {
        return 0;
    };
    let hash = blue_identity::state_identity_hash(identity);
    // The hash is hex SHA-256: its first 16 digits are a uniform u64.
    let prefix = hash.get(..16).unwrap_or("0");
    let value = u64::from_str_radix(prefix, 16).unwrap_or(0);
    (value % u64::from(shards.max(1))) as u32
}

/// The weight of `member` for `shard`, equal on every machine.
fn weight(member: &str, shard: u32) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(member.as_bytes());
    hasher.update([0]);
    hasher.update(shard.to_be_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(bytes)
}

/// The owner of each of `shards` shards, as an index into `members`
/// (which should be sorted and free of duplicates, so that replicas agree;
/// the result does not depend on their order otherwise). Empty members:
/// nobody owns anything.
pub(crate) fn assign(shards: u32, members: &[String]) -> Vec<Option<usize>> {
    let mut owners = vec![None; shards as usize];
    if members.is_empty() {
        return owners;
    }
    let count = members.len() as u32;
    let floor = shards / count;
    let mut extra = shards % count;
    let mut pairs: Vec<(u64, u32, usize)> = (0..shards)
        .flat_map(|s| (0..members.len()).map(move |m| (s, m)))
        .map(|(s, m)| (weight(&members[m], s), s, m))
        .collect();
    // Ties (astronomically rare) break on the member's name, not its place.
    pairs.sort_unstable_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(members[a.2].cmp(&members[b.2]))
    });
    let mut loads = vec![0u32; members.len()];
    for (_, shard, member) in pairs {
        let owner = &mut owners[shard as usize];
        if owner.is_some() {
            continue;
        }
        let load = loads[member];
        let room = load < floor || (load == floor && extra > 0);
        if !room {
            continue;
        }
        if load == floor {
            extra -= 1;
        }
        loads[member] += 1;
        *owner = Some(member);
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(prefix: &str, n: usize) -> Vec<String> {
        let mut names: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:08x}")).collect();
        names.sort();
        names
    }

    fn owners_by_name(shards: u32, members: &[String]) -> Vec<String> {
        assign(shards, members)
            .into_iter()
            .map(|m| members[m.expect("every shard has an owner")].clone())
            .collect()
    }

    #[test]
    fn loads_are_within_one_of_even_for_one_to_five_members() {
        for round in 0..50 {
            for count in 1..=5 {
                let members = names(&format!("pod{round}"), count);
                let owners = assign(32, &members);
                let mut loads = vec![0; count];
                for owner in &owners {
                    loads[owner.expect("every shard has an owner")] += 1;
                }
                let (min, max) = (loads.iter().min(), loads.iter().max());
                assert!(
                    max.unwrap() - min.unwrap() <= 1,
                    "{count} members: loads {loads:?}"
                );
            }
        }
    }

    #[test]
    fn a_joining_member_takes_shards_with_few_moves_between_the_others() {
        for round in 0..50 {
            let all = names(&format!("join{round}"), 6);
            for count in 1..6 {
                let before = owners_by_name(32, &all[..count]);
                let mut after_members = all[..=count].to_vec();
                after_members.sort();
                let after = owners_by_name(32, &after_members);
                let newcomer = &all[count];
                let must = after.iter().filter(|o| *o == newcomer).count();
                let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
                assert!(must > 0, "the newcomer gets work");
                assert!(
                    moved <= must + 5,
                    "{count}+1 members: {moved} moved, {must} had to"
                );
            }
        }
    }

    #[test]
    fn a_leaving_members_shards_move_with_few_moves_between_the_others() {
        for round in 0..50 {
            let all = names(&format!("leave{round}"), 5);
            for count in 2..=5 {
                let before = owners_by_name(32, &all[..count]);
                let leaver = &all[count - 1];
                let after = owners_by_name(32, &all[..count - 1]);
                let must = before.iter().filter(|o| *o == leaver).count();
                let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
                assert!(after.iter().all(|o| o != leaver));
                assert!(
                    moved <= must + 5,
                    "{count}-1 members: {moved} moved, {must} had to"
                );
            }
        }
    }

    #[test]
    fn unchanged_membership_gives_the_same_assignment_in_any_order() {
        let members = names("same", 4);
        let mut reversed = members.clone();
        reversed.reverse();
        assert_eq!(owners_by_name(32, &members), owners_by_name(32, &reversed));
    }

    #[test]
    fn no_members_own_nothing_and_one_member_owns_everything() {
        assert!(assign(8, &[]).iter().all(Option::is_none));
        assert!(assign(8, &names("solo", 1)).iter().all(|o| *o == Some(0)));
    }

    #[test]
    fn equal_identities_share_a_shard_and_an_unknown_identity_is_shard_zero() {
        let a = [Some("db".to_owned()), Some("main".to_owned())];
        let b = a.clone();
        assert_eq!(shard_of(Some(&a), 32), shard_of(Some(&b), 32));
        assert_eq!(shard_of(None, 32), 0);
        let spread: std::collections::HashSet<u32> = (0..200)
            .map(|i| shard_of(Some(&[Some(format!("db-{i}"))]), 32))
            .collect();
        assert!(spread.len() > 24, "identities spread over the shards");
    }
}
