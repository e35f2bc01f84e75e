'use strict';
// The surface: a rejection is a value that changes nothing, malformed input throws the one
// error class with the kernel's message, and the two entry points are the same package.

const assert = require('node:assert/strict');
const { test } = require('node:test');

const rk = require('..');

const IDENTITY = { tenant: 't', session: 's', run: 'r', definition: 'd@1' };
const POLICY = { operator: 'ops', reconcile_window: 10 };
const ZERO = '00'.repeat(32);

test('a new run starts at revision 0, running', () => {
  const run = rk.newRun(IDENTITY, POLICY, 0);
  assert.equal(run.revision, 0);
  assert.equal(run.phase.phase, 'running');
});

test('a rejection leaves the run unchanged and is a value', () => {
  const run = rk.newRun(IDENTITY, POLICY, 0);
  const done = rk.step(run, { at: 1, kind: 'complete', result: ZERO });
  assert.equal(done.accepted, true);
  assert.equal(done.verdict, 'accepted');
  assert.equal(done.run.phase.phase, 'completed');
  const before = JSON.stringify(done.run);
  const again = rk.step(done.run, { at: 2, kind: 'complete', result: ZERO });
  assert.equal(again.accepted, false);
  assert.equal(again.verdict, 'terminal');
  assert.equal(again.rejection.rejection, 'terminal');
  assert.ok(again.message.length > 0);
  assert.equal(JSON.stringify(done.run), before);
});

test('stepJson answers the same verdict as JSON text', () => {
  const run = rk.newRun(IDENTITY, POLICY, 0);
  const input = { at: 1, kind: 'complete', result: ZERO };
  const answer = JSON.parse(rk.stepJson(JSON.stringify(run), JSON.stringify(input)));
  const verdict = rk.step(run, input);
  assert.deepEqual(answer.run, verdict.run);
  assert.deepEqual(answer.effects, verdict.effects);
});

const RUN_TEXT = JSON.stringify(rk.newRun(IDENTITY, POLICY, 0));
const MALFORMED = [
  ['{', '{"at": 1, "kind": "recover"}', 'run: EOF while parsing'],
  [RUN_TEXT, '{"at": 1, "kind": "explode"}', 'input: unknown variant `explode`'],
  [RUN_TEXT, '{"at": 1, "at": 2, "kind": "recover"}', 'the key "at" appears twice'],
  [RUN_TEXT, `{"at": 1, "kind": "cancel", "by": "${'x'.repeat(65)}"}`, 'input: '],
];

for (const [run, input, message] of MALFORMED) {
  test(`malformed input throws ResumableError: ${message}`, () => {
    assert.throws(
      () => rk.stepJson(run, input),
      (e) => e instanceof rk.ResumableError && e instanceof Error && e.message.includes(message),
    );
  });
}

test('a run or input that is not an object is refused with the one error class', () => {
  assert.throws(() => rk.step(42, {}), rk.ResumableError);
  assert.throws(() => rk.step(JSON.parse(RUN_TEXT), null), rk.ResumableError);
  assert.throws(() => rk.newRun(IDENTITY, { operator: 'ops' }, 0), rk.ResumableError);
  assert.throws(() => rk.toolKey(IDENTITY, ''), rk.ResumableError);
  const loop = { at: 1, kind: 'recover' };
  loop.self = loop;
  assert.throws(() => rk.step(JSON.parse(RUN_TEXT), loop), rk.ResumableError);
});

test('the history states a bound call as used, with its argument digest', () => {
  const history = new rk.History();
  const call = { call_id: 'call-1', key: 'idem-1' };
  assert.deepEqual(history.prior(call), { call_id_used: false, key: null });
  const run = rk.newRun(IDENTITY, POLICY, 0);
  const args = rk.digest({ text: 'hello' });
  const verdict = rk.step(run, {
    at: 1,
    kind: 'dispatch',
    call: {
      call_id: 'call-1',
      tool: 'publish:demo',
      args,
      key: 'idem-1',
      contract: { dedupes: true, query_fences: false, max_attempts: 3 },
    },
    prior: history.prior(call),
  });
  assert.equal(verdict.accepted, true, verdict.message);
  history.apply(verdict.effects);
  assert.deepEqual(history.prior(call), { call_id_used: true, key: { args, committed: false } });
});

test('an audit log records accepted and refused inputs alike', () => {
  const log = rk.AuditLog.open(IDENTITY, POLICY, 0);
  assert.equal(log.record({ at: 1, kind: 'complete', result: ZERO }).accepted, true);
  assert.equal(log.record({ at: 2, kind: 'complete', result: ZERO }).verdict, 'terminal');
  assert.equal(log.lines.length, 3);
  assert.equal(log.text().split('\n').filter((l) => l).length, 3);
  assert.equal(log.run.phase.phase, 'completed');
  assert.ok(log.anchorJson().endsWith('\n'));
});

test('the ES module entry point is the same package', async () => {
  const esm = await import('../index.mjs');
  assert.equal(esm.step, rk.step);
  assert.equal(esm.ResumableError, rk.ResumableError);
  assert.equal(esm.default, rk);
  assert.equal(esm.RULES_VERSION, rk.RULES_VERSION);
  assert.ok(Number.isInteger(rk.RULES_VERSION) && rk.RULES_VERSION > 0);
});

test('an integer beyond 2^53 - 1 round-trips as a BigInt, where JSON.parse would round it', () => {
  const text = '{"at":18446744073709551615,"kind":"recover","note":"9007199254740993 in a string"}';
  assert.notEqual(JSON.stringify(JSON.parse(text)), text);
  const value = rk.parse(text);
  assert.equal(value.at, 18446744073709551615n);
  assert.equal(value.note, '9007199254740993 in a string');
  assert.equal(rk.stringify(value), text);
  assert.deepEqual(rk.parse('[9007199254740991, -9007199254740993, 1.2345678901234567]'), [
    9007199254740991,
    -9007199254740993n,
    1.2345678901234567,
  ]);
});
