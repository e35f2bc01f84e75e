//! The tool table of the brief (section 3), row by row. After a crash the status query
//! answers "not committed", the run retries, and the delayed original request may still
//! arrive. Which retry is safe depends on the tool's contract and on the key the retry carries:
//!
//! | tool dedupes by key | query fences the key | retry key | at most one commit | retry can succeed |
//! |---|---|---|---|---|
//! | no | no | any | no: double commit | - |
//! | yes | no | same key | yes | yes |
//! | yes | no | new key | no: dedupe only protects a reused key | - |
//! | no | yes | same key | yes | no: the fenced key is dead |
//! | no | yes | new attempt key | yes | yes |
//!
//! Where the table's retry is the spec's rule (rows 2 and 5), the kernel is the subject; where
//! it is a mistake (rows 1, 3 and 4), the reference's variant that retries that way is, and the
//! kernel is shown to refuse the mistake. Every world here is explored exhaustively.

mod world_support;

use resumable_model::config::Config;
use resumable_model::properties::names;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::World;
use resumable_model::{Kernel, Lifecycle};
use world_support::*;

fn explored<L: Lifecycle>(lifecycle: L, config: Config) -> Explored {
    explore(World::new(lifecycle, config).unwrap())
}

fn variant(v: Variant) -> Reference {
    Reference { variant: Some(v) }
}

#[test]
fn row_1_a_tool_that_neither_dedupes_nor_fences_commits_twice_when_the_run_retries() {
    let neither = direct(false, false);
    let broken = explored(variant(Variant::RetryWithoutContract), neither);
    assert!(broken.failed.contains(&names::EFF_1), "{:?}", broken.failed);
    // The shortest story of the double commit: the original is sent, the worker crashes, the
    // query says "not committed", the retry is sent, and both commit.
    let world = World::new(variant(Variant::RetryWithoutContract), neither).unwrap();
    let story = shortest(&world, names::DOUBLE_COMMIT, true).expect("a double commit");
    assert_eq!(
        story,
        [
            "Worker(0) steps run 0 with dispatch c1: accepted: running, c1 attempt 0 in flight at r1",
            "Worker(0) commits run 0 r0->r1: written with its audit record",
            "Worker(0) dispatches c1 key k1#0 for run 0: sent to the tool",
            "Worker(0) crashes: volatile state lost",
            "Worker(0) steps run 0 with recover: accepted: suspended (outcome unknown, expires t1) at r2",
            "Worker(0) commits run 0 r1->r2: written with its audit record and its checkpoint",
            "Worker(0) steps run 0 with reconcile c1 key k1#0 from r2: not committed: accepted: running, c1 attempt 0 in flight at r3",
            "Worker(0) commits run 0 r2->r3: written with its audit record",
            "Worker(0) dispatches c1 key k1#0 for run 0: sent to the tool",
            "Tool commits c1 key k1#0 for run 0: committed, response sent",
            "Tool commits c1 key k1#0 for run 0: committed, response sent",
        ]
    );
    // The kernel never retries here: it hands the unknown outcome to a person, so the call
    // commits at most once, even though the late original still commits.
    let kernel = explored(Kernel, neither);
    assert!(kernel.violations().is_empty(), "{:?}", kernel.failed);
    assert!(kernel.discovered.contains(names::LATE_REQUEST));
    // No retry ever succeeds here, so REC-3 is not exercised in this world.
    assert!(!kernel.discovered.contains(names::RETRY_SUCCEEDS));
    let world = World::new(Kernel, neither).unwrap();
    assert_eq!(shortest(&world, names::DOUBLE_COMMIT, true), None);
}

#[test]
fn row_2_a_deduping_tool_commits_once_and_a_retry_under_the_same_key_succeeds() {
    let kernel = explored(Kernel, direct(true, false));
    assert!(kernel.violations().is_empty(), "{:?}", kernel.failed);
    assert!(kernel.discovered.contains(names::RETRY_SUCCEEDS));
    assert!(kernel.discovered.contains(names::LATE_REQUEST));
}

#[test]
fn row_3_a_retry_under_a_new_key_escapes_the_dedupe_and_commits_twice() {
    let broken = explored(variant(Variant::RetryFreshKeyOnDedupe), direct(true, false));
    assert!(broken.failed.contains(&names::EFF_1), "{:?}", broken.failed);
    assert!(broken.failed.contains(&names::REC_3), "{:?}", broken.failed);
}

#[test]
fn row_4_a_retry_under_the_fenced_key_commits_nothing_and_never_succeeds() {
    let broken = explored(variant(Variant::RetrySameKeyOnFence), direct(false, true));
    // At most one commit still holds...
    assert!(
        !broken.failed.contains(&names::EFF_1),
        "{:?}",
        broken.failed
    );
    // ...but the retry can never succeed: the partner is never reached, and REC-3 names the
    // dead key.
    assert!(
        broken.failed.contains(&names::RETRY_SUCCEEDS),
        "{:?}",
        broken.failed
    );
    assert!(broken.failed.contains(&names::REC_3), "{:?}", broken.failed);
}

#[test]
fn row_5_a_fencing_query_commits_once_and_a_retry_under_a_fresh_attempt_key_succeeds() {
    let kernel = explored(Kernel, direct(false, true));
    assert!(kernel.violations().is_empty(), "{:?}", kernel.failed);
    assert!(kernel.discovered.contains(names::RETRY_SUCCEEDS));
}

#[test]
fn the_late_commit_double_commit_is_found_only_where_the_tool_neither_dedupes_nor_fences() {
    let found = |dedupes, fences| {
        explored(
            variant(Variant::RetryWithoutContract),
            direct(dedupes, fences),
        )
        .failed
        .contains(&names::EFF_1)
    };
    assert!(found(false, false));
    assert!(!found(true, false));
    assert!(!found(false, true));
    assert!(!found(true, true));
}
