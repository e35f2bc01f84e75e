//! From what the search decided to each property's verdict, judging every `always` property
//! with the `sometimes` partners its property list gave it, so that none holds vacuously.

use super::report::{Ended, Kind, Verdict};
use super::search::Found;

/// Each property's verdict, with the names of its partners (`partners[i]`: the positions of
/// property `i`'s partners, as [`super::PropertyList::partners`] gives them).
pub(crate) fn judge(
    names: &[&str],
    kinds: &[Kind],
    partners: &[Vec<usize>],
    found: &Found,
) -> Vec<(Verdict, Vec<String>)> {
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
    (own.iter().zip(kinds).zip(partners))
        .map(|((&verdict, kind), partners)| {
            // An `always` that holds was exercised only if it has partners and each was
            // reached; the list refuses an `always` without one, and none is taken on trust.
            let exercised = !partners.is_empty()
                && partners
                    .iter()
                    .all(|&j| own.get(j) == Some(&Verdict::Holds));
            let verdict = match verdict {
                Verdict::Holds if *kind == Kind::Always && !exercised => Verdict::Unexercised,
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

    /// `A-1 a rule` is partnered by both `A-1` properties; `B-1 another rule` by none, which
    /// a property list refuses, and which the judge never takes for exercised.
    fn partners() -> Vec<Vec<usize>> {
        vec![vec![2, 3], vec![], vec![], vec![]]
    }

    fn verdicts(decided: Vec<Option<usize>>, ended: Ended) -> Vec<Verdict> {
        (judge(&NAMES, &KINDS, &partners(), &found(decided, ended)).into_iter())
            .map(|(v, _)| v)
            .collect()
    }

    #[test]
    fn an_always_without_partners_is_never_exercised() {
        let judged = judge(
            &NAMES,
            &KINDS,
            &partners(),
            &found(vec![None; 4], Ended::Exhausted),
        );
        assert_eq!(judged[1], (Verdict::Unexercised, Vec::new()));
        assert_eq!(judged[0].1, [NAMES[2], NAMES[3]]);
    }

    #[test]
    fn an_always_holds_only_when_every_partner_is_reached() {
        use Verdict::*;
        let all = verdicts(vec![None, None, Some(2), Some(5)], Ended::Exhausted);
        assert_eq!(all, [Holds, Unexercised, Holds, Holds]);
        let one = verdicts(vec![None, None, Some(2), None], Ended::Exhausted);
        assert_eq!(one, [Unexercised, Unexercised, Holds, Unreached]);
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
