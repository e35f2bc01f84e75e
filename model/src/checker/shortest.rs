//! The shortest path to each discovery, rebuilt after the search.
//!
//! The search ([`super::search`]) keeps no paths: a parent pointer per state would double the
//! memory of its visited set, and which parent a state gets depends on which thread reached
//! it first. It records only the depth at which each property was first decided. This
//! search then visits states level by level on one thread, in the model's order of initial
//! states and actions, stops at that depth, and keeps the first hit of each target: each path
//! is a shortest one, and the same path on every run and for every thread count. It stores
//! one parent pointer per state and only the current level's states.

use super::memory;
use stateright::Model;
use std::collections::HashSet;
use std::hash::Hash;
use std::time::Instant;

/// How often, in generated states, the search reads the clock.
const CLOCK_EVERY: usize = 1024;
/// How often, in generated states, the search reads the memory held.
const MEMORY_EVERY: usize = 16 * 1024;

/// A property condition of a model.
pub(crate) type Condition<M> = fn(&M, &<M as Model>::State) -> bool;

/// A state to look for: one whose condition evaluates to `hit` (for a `sometimes`, also one
/// the model lets witness it: [`super::Checkable::may_witness`]).
pub(crate) struct Target<M: Model> {
    pub(crate) condition: Condition<M>,
    pub(crate) hit: bool,
    pub(crate) may_witness: Condition<M>,
}

impl<M: Model> Target<M> {
    /// Whether `state` is what the target looks for.
    pub(crate) fn found(&self, model: &M, state: &M::State) -> bool {
        (self.condition)(model, state) == self.hit
            && (!self.hit || (self.may_witness)(model, state))
    }
}

/// A path as stateright encodes one: the index of the initial state (among those within the
/// boundary), then the index of each action among the actions enabled where it was taken.
pub(crate) type IndexPath = (usize, Vec<usize>);

/// The initial states the checker starts from: those within the boundary, in the model's
/// order. Indices into this list start every [`IndexPath`].
pub(crate) fn initial_states<M: Model>(model: &M) -> Vec<M::State> {
    (model.init_states().into_iter())
        .filter(|s| model.within_boundary(s))
        .collect()
}

struct Node {
    /// The node this state was first reached from, `None` for an initial state.
    parent: Option<usize>,
    /// The initial state's index, or the action's index in its parent.
    index: usize,
}

/// A symmetry representative, when symmetry reduction is on.
pub(crate) type Symmetry<S> = Option<fn(&S) -> S>;

/// The identity of a state in a visited set: a 64-bit hash of it (of its representative under
/// symmetry). aHash with fixed keys, as stateright's own visited sets use: a state's `Hash`
/// writes many small fields, and SipHash's cost per write made it a quarter of the search's
/// time; aHash's folded multiplications cost a fraction of that, and mix well enough that
/// two of a hundred million states share a fingerprint with odds of about one in four
/// thousand.
pub(crate) fn fingerprint<S: Hash>(state: &S, symmetry: Symmetry<S>) -> u64 {
    const KEYS: ahash::RandomState = ahash::RandomState::with_seeds(
        0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    );
    match symmetry {
        Some(representative) => KEYS.hash_one(representative(state)),
        None => KEYS.hash_one(state),
    }
}

/// The shortest path to a state hitting each target, searching at most `max_steps` steps
/// deep; `None` for a target not hit within that depth, before `deadline` or within the
/// memory `bound`.
///
/// With `symmetry`, states are identified by their representative, as in stateright's
/// depth-first checker; a path still follows the states actually reached, so it replays.
/// Lengths stay minimal because symmetric states have equally short paths to a target when
/// the targets are symmetric, which symmetry reduction requires anyway.
pub(crate) fn shortest_paths<M: Model>(
    model: &M,
    targets: &[Target<M>],
    max_steps: usize,
    symmetry: Symmetry<M::State>,
    deadline: Option<Instant>,
    bound: memory::Bound,
) -> Vec<Option<IndexPath>>
where
    M::State: Hash,
{
    let mut found: Vec<Option<usize>> = targets.iter().map(|_| None).collect();
    let mut remaining = targets.len();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut level: Vec<(M::State, usize)> = Vec::new();
    for (index, state) in initial_states(model).into_iter().enumerate() {
        if seen.insert(fingerprint(&state, symmetry)) {
            nodes.push(Node {
                parent: None,
                index,
            });
            level.push((state, nodes.len() - 1));
        }
    }

    let mut actions = Vec::new();
    let mut generated = 0usize;
    'levels: for steps in 0..=max_steps {
        for (state, node) in &level {
            for (target, slot) in targets.iter().zip(found.iter_mut()) {
                if slot.is_none() && target.found(model, state) {
                    *slot = Some(*node);
                    remaining -= 1;
                }
            }
        }
        if remaining == 0 || steps == max_steps {
            break;
        }
        let mut next = Vec::new();
        for (state, node) in &level {
            model.actions(state, &mut actions);
            for (index, action) in actions.drain(..).enumerate() {
                let Some(successor) = model.next_state(state, action) else {
                    continue;
                };
                if !model.within_boundary(&successor) {
                    continue;
                }
                generated += 1;
                if (generated.is_multiple_of(CLOCK_EVERY)
                    && deadline.is_some_and(|deadline| Instant::now() >= deadline))
                    || (generated.is_multiple_of(MEMORY_EVERY) && bound.crossed())
                {
                    break 'levels;
                }
                if seen.insert(fingerprint(&successor, symmetry)) {
                    nodes.push(Node {
                        parent: Some(*node),
                        index,
                    });
                    next.push((successor, nodes.len() - 1));
                }
            }
        }
        level = next;
    }

    (found.into_iter())
        .map(|slot| slot.and_then(|node| path_to(&nodes, node)))
        .collect()
}

fn path_to(nodes: &[Node], mut node: usize) -> Option<IndexPath> {
    let mut actions = Vec::new();
    loop {
        let entry = nodes.get(node)?;
        match entry.parent {
            Some(parent) => {
                actions.push(entry.index);
                node = parent;
            }
            None => {
                actions.reverse();
                return Some((entry.index, actions));
            }
        }
    }
}

/// A replayed path: the initial state, then each action with the state it leads to.
pub(crate) type Replayed<M> = (
    <M as Model>::State,
    Vec<(<M as Model>::Action, <M as Model>::State)>,
);

/// Replays an index path. `None` if it does not replay, which only a model whose initial
/// states or actions vary between calls can cause.
pub(crate) fn replay<M: Model>(model: &M, path: &IndexPath) -> Option<Replayed<M>>
where
    M::State: Clone,
    M::Action: Clone,
{
    let (init, indices) = path;
    let first = initial_states(model).into_iter().nth(*init)?;
    let mut last = first.clone();
    let mut steps = Vec::with_capacity(indices.len());
    let mut actions = Vec::new();
    for index in indices {
        actions.clear();
        model.actions(&last, &mut actions);
        if *index >= actions.len() {
            return None;
        }
        let action = actions.swap_remove(*index);
        let next = model.next_state(&last, action.clone())?;
        last = next.clone();
        steps.push((action, next));
    }
    Some((first, steps))
}
