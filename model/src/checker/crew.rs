//! The helper threads of a search: hired once for the whole search, they take part in each
//! depth the calling thread starts, and leave when it dismisses them.
//!
//! Keeping the same threads for the whole search (rather than new ones per depth) keeps each
//! thread's allocator arena and caches warm, and costs one wake-up per depth.

use super::search::{lock, Level};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{Scope, Thread};
use std::time::Duration;

/// What the calling thread posts for the helpers.
struct Round<S> {
    /// Counts the depths started, so a helper knows a new one from the one it did.
    number: u64,
    level: Option<Arc<Level<S>>>,
    dismissed: bool,
}

/// The helpers and the board they wait on.
pub(crate) struct Crew<S> {
    round: Mutex<Round<S>>,
    posted: Condvar,
    /// Helpers done with the current round.
    finished: AtomicUsize,
    /// Helpers hired.
    hired: AtomicUsize,
    caller: Thread,
}

impl<S: Send + Sync> Crew<S> {
    /// A crew with no helpers yet, whose caller is the current thread.
    pub(crate) fn new() -> Self {
        Crew {
            round: Mutex::new(Round {
                number: 0,
                level: None,
                dismissed: false,
            }),
            posted: Condvar::new(),
            finished: AtomicUsize::new(0),
            hired: AtomicUsize::new(0),
            caller: std::thread::current(),
        }
    }

    /// Starts helper `n`, which runs `help` on each level posted until dismissed. A thread
    /// the system refuses is not hired: its share falls to the others.
    pub(crate) fn hire<'scope, 'env, F>(
        &'scope self,
        scope: &'scope Scope<'scope, 'env>,
        n: usize,
        help: F,
    ) where
        F: Fn(&Level<S>) + Send + 'scope,
        S: 'scope,
    {
        let spawned = std::thread::Builder::new()
            .name(format!("checker-{n}"))
            .spawn_scoped(scope, move || {
                let mut seen = 0;
                while let Some(level) = self.next(&mut seen) {
                    help(&level);
                    drop(level);
                    self.finished.fetch_add(1, Ordering::Release);
                    self.caller.unpark();
                }
            });
        if spawned.is_ok() {
            self.hired.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits for a level newer than round `seen`; `None` once dismissed.
    fn next(&self, seen: &mut u64) -> Option<Arc<Level<S>>> {
        let mut round = lock(&self.round);
        while round.number == *seen && !round.dismissed {
            round = self.posted.wait(round).unwrap_or_else(|p| p.into_inner());
        }
        if round.dismissed {
            return None;
        }
        *seen = round.number;
        round.level.clone()
    }

    /// Posts `level` for every helper.
    pub(crate) fn start(&self, level: Arc<Level<S>>) {
        self.finished.store(0, Ordering::Relaxed);
        let mut round = lock(&self.round);
        round.number += 1;
        round.level = Some(level);
        self.posted.notify_all();
    }

    /// Waits until every helper is done with the current level, calling `tick` now and then.
    pub(crate) fn wait(&self, tick: &mut dyn FnMut()) {
        let hired = self.hired.load(Ordering::Relaxed);
        while self.finished.load(Ordering::Acquire) < hired {
            tick();
            std::thread::park_timeout(Duration::from_millis(10));
        }
        lock(&self.round).level = None;
    }

    /// Sends every helper home; the scope joins them.
    pub(crate) fn dismiss(&self) {
        lock(&self.round).dismissed = true;
        self.posted.notify_all();
    }

    /// A guard that dismisses the crew when dropped, so that a panic in the calling thread
    /// (in a progress callback, say) cannot leave the scope waiting for helpers forever.
    pub(crate) fn dismissal(&self) -> Dismissal<'_, S> {
        Dismissal(self)
    }
}

/// See [`Crew::dismissal`].
pub(crate) struct Dismissal<'a, S: Send + Sync>(&'a Crew<S>);

impl<S: Send + Sync> Drop for Dismissal<'_, S> {
    fn drop(&mut self) {
        self.0.dismiss();
    }
}
