'use strict';
// The resumable lifecycle kernel for Node: safe checkpoint, suspend and resume of agent runs.
//
// Pure functions over the kernel's JSON forms (spec/ in the repository names every field): a
// run, an input, the verdict of a step (accepted with the next run and its effects, or a
// rejection with its kind and evidence), checkpoints, audit records. Nothing here holds state
// between calls or reads a clock; time and identifiers arrive in the inputs.
//
// A rejection is a value (`{ verdict: KIND, rejection, message }`, `accepted: false`). Input
// that is not the kernel's form throws `ResumableError`, the one error class, carrying the
// kernel's message.
//
// The driving contract is the kernel's: for each input call `step`; on a rejection change
// nothing; on acceptance store `run` (compare-and-set on the revision), with the audit record
// and the history entry the effects carry, in one commit, and only then carry out the
// checkpoint, dispatch or query effects, in order. Before a call is bound (a dispatch, or a
// suspension for its approval) state what the run's history holds of it as its `prior`
// (`History` keeps that index in memory).

const native = require('./resumable-kernel.node');

/** Input that is not the kernel's JSON form, or a value with no canonical form. */
class ResumableError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ResumableError';
  }
}

// Every native call goes through here: whatever the addon throws is malformed input.
function call(fn, ...args) {
  try {
    return fn(...args);
  } catch (e) {
    throw new ResumableError(e && typeof e.message === 'string' ? e.message : String(e));
  }
}

// The kernel's times, revisions and versions are unsigned 64-bit integers; a JavaScript number
// holds integers exactly only up to 2^53 - 1. So `parse` reads an integer beyond that as a
// BigInt, and `stringify` writes a BigInt as its digits: a run or an input round-trips exactly.
// A marker no JSON text of the kernel's holds stands for a BigInt between the two steps.
const BIG = '\u0000resumable-bigint:';
const TOKENS = /"(?:[^"\\]|\\.)*"|(?<![\d.eE+-])-?\d{16,}(?![.eE\d])/g;

/** JSON.parse, with every integer beyond 2^53 - 1 in magnitude read as a BigInt. */
function parse(json) {
  if (!/\d{16}/.test(json)) return JSON.parse(json);
  let big = false;
  const marked = json.replace(TOKENS, (token) => {
    if (token.charCodeAt(0) === 34 || Number.isSafeInteger(Number(token))) return token;
    big = true;
    return `"\\u0000resumable-bigint:${token}"`;
  });
  if (!big) return JSON.parse(json);
  return JSON.parse(marked, (_key, value) =>
    typeof value === 'string' && value.startsWith(BIG) ? BigInt(value.slice(BIG.length)) : value,
  );
}

/** JSON.stringify, with every BigInt written as its digits. */
function stringify(value) {
  // Without a replacer JSON.stringify is several times faster, and it throws on a BigInt.
  try {
    return JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
  }
  const json = JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? `${BIG}${v}` : v));
  return json.replace(/"\\u0000resumable-bigint:(-?\d+)"/g, '$1');
}

function text(value, what) {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') {
    throw new ResumableError(`${what}: expected an object or JSON text, got ${typeof value}`);
  }
  try {
    return stringify(value);
  } catch (e) {
    throw new ResumableError(`${what}: ${e.message}`);
  }
}

const RULES_VERSION = native.rulesVersion();
const AUDIT_FORMAT_VERSION = native.auditFormatVersion();
const BATCH_CAPACITY = native.batchCapacity();

function verdictOf(answer) {
  if (answer.verdict === 'accepted') {
    return { verdict: 'accepted', accepted: true, run: answer.run, effects: answer.effects };
  }
  return {
    verdict: answer.verdict,
    accepted: false,
    rejection: answer.rejection,
    message: answer.message,
  };
}

/** A new run at revision 0, running. */
function newRun(identity, policy, createdAt) {
  const spec = { identity, policy, created_at: createdAt };
  return parse(call(native.newRun, stringify(spec)));
}

/** One kernel step over JSON text, the fastest form: the verdict as JSON text. */
function stepJson(run, input) {
  return call(native.step, run, input);
}

/** One kernel step: `run` and `input` as objects or JSON text. A rejection is returned. */
function step(run, input) {
  return verdictOf(parse(call(native.step, text(run, 'run'), text(input, 'input'))));
}

/** The effect of this kind carried by an accepted verdict, if any. */
function effect(verdict, kind) {
  if (!verdict.accepted) return undefined;
  return verdict.effects.find((e) => e.effect === kind);
}

/** The checkpoint to persist (without its `effect` tag) of an accepted verdict, if any. */
function checkpointOf(verdict) {
  const e = effect(verdict, 'persist_checkpoint');
  if (e === undefined) return undefined;
  const { effect: _tag, ...checkpoint } = e;
  return checkpoint;
}

/** The checkpoint with its digest recomputed over its other fields. */
function sealCheckpoint(checkpoint) {
  return parse(call(native.sealCheckpoint, text(checkpoint, 'checkpoint')));
}

/** The tool key the kernel dispatches a call under (64 hex digits). */
function toolKey(identity, key) {
  return call(native.toolKey, text(identity, 'identity'), key);
}

const LONE_SURROGATE = /\p{Surrogate}/u;

// Refuses what JSON.stringify would drop, change or fail on: only null, booleans, finite
// numbers, strings without lone surrogates, arrays and plain objects are JSON values.
function checkValue(value, depth, seen) {
  if (depth > 128) throw new ResumableError('nested deeper than 128 levels');
  switch (typeof value) {
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new ResumableError(`${value} is not a JSON number`);
      return;
    case 'string':
      if (LONE_SURROGATE.test(value)) {
        throw new ResumableError('a string holds a lone surrogate, which is not text');
      }
      return;
    case 'object':
      break;
    default:
      throw new ResumableError(`a ${typeof value} is not a JSON value`);
  }
  if (value === null) return;
  if (seen.has(value)) throw new ResumableError('a container holds itself');
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) checkValue(value[i], depth + 1, seen);
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = (value.constructor && value.constructor.name) || 'object';
      throw new ResumableError(`a ${name} is not a JSON value`);
    }
    for (const key of Object.keys(value)) {
      if (LONE_SURROGATE.test(key)) {
        throw new ResumableError('a name holds a lone surrogate, which is not text');
      }
      checkValue(value[key], depth + 1, seen);
    }
  }
  seen.delete(value);
}

/** The RFC 8785 canonical form of a JavaScript value. */
function canonical(value) {
  checkValue(value, 0, new Set());
  return call(native.canonicalValue, JSON.stringify(value));
}

/** The argument digest of a value: SHA-256 over its RFC 8785 canonical form, in hex. */
function digest(value) {
  checkValue(value, 0, new Set());
  return call(native.digestValue, JSON.stringify(value));
}

/** The RFC 8785 canonical form of one JSON text, read strictly (I-JSON). */
function canonicalJson(json) {
  return call(native.canonicalJson, json);
}

/** The argument digest of one JSON text, as `resumable digest` prints it. */
function digestJson(json) {
  return call(native.digestJson, json);
}

/**
 * A run's call history as a driver keeps it: which call ids were bound, and each key's
 * argument digest and whether its result was recorded. Feed it every accepted transition's
 * effects (`apply`) in the commit that stores the run; ask it for a call's `prior` before
 * binding the call. A runtime keeps the same index in its store.
 */
class History {
  constructor() {
    this.callIds = new Set();
    this.keys = new Map();
  }

  /** What the history holds about `call`'s id and key: the `prior` to state. */
  prior(call_) {
    const used = this.callIds.has(call(native.callIdFingerprint, call_.call_id));
    const key = this.keys.get(call(native.keyFingerprint, call_.key));
    return { call_id_used: used, key: key === undefined ? null : { ...key } };
  }

  /** Writes the history entry an accepted transition's effects carry, if any. */
  apply(effects) {
    for (const e of effects) {
      if (e.effect !== 'history') continue;
      if (e.entry === 'bound') {
        this.callIds.add(e.call_id);
        if (!this.keys.has(e.key)) this.keys.set(e.key, { args: e.args, committed: false });
      } else if (e.entry === 'settled') {
        if (!this.keys.has(e.key)) this.keys.set(e.key, { args: '0'.repeat(64), committed: true });
        this.keys.get(e.key).committed = true;
      }
    }
  }
}

/**
 * An audit log being written (spec/audit-log.md): keyed with HMAC-SHA-256 when `key` (64 hex
 * digits) is given, anchored by `anchor`. Each record steps the log's own copy of the run
 * through the kernel, so the log holds the kernel's verdicts; refused inputs are recorded too.
 * The state is three values (`run`, `anchor`, the lines written), so a runtime stores `run`
 * and `anchor` with its run and goes on after a restart.
 */
class AuditLog {
  constructor(run, anchor, lines, key) {
    this.run = run;
    this.anchor = anchor;
    this.lines = lines;
    this.key = key === undefined ? null : key;
  }

  /** Starts a log for a new run and writes its header line. */
  static open(identity, policy, createdAt, options = {}) {
    const header = {
      run: { identity, policy, created_at: createdAt },
      tools: options.tools === undefined ? null : options.tools,
    };
    const key = options.key === undefined ? null : options.key;
    const out = parse(call(native.auditOpen, stringify(header), key));
    return new AuditLog(out.run, out.anchor, [out.line], key);
  }

  /** Steps the log's run with `input`, appends the sealed record, returns the verdict. */
  record(input) {
    const out = parse(
      call(
        native.auditAppend,
        stringify(this.run),
        stringify(this.anchor),
        text(input, 'input'),
        this.key,
      ),
    );
    this.lines.push(out.line);
    this.run = out.run;
    this.anchor = out.anchor;
    return verdictOf(out.verdict);
  }

  /** The log as written: JSON lines. */
  text() {
    return this.lines.join('');
  }

  /** The anchor file's contents, for `resumable validate --anchor FILE`. */
  anchorJson() {
    return `${stringify(this.anchor)}\n`;
  }
}


// The driver core (the crate `resumable-driver`, its JSON forms): the driving contract, once.
// Each function takes what an adapter's store holds of a run (`held`, `book`), the adapter's
// own `now` and the facts it observed, and returns what to commit (`held`, `book`, `line`, in
// one transaction with compare-and-set) and what to carry out after the commit (`tool_calls`,
// `query`). `driver.js` is the I/O around them; the framework modules are glue over it.

const optionalKey = (key) => (key === undefined || key === null ? null : key);

/** A new run from its audit log's header: `{ held, book, line }`, `line` line 1 of its log. */
function driverOpen(header, key) {
  return parse(call(native.driverOpen, text(header, 'header'), optionalKey(key)));
}

/** What to do now about `proposals` (one model turn's calls): a todo. */
function driverPlan(held, book, now, proposals, facts) {
  return parse(
    call(native.driverPlan, text(held, 'held'), text(book, 'book'), now,
      text(proposals, 'proposals'), text(facts, 'facts')),
  );
}

/** As `driverPlan`, for a turn a framework reviews as one batch even of one call. */
function driverPlanTurn(held, book, now, proposals, facts) {
  return parse(
    call(native.driverPlanTurn, text(held, 'held'), text(book, 'book'), now,
      text(proposals, 'proposals'), text(facts, 'facts')),
  );
}

/** Stages the event a plan gave (`todo: 'feed'`) with what the book keeps of it. */
function driverFeed(held, book, now, event, kept, key) {
  return parse(
    call(native.driverFeed, text(held, 'held'), text(book, 'book'), now, text(event, 'event'),
      text(kept, 'kept'), optionalKey(key)),
  );
}

/**
 * A value a party or a framework handed back, as the text the core reads: a string as it is,
 * anything else as JSON, and `null` for what has no JSON form (the core takes it for no
 * decision).
 */
function handedBack(value) {
  let shown;
  try {
    shown = typeof value === 'string' ? value : stringify(value);
  } catch {
    shown = 'null';
  }
  return shown === undefined ? 'null' : shown;
}

/**
 * A resume value as the text the core reads: always its JSON (so a string is a JSON string,
 * never a decision), `null` for what has no JSON form.
 */
function resumeText(value) {
  let shown;
  try {
    shown = stringify(value);
  } catch {
    shown = 'null';
  }
  return shown === undefined ? 'null' : shown;
}

/** Stages a party's answer to `request`: only its checkpoint and decision are read. */
function driverAnswer(held, book, now, request, message, facts, key) {
  return parse(
    call(native.driverAnswer, text(held, 'held'), text(book, 'book'), now,
      text(request, 'request'), handedBack(message), text(facts, 'facts'), optionalKey(key)),
  );
}

/**
 * Stages a human-in-the-loop resume `value` (whatever the graph handed back) answering
 * `request` as one batch answer; `approver` is the adapter's, for a value naming none.
 */
function driverResume(held, book, now, request, value, approver, facts, key) {
  return parse(
    call(native.driverResume, text(held, 'held'), text(book, 'book'), now,
      text(request, 'request'), resumeText(value), String(approver), text(facts, 'facts'),
      optionalKey(key)),
  );
}

/** What `driverResume` would feed for `value` (`{ answer, kept }`), or not a decision. */
function driverReadResume(request, value, approver) {
  return parse(call(native.driverReadResume, text(request, 'request'), resumeText(value),
    String(approver)));
}

/** Whether `driverResume` would feed `value` as a decision on `request`, and count it. */
function driverIsResumeDecision(request, value, approver) {
  return parse(call(native.driverIsResumeDecision, text(request, 'request'), resumeText(value),
    String(approver)));
}

/** Stages a framework's decision list on `request` by `approver`, valid until `expiresAt`. */
function driverDecide(held, book, now, request, words, approver, expiresAt, facts, key) {
  let shown;
  try {
    shown = stringify(words);
  } catch {
    shown = 'null';
  }
  return parse(
    call(native.driverDecide, text(held, 'held'), text(book, 'book'), now,
      text(request, 'request'), shown === undefined ? 'null' : shown, String(approver), expiresAt,
      text(facts, 'facts'), optionalKey(key)),
  );
}

/**
 * Stages decisions on some calls of `request`, each naming its call (`[{ call_id, decision:
 * WORD }]`), by `approver`, valid until `expiresAt`.
 */
function driverDecideCalls(held, book, now, request, words, approver, expiresAt, facts, key) {
  let shown;
  try {
    shown = stringify(words);
  } catch {
    shown = 'null';
  }
  return parse(
    call(native.driverDecideCalls, text(held, 'held'), text(book, 'book'), now,
      text(request, 'request'), shown === undefined ? 'null' : shown, String(approver), expiresAt,
      text(facts, 'facts'), optionalKey(key)),
  );
}

/** Stages the tool's answer (`result`, any JSON value but null) to `toolCall`. */
function driverToolResult(held, book, now, toolCall, result, key) {
  return parse(
    call(native.driverToolResult, text(held, 'held'), text(book, 'book'), now,
      text(toolCall, 'tool call'), canonical(result), optionalKey(key)),
  );
}

/**
 * Stages the status query's answer about `dispatch`: `found` the result committed under its
 * key, `null` for a firm "not committed", `undefined` when the query failed (unknown).
 */
function driverReconcile(held, book, now, dispatch, found, facts, key) {
  const answer = found === undefined ? null : found === null ? 'null' : canonical(found);
  return parse(
    call(native.driverReconcile, text(held, 'held'), text(book, 'book'), now,
      text(dispatch, 'dispatch'), answer, text(facts, 'facts'), optionalKey(key)),
  );
}

/** Whether a party's `message` is an answer the core would feed (false: no decision at all). */
function driverIsAnswer(message) {
  return parse(call(native.driverIsAnswer, handedBack(message)));
}

/** When the driver must next call in for the held run (its deadline), or null. */
function driverWakeAt(held) {
  return parse(call(native.driverWakeAt, text(held, 'held')));
}

/** The approver's side: the answer approving (or denying) the one call of `request`. */
function driverApproval(request, approve, approver, expiresAt) {
  return parse(call(native.driverApproval, text(request, 'request'), approve, approver, expiresAt));
}

module.exports = {
  AUDIT_FORMAT_VERSION,
  BATCH_CAPACITY,
  RULES_VERSION,
  AuditLog,
  History,
  ResumableError,
  canonical,
  canonicalJson,
  checkpointOf,
  digest,
  digestJson,
  driverAnswer,
  driverApproval,
  driverDecide,
  driverDecideCalls,
  driverFeed,
  driverOpen,
  driverPlan,
  driverPlanTurn,
  driverReadResume,
  driverReconcile,
  driverResume,
  driverToolResult,
  driverIsAnswer,
  driverIsResumeDecision,
  driverWakeAt,
  effect,
  newRun,
  parse,
  sealCheckpoint,
  step,
  stepJson,
  stringify,
  toolKey,
};
