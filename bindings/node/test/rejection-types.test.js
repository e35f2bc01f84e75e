'use strict';
// index.d.ts declares each rejection with its evidence exactly as the kernel writes it, checked
// against real rejections: every rejection of every scenario of spec/scenarios, stepped through
// the package as the parity test steps them, and a few provoked here where no scenario reaches
// a kind (`revision_exhausted`) or a value beyond 2^53 - 1 (read as a BigInt). Each is written
// as `export const rN: Rejection = <its value>;` into a TypeScript file that the pinned tsc
// must compile in strict mode: a field the kernel writes but the declaration lacks (an excess
// property), a declared field the kernel does not write, or a value of another type fails it.
// The same file holds the kernel's own list of rejection names as a record keyed by
// `RejectionKind`, so a kind missing from either side fails it too. The real rejections cover
// all 47 of the kernel's 47 kinds (46 reached by the scenarios, `revision_exhausted` provoked);
// the test asserts that none is left out. The negative half: real rejections broken one way
// each (a field of the wrong type, a missing field, an extra field...) must each fail to
// compile, on their own line, so the check is shown able to fail.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');

const rk = require('..');
const { ROOT } = require('./helpers.js');
const { Driver, SCENARIO_FILES, scenarioLines } = require('./scenario-driver.js');

const INDEX = path.join(__dirname, '..', 'index');
const IDENTITY = { tenant: 't', session: 's', run: 'r', definition: 'd@1' };
const POLICY = { operator: 'ops', reconcile_window: 10 };
const ZERO = '00'.repeat(32);
const U64_MAX = 2n ** 64n - 1n;

/** The kernel's rejection names, in order, as `RejectionKind` in kernel/src/reject.rs spells them. */
function kernelKinds() {
  const source = fs.readFileSync(path.join(ROOT, 'kernel', 'src', 'reject.rs'), 'utf8');
  const block = source.split('pub enum RejectionKind {')[1].split('\n    }\n')[0];
  return [...block.matchAll(/^\s+\w+ = "(\w+)",$/gm)].map((m) => m[1]);
}

/** A value as a TypeScript expression: JSON, with each BigInt as a bigint literal. */
function literal(value) {
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${literal(v)}`);
    return `{ ${fields.join(', ')} }`;
  }
  return JSON.stringify(value);
}

/** Every rejection the scenarios produce, stepped through the package. */
function scenarioRejections() {
  const out = [];
  for (const file of SCENARIO_FILES) {
    const [header, ...inputs] = scenarioLines(file);
    const driver = new Driver(header);
    for (const line of inputs) {
      const [, verdict] = driver.step(line);
      if (!verdict.accepted) out.push(verdict);
    }
  }
  return out;
}

/** Rejections no scenario gives: an exhausted revision counter, and u64 evidence beyond 2^53. */
function provokedRejections() {
  const run = rk.newRun(IDENTITY, POLICY, 0);
  const complete = { at: 1, kind: 'complete', result: ZERO };
  const suspend = {
    kind: 'suspend',
    wait: { wait: 'callback', callback: 'cb' },
    expires_at: U64_MAX,
    responsible: 'ops',
    resource_version: 0,
  };
  return [
    rk.step({ ...run, revision: U64_MAX }, complete),
    rk.step({ ...run, updated_at: U64_MAX }, complete),
    rk.step(run, { at: U64_MAX, ...suspend }),
  ];
}

/** Runs the pinned tsc in strict mode over `file`: its exit status and what it printed. */
function tsc(file) {
  const bin = require.resolve('typescript/bin/tsc');
  const args = ['--noEmit', '--strict', '--module', 'commonjs', '--target', 'es2020', file];
  const p = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 300_000 });
  return { status: p.status, out: p.stdout + p.stderr };
}

function tsFile(lines) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'resumable-rejections-'));
  const file = path.join(dir, 'rejections.ts');
  const head = [`import type { Rejection, RejectionKind } from ${JSON.stringify(INDEX)};`];
  fs.writeFileSync(file, [...head, ...lines, ''].join('\n'));
  return { dir, file, first: head.length + 1 };
}

const KINDS = kernelKinds();
const REJECTED = [...scenarioRejections(), ...provokedRejections()];

test('the real rejections cover every one of the kernel kinds', (t) => {
  assert.equal(KINDS.length, 47, 'the kernel list was read');
  const fromScenarios = new Set(scenarioRejections().map((v) => v.rejection.rejection));
  const covered = new Set(REJECTED.map((v) => v.rejection.rejection));
  t.diagnostic(
    `${covered.size} of ${KINDS.length} kinds from real rejections, ` +
      `${fromScenarios.size} of them by the scenarios (${REJECTED.length} rejections)`,
  );
  assert.deepEqual(KINDS.filter((k) => !covered.has(k)), []);
  for (const v of REJECTED) {
    assert.equal(v.accepted, false);
    assert.equal(v.verdict, v.rejection.rejection);
    assert.equal(typeof v.message, 'string');
  }
  // The provoked ones are what they were built to be, and carry the BigInts they were built for.
  const provoked = provokedRejections().map((v) => v.rejection);
  assert.deepEqual(provoked, [
    { rejection: 'revision_exhausted' },
    { rejection: 'clock_regressed', last: U64_MAX, got: 1 },
    { rejection: 'expiry_not_in_future', expires_at: U64_MAX, now: U64_MAX },
  ]);
});

test('every real rejection type-checks as a Rejection in strict mode', () => {
  const seen = new Set();
  const lines = [];
  for (const v of REJECTED) {
    const text = literal(v.rejection);
    if (seen.has(text)) continue;
    seen.add(text);
    lines.push(`export const r${lines.length}: Rejection = ${text};`);
  }
  const kinds = KINDS.map((k) => `  ${k}: null,`);
  lines.push('export const kinds: { [K in RejectionKind]: null } = {', ...kinds, '};');
  const { dir, file } = tsFile(lines);
  try {
    const { status, out } = tsc(file);
    assert.equal(status, 0, out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a rejection with wrong, missing or extra evidence fails to compile', () => {
  const real = (kind) => {
    const v = REJECTED.find((r) => r.rejection.rejection === kind);
    assert.ok(v, kind);
    return rk.parse(rk.stringify(v.rejection));
  };
  const without = (value, field) => {
    assert.ok(field in value, field);
    const out = { ...value };
    delete out[field];
    return out;
  };
  const stale = real('stale_revision');
  const broken = [
    // A revision written as text.
    { ...stale, current: String(stale.current) },
    // A missing field.
    without(real('result_mismatch'), 'got_attempt'),
    // A field the kind does not have.
    { ...real('not_running'), since: 1 },
    // Evidence on a kind that has none.
    { ...real('permission_revoked'), phase: 'running' },
    // A phase that is not one.
    { ...real('terminal'), phase: 'paused' },
    // Another kind's evidence under this kind's name.
    { ...stale, rejection: 'already_applied' },
    // A BigInt where the kernel writes a small integer (a schema version).
    { ...real('schema_too_new'), got: 70000n },
    // A name the kernel does not have.
    { rejection: 'not_a_rejection' },
  ];
  const lines = broken.map((b, i) => `export const b${i}: Rejection = ${literal(b)};`);
  const { dir, file, first } = tsFile(lines);
  try {
    const { status, out } = tsc(file);
    assert.notEqual(status, 0, out);
    const failed = new Set(
      [...out.matchAll(/rejections\.ts\((\d+),\d+\): error TS\d+/g)].map((m) => Number(m[1])),
    );
    broken.forEach((b, i) => {
      assert.ok(failed.has(first + i), `compiled although broken: ${literal(b)}\n${out}`);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
