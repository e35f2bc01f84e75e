"""The extension module: pure functions over JSON text in the kernel's serde form."""

from typing import Any, Optional

RULES_VERSION: int
AUDIT_FORMAT_VERSION: int
DRIVER_RETRIES: int

class ResumableError(ValueError):
    """Input that is not the kernel's JSON form, or a value with no canonical form; the
    message is the kernel's."""

def new_run(spec: str) -> str: ...
def step(run: str, input: str) -> str: ...
def seal_checkpoint(checkpoint: str) -> str: ...
def call_id_fingerprint(call_id: str) -> str: ...
def key_fingerprint(key: str) -> str: ...
def tool_key(identity: str, key: str) -> str: ...
def canonical(value: Any) -> str: ...
def digest(value: Any) -> str: ...
def canonical_json(text: str) -> str: ...
def digest_json(text: str) -> str: ...
def audit_open(header: str, key: Optional[str] = None) -> str: ...
def audit_append(run: str, anchor: str, input: str, key: Optional[str] = None) -> str: ...

# The driver core (resumable_driver::forms): JSON text in, JSON text out.
def driver_open(header: str, key: Optional[str] = None) -> str: ...
def driver_plan(held: str, book: str, now: int, proposals: str, facts: str) -> str: ...
def driver_plan_turn(held: str, book: str, now: int, proposals: str, facts: str) -> str: ...
def driver_feed(
    held: str, book: str, now: int, event: str, kept: str, key: Optional[str] = None
) -> str: ...
def driver_answer(
    held: str,
    book: str,
    now: int,
    request: str,
    message: str,
    facts: str,
    key: Optional[str] = None,
) -> str: ...
def driver_decide(
    held: str,
    book: str,
    now: int,
    request: str,
    words: str,
    approver: str,
    expires_at: int,
    facts: str,
    key: Optional[str] = None,
) -> str: ...
def driver_decide_calls(
    held: str,
    book: str,
    now: int,
    request: str,
    words: str,
    approver: str,
    expires_at: int,
    facts: str,
    key: Optional[str] = None,
) -> str: ...
def driver_resume(
    held: str,
    book: str,
    now: int,
    request: str,
    value: str,
    approver: str,
    facts: str,
    key: Optional[str] = None,
) -> str: ...
def driver_read_resume(request: str, value: str, approver: str) -> str: ...
def driver_is_resume_decision(request: str, value: str, approver: str) -> str: ...
def driver_is_answer(message: str) -> str: ...
def driver_tool_result(
    held: str, book: str, now: int, tool_call: str, result: str, key: Optional[str] = None
) -> str: ...
def driver_reconcile(
    held: str,
    book: str,
    now: int,
    dispatch: str,
    found: Optional[str],
    facts: str,
    key: Optional[str] = None,
) -> str: ...
def driver_wake_at(held: str) -> str: ...
def driver_approval(request: str, approve: bool, approver: str, expires_at: int) -> str: ...
