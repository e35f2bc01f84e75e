//! Waiting out a store that is down: a worker or an approver whose store fails (a PostgreSQL
//! restart, a lock held too long) says why on stderr, waits, and tries again, each wait twice
//! the last up to a bound, so that it neither hammers a restarting server nor sleeps long
//! after it is back.

use crate::store::StoreError;
use std::time::Duration;

/// The first wait after a failure.
pub const FIRST_MS: u64 = 100;
/// The longest wait between tries.
pub const MOST_MS: u64 = 5_000;

/// Waits growing from [`FIRST_MS`] to [`MOST_MS`], reset by a success.
#[derive(Clone, Debug)]
pub struct Backoff {
    next_ms: u64,
    failures: u64,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new()
    }
}

impl Backoff {
    /// No failure yet.
    pub fn new() -> Backoff {
        Backoff {
            next_ms: FIRST_MS,
            failures: 0,
        }
    }

    /// A success: the next failure waits [`FIRST_MS`] again. Says so if it ended failures.
    pub fn succeeded(&mut self, who: &str) {
        if self.failures > 0 {
            eprintln!(
                "{who}: the store answers again after {} failed tries",
                self.failures
            );
        }
        *self = Backoff::new();
    }

    /// A failure: says who waits and why, then waits. Returns how long it waited.
    pub fn failed(&mut self, who: &str, why: &StoreError) -> Duration {
        let wait = self.advance();
        eprintln!(
            "{who}: waiting for the store ({why}); try {} in {wait} ms",
            self.failures + 1
        );
        std::thread::sleep(Duration::from_millis(wait));
        Duration::from_millis(wait)
    }

    /// Counts a failure and returns the wait it takes, doubling the next one up to the bound.
    fn advance(&mut self) -> u64 {
        let wait = self.next_ms;
        self.failures += 1;
        self.next_ms = (wait * 2).min(MOST_MS);
        wait
    }

    /// The wait the next failure would take, in ms.
    pub fn next_ms(&self) -> u64 {
        self.next_ms
    }
}

/// Whether a store error may pass by waiting (the backend failed: a connection lost, a server
/// restarting, a lock held), rather than one that waiting cannot mend (a corrupt record, a
/// misnamed store).
pub fn transient(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(_) | StoreError::Unavailable(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_bound_and_a_success_resets_them() {
        let mut b = Backoff::new();
        let waits: Vec<u64> = (0..8).map(|_| b.advance()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        b.succeeded("test");
        assert_eq!(b.next_ms(), FIRST_MS);
        assert!(transient(&StoreError::Backend(
            "postgres: connection closed".into()
        )));
        assert!(!transient(&StoreError::Misuse("schema".into())));
    }
}
