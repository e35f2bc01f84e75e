import resumable_kernel as rk

run = rk.new_run({"tenant": "acme", "session": "s-1", "run": "run-7", "definition": "publisher@1"},
                 {"operator": "ops", "reconcile_window": 100}, created_at=0)
history = rk.History()  # a runtime keeps this index in its store
call = {"call_id": "call-1", "tool": "publish", "args": rk.digest({"post": 42}), "key": "idem-1",
        "contract": {"dedupes": True, "query_fences": False, "max_attempts": 3}}

# Suspend for alice's approval; store the run, then hand alice the checkpoint.
wait = {"wait": "approval", "call": call, "requester": "agent", "prior": history.prior(call)}
v = rk.step(run, {"at": 1, "kind": "suspend", "wait": wait, "expires_at": 50,
                  "responsible": "alice", "resource_version": 7})
run, checkpoint = v.run, v.checkpoint
history.apply(v.effects)

# Alice approves exactly this call, these arguments, this requester, this revision.
approval = {"decision": "approve", "call_id": "call-1", "args": call["args"], "requester": "agent",
            "approver": "alice", "revision": checkpoint["revision"], "expires_at": 40}
facts = {"resource_version": 7, "permitted": True, "within_budget": True}
v = rk.step(run, {"at": 2, "kind": "resume", "checkpoint": checkpoint, "decision": approval, "facts": facts})
run = v.run  # commit it first (write-ahead), then dispatch under the kernel's tool key
print("dispatch", v.dispatch["tool"], "tool key", v.dispatch["tool_key"])

# The same approval again is refused, and changes nothing.
again = rk.step(run, {"at": 3, "kind": "resume", "checkpoint": checkpoint, "decision": approval, "facts": facts})
print("again:", again.kind)
