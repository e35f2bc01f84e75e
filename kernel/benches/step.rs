//! The cost of one step on the suspend, approve-and-resume and reconcile paths, and of a
//! checkpoint's encode, decode and verify, next to the baselines they are judged against in
//! the same run: a plain copy of the run and one checkpoint digest.
//!
//! The target (BENCHMARKS.md): a step costs at most three times a copy of the run plus the
//! one digest the path must compute or verify.
//!
//! Run with `cargo bench -p resumable-kernel --bench step`.

use criterion::{criterion_group, criterion_main, Criterion};
use resumable_kernel::checkpoint::decode_json;
use resumable_kernel::*;
use std::hint::black_box;
use std::time::Duration;

const OPERATOR: Name = Name::lit("ops");
const APPROVER: Name = Name::lit("approver");
const REQUESTER: Name = Name::lit("agent");

fn run() -> Run {
    let identity = Identity {
        tenant: Name::lit("tenant-a"),
        session: Name::lit("session-1"),
        run: Name::lit("run-approval"),
        definition: Name::lit("publisher@1"),
    };
    let policy = Policy {
        operator: OPERATOR,
        reconcile_window: 100,
        allowed: resumable_kernel::Allowed::ALL,
    };
    Run::new(identity, policy, Time(0)).expect("the window is not 0")
}

fn call() -> Call {
    Call {
        call_id: Name::lit("call-1"),
        tool: Name::lit("publish:demo"),
        args: Digest::of(b"{\"post\":42}"),
        key: IdempotencyKey::lit("idem-run-approval"),
        contract: ToolContract {
            dedupes: true,
            query_fences: false,
            max_attempts: 3,
            ..ToolContract::default()
        },
    }
}

fn accept(run: &Run, input: &Input) -> Transition {
    match step(run, input) {
        Ok(t) => t,
        Err(rejection) => panic!("the benchmark's own input was refused: {rejection}"),
    }
}

/// The suspend path: a running run suspends for approval (binds the call's key to its
/// arguments and seals the checkpoint).
fn suspend_input() -> Input {
    Input {
        at: Time(1),
        event: Event::Suspend {
            wait: Wait::Approval {
                call: call(),
                requester: REQUESTER,
                prior: Prior::NONE,
            },
            expires_at: Time(50),
            responsible: APPROVER,
            resource_version: 7,
        },
    }
}

/// The approve-and-resume path: the run suspended for approval and the approving resume
/// (verifies the checkpoint, checks the approval, dispatches).
fn approval() -> (Run, Input) {
    let t = accept(&run(), &suspend_input());
    let cp = *t
        .effects
        .checkpoint()
        .expect("a suspension persists a checkpoint");
    let c = call();
    let decision = Decision::Approve(Approval {
        call_id: c.call_id,
        args: c.args,
        requester: REQUESTER,
        approver: APPROVER,
        revision: cp.revision,
        expires_at: Time(40),
    });
    let resume = Input {
        at: Time(2),
        event: Event::Resume(Resume {
            checkpoint: cp,
            decision,
            facts: Facts {
                resource_version: 7,
                permitted: true,
                within_budget: true,
            },
        }),
    };
    (t.next, resume)
}

/// The reconcile path: a dispatch in flight at a restart, and the "not committed" answer on a
/// deduping tool (verifies the checkpoint, retries under the same key).
fn reconcile() -> (Run, Input) {
    let dispatched = accept(
        &run(),
        &Input {
            at: Time(1),
            event: Event::Dispatch {
                call: call(),
                prior: Prior::NONE,
                resource_version: None,
            },
        },
    );
    let recovered = accept(
        &dispatched.next,
        &Input {
            at: Time(2),
            event: Event::Recover,
        },
    );
    let cp = *recovered
        .effects
        .checkpoint()
        .expect("a recovery persists a checkpoint");
    let resume = Input {
        at: Time(3),
        event: Event::Resume(Resume {
            checkpoint: cp,
            decision: Decision::Reconcile(QueryAnswer::NotCommitted),
            facts: Facts {
                resource_version: cp.resource_version,
                permitted: true,
                within_budget: true,
            },
        }),
    };
    (recovered.next, resume)
}

/// The sizes every step copies, printed once beside the timings (BENCHMARKS.md).
fn print_sizes() {
    use std::mem::size_of;
    println!(
        "sizes (bytes): Run {}, Transition {}, Effects {}, Batch {}, Slot {}, ResumeReceipt {}, Checkpoint {}",
        size_of::<Run>(),
        size_of::<Transition>(),
        size_of::<Effects>(),
        size_of::<Batch>(),
        size_of::<Slot>(),
        size_of::<ResumeReceipt>(),
        size_of::<Checkpoint>(),
    );
}

fn benches(c: &mut Criterion) {
    print_sizes();
    let idle = run();
    let suspend = suspend_input();
    let (pending, approve) = approval();
    let (unknown, answer) = reconcile();
    // Each path is checked once, outside the timing, to make sure it measures an acceptance.
    for (from, input) in [(&idle, &suspend), (&pending, &approve), (&unknown, &answer)] {
        accept(from, input);
    }
    let checkpoint = *accept(&idle, &suspend)
        .effects
        .checkpoint()
        .expect("a suspension persists a checkpoint");

    let mut group = c.benchmark_group("kernel");
    group.bench_function("step/suspend", |b| {
        b.iter(|| step(black_box(&idle), black_box(&suspend)))
    });
    group.bench_function("step/approve_and_resume", |b| {
        b.iter(|| step(black_box(&pending), black_box(&approve)))
    });
    group.bench_function("step/reconcile", |b| {
        b.iter(|| step(black_box(&unknown), black_box(&answer)))
    });
    group.bench_function("checkpoint/encode_decode_verify", |b| {
        b.iter(|| {
            let bytes = serde_json::to_vec(black_box(&checkpoint)).expect("a checkpoint encodes");
            decode_json(black_box(&bytes))
        })
    });
    // Baselines, in the same run: a plain copy of the run, and one checkpoint digest.
    group.bench_function("baseline/copy_run", |b| {
        b.iter(|| {
            let copy: Run = *black_box(&pending);
            copy
        })
    });
    group.bench_function("baseline/checkpoint_digest", |b| {
        b.iter(|| black_box(&checkpoint).compute_digest())
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}

criterion_group! {
    name = step_benches;
    config = config();
    targets = benches
}
criterion_main!(step_benches);
