//! From what the search decided to each property's verdict, pairing every `always` property
//! with its `sometimes` partners so that none holds vacuously.

use super::report::{Ended, Kind, Verdict};
use super::search::Found;

/// The spec ID of a property: the first word of its name.
fn id(name: &str) -> &str {
    name.split_whitespace().next().unwrap_or("")
}

/// Per property, the positions of its partners: for an `always`, every `sometimes` whose
/// name starts with the same word; none for a `sometimes`.
pub(crate) fn partners(names: &[&str], kinds: &[Kind]) -> Vec<Vec<usize>> {
    (names.iter().zip(kinds))
        .map(|(name, kind)| match kind {
            Kind::Sometimes => Vec::new(),
            Kind::Always => (names.iter().zip(kinds).enumerate())
                .filter(|(_, (other, k))| **k == Kind::Sometimes && id(other) == id(name))
                .map(|(j, _)| j)
                .collect(),
        })
        .collect()
}

/// Each property's verdict, with the names of its partners.
pub(crate) fn judge(names: &[&str], kinds: &[Kind], found: &Found) -> Vec<(Verdict, Vec<String>)> {
    let undecided = match found.ended {
        Ended::Exhausted | Ended::Decided => None,
        Ended::Stopped => Some(Verdict::Unjudged),
        Ended::Cut => Some(Verdict::Incomplete),
    };
    let own: Vec<Verdict> = (kinds.iter().zip(&found.decided))
        .map(|(kind, decided)| match (kind, decided, undecided) {
            (Kind::Always, Some(_), _) => Verdict::Violated,
            (Kind::Sometimes, Some(_), _) => Verdict::Holds,
            (_, None, Some(verdict)) => verdict,
            (Kind::Always, None, None) => Verdict::Holds,
            (Kind::Sometimes, None, None) => Verdict::Unreached,
        })
        .collect();
    let partners = partners(names, kinds);
    (own.iter().zip(partners))
        .map(|(&verdict, partners)| {
            // An `always` that holds was exercised only if each of its partners was reached.
            let exercised = partners.iter().all(|&j| own[j] == Verdict::Holds);
            let verdict = match verdict {
                Verdict::Holds if !exercised => Verdict::Unexercised,
                other => other,
            };
            let names = partners.iter().map(|&j| names[j].to_owned()).collect();
            (verdict, names)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::report::Cut;

    fn found(decided: Vec<Option<usize>>, ended: Ended) -> Found {
        Found {
            decided,
            ended,
            cut_by: if ended == Ended::Cut {
                vec![Cut::Time]
            } else {
                Vec::new()
            },
            generated: 0,
            unique: 0,
            checked: 0,
            max_depth: 0,
        }
    }

    const NAMES: [&str; 4] = [
        "A-1 a rule",
        "B-1 another rule",
        "A-1 the rule's situation occurs",
        "A-1 another situation occurs",
    ];
    const KINDS: [Kind; 4] = [Kind::Always, Kind::Always, Kind::Sometimes, Kind::Sometimes];

    fn verdicts(decided: Vec<Option<usize>>, ended: Ended) -> Vec<Verdict> {
        (judge(&NAMES, &KINDS, &found(decided, ended)).into_iter())
            .map(|(v, _)| v)
            .collect()
    }

    #[test]
    fn partners_share_the_first_word_and_only_always_properties_have_them() {
        let p = partners(&NAMES, &KINDS);
        assert_eq!(p, [vec![2, 3], vec![], vec![], vec![]]);
    }

    #[test]
    fn an_always_holds_only_when_every_partner_is_reached() {
        use Verdict::*;
        let all = verdicts(vec![None, None, Some(2), Some(5)], Ended::Exhausted);
        assert_eq!(all, [Holds, Holds, Holds, Holds]);
        let one = verdicts(vec![None, None, Some(2), None], Ended::Exhausted);
        assert_eq!(one, [Unexercised, Holds, Holds, Unreached]);
    }

    #[test]
    fn a_stop_leaves_the_undecided_unjudged_and_a_cut_incomplete() {
        use Verdict::*;
        let stopped = verdicts(vec![None, Some(3), Some(2), None], Ended::Stopped);
        assert_eq!(stopped, [Unjudged, Violated, Holds, Unjudged]);
        let cut = verdicts(vec![None, None, None, Some(1)], Ended::Cut);
        assert_eq!(cut, [Incomplete, Incomplete, Incomplete, Holds]);
    }
}
