//! The step never touches the heap: a counting global allocator sees zero allocations while
//! the kernel steps the suspend, approve-and-resume, tool result, recover and reconcile paths.
//!
//! The kernel itself forbids unsafe code; implementing `GlobalAlloc` needs it, so this one test
//! file allows it, and only to forward to the system allocator.
#![allow(
    unsafe_code,
    reason = "a counting global allocator forwards to the system one"
)]

use resumable_kernel::*;
use resumable_testkit::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Counts allocations made by this thread only, so other test threads cannot interfere.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: forwards the caller's layout unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the pointer came from `alloc` above, which is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: as for `alloc` and `dealloc`: the system allocator's own block and layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|n| n.get())
}

/// Steps and returns the transition and how many allocations the step made.
fn counted(run: &Run, input: &Input) -> (Result<Transition, Rejection>, u64) {
    let before = allocations();
    let result = step(run, input);
    (result, allocations() - before)
}

#[test]
fn every_path_steps_without_a_heap_allocation() {
    // The counter must see an allocation when there is one, or the zero below means nothing.
    let before = allocations();
    drop(std::hint::black_box(vec![1u8; 16]));
    assert!(
        allocations() > before,
        "the counting allocator sees allocations"
    );

    let publish = call("call-1", "publish:demo", "idem-run-approval");
    let run = new_run("run-approval");
    let mut seen = Vec::with_capacity(16);

    let (t, n) = counted(&run, &at(1, suspend_for_approval(publish, 50)));
    seen.push(("suspend", n));
    let t = t.expect("suspend is accepted");
    let cp = *t.effects.checkpoint().expect("a checkpoint");
    let run = t.next;

    let approve = resume(cp, Decision::Approve(approval(&cp, &publish)));
    let (t, n) = counted(&run, &at(2, approve));
    seen.push(("approve and resume", n));
    let run = t.expect("approve is accepted").next;

    let (t, n) = counted(&run, &at(3, approve));
    seen.push(("duplicate approval (rejected)", n));
    assert!(matches!(t, Err(Rejection::AlreadyApplied { .. })));

    let (t, n) = counted(&run, &at(3, Event::Recover));
    seen.push(("recover", n));
    let t = t.expect("recover is accepted");
    let cp = *t.effects.checkpoint().expect("a checkpoint");
    let run = t.next;

    let committed = Decision::Reconcile(QueryAnswer::Committed {
        result: Digest::of(b"ok"),
    });
    let (t, n) = counted(&run, &at(4, resume(cp, committed)));
    seen.push(("reconcile committed", n));
    let run = t.expect("reconcile is accepted").next;

    let next_call = call("call-2", "notify:demo", "idem-notify");
    let (t, n) = counted(&run, &at(5, first_dispatch(next_call)));
    seen.push(("dispatch", n));
    let run = t.expect("dispatch is accepted").next;

    let result = Event::ToolResult {
        call_id: next_call.call_id,
        attempt: 0,
        result: Digest::of(b"sent"),
    };
    let (t, n) = counted(&run, &at(6, result));
    seen.push(("tool result", n));
    t.expect("the result is accepted");

    let allocating: Vec<_> = seen.iter().filter(|(_, n)| *n > 0).collect();
    assert!(
        allocating.is_empty(),
        "steps that allocated: {allocating:?}"
    );
    assert_eq!(seen.len(), 7);
}
