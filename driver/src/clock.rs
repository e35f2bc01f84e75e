//! Time is the driver's: the `now` a caller passes is the only time an input is stamped with.
//!
//! A party's message may say when it was written; the core never reads it. A decision is
//! judged at the time the driver feeds it (APR-2, EXP-1), so an approval stamped in time and
//! delivered late is late.

use resumable_kernel::{Run, Time};

/// The time stamped on an input fed at `now`: `now`, or the run's last input's time if the
/// driver's clock lags it (CLK-1: a worker whose clock lags another's must not be refused for
/// it, and the run's time never runs backwards).
pub fn stamp(run: &Run, now: Time) -> Time {
    stamp_after(run.updated_at(), now)
}

/// [`stamp`] on the run's last input's time alone, for a driver whose run is not the kernel's
/// [`Run`] (the model's world steps the reference machine too, which keeps its own run type):
/// the one implementation of the rule, which [`stamp`] calls.
pub fn stamp_after(last: Time, now: Time) -> Time {
    Time(now.0.max(last.0))
}

/// When the core must next be called for `run` if nothing else happens: the first instant at
/// which `expire` is accepted ([`Run::deadline`]); `None` while nothing times out.
pub fn wake_at(run: &Run) -> Option<Time> {
    run.deadline()
}

/// Whether the run's deadline has come at `now`: the next input must be `expire`.
pub fn due(run: &Run, now: Time) -> bool {
    wake_at(run).is_some_and(|at| stamp(run, now) >= at)
}
