'use strict';
// The same verdicts as the command line: every scenario of spec/scenarios, replayed through
// the package's own `step`, step by step against `resumable replay --format json`.
//
// The scenario conveniences (digests written as text, checkpoint references with changes and
// resealing, the approval's revision and the facts left out, each call's prior from the run's
// history, for a batch's calls and decisions alike, the header's allowed verdicts) are
// resolved here, in JavaScript, with the package's functions, as a Node driver would: the
// resolved input must be the one the command line fed its kernel, and the verdict,
// the rejection with its evidence and message, the effects and the run after the step must be
// the same.

const assert = require('node:assert/strict');
const { createHash } = require('node:crypto');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const rk = require('..');
const { SCENARIOS, resumableBin } = require('./helpers.js');

const SCENARIO_FILES = fs
  .readdirSync(SCENARIOS)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .map((f) => path.join(SCENARIOS, f));

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const clone = (v) => rk.parse(rk.stringify(v));

// Replaces every `{"text": ...}` with the SHA-256 of the text's UTF-8 bytes, in hex.
function textDigests(value) {
  if (Array.isArray(value)) return value.map(textDigests);
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && keys[0] === 'text' && typeof value.text === 'string') {
    return createHash('sha256').update(value.text, 'utf8').digest('hex');
  }
  return Object.fromEntries(keys.map((k) => [k, textDigests(value[k])]));
}

// Nested objects merge field by field; anything else replaces.
function merge(base, changes) {
  const out = clone(base);
  for (const [k, v] of Object.entries(changes)) {
    out[k] = isObject(v) && isObject(out[k]) ? merge(out[k], v) : clone(v);
  }
  return out;
}

class Driver {
  constructor(header) {
    const spec = header.run;
    const pick = (keys) => Object.fromEntries(keys.map((k) => [k, spec[k]]));
    this.run = rk.newRun(
      pick(['tenant', 'session', 'run', 'definition']),
      pick(['operator', 'reconcile_window', 'allowed'].filter((k) => k in spec)),
      spec.created_at,
    );
    this.history = new rk.History();
    this.emitted = [];
  }

  checkpoint(written) {
    if (written === 'latest') return this.emitted[this.emitted.length - 1];
    if (!isObject(written) || !('latest' in written || 'emitted' in written)) return written;
    let base;
    let changes;
    if ('latest' in written) {
      base = this.emitted[this.emitted.length - 1];
      changes = written.latest;
    } else {
      base = this.emitted.find((c) => c.revision === written.emitted);
      changes = written.changes || {};
    }
    const changed = merge(base, changes);
    return written.reseal === false ? changed : rk.sealCheckpoint(changed);
  }

  resolve(line) {
    const bare = Object.fromEntries(
      Object.entries(line).filter(([k]) => k !== 'note' && k !== 'expect'),
    );
    const written = textDigests(bare);
    if (written.kind === 'resume') {
      const cp = this.checkpoint(written.checkpoint);
      written.checkpoint = cp;
      const { decision } = written;
      if ((decision.decision === 'approve' || decision.decision === 'deny') && !('revision' in decision)) {
        decision.revision = cp.revision;
      } else if (decision.decision === 'batch') {
        for (const d of decision.decisions) {
          if (!('revision' in d.approval)) d.approval.revision = cp.revision;
        }
      }
      const facts = written.facts || {};
      written.facts = {
        resource_version: 'resource_version' in facts ? facts.resource_version : cp.resource_version,
        permitted: 'permitted' in facts ? facts.permitted : true,
        within_budget: 'within_budget' in facts ? facts.within_budget : true,
      };
    }
    let holder = null;
    if (written.kind === 'dispatch') holder = written;
    else if (written.kind === 'suspend' && written.wait.wait === 'approval') holder = written.wait;
    if (holder !== null && !('prior' in holder)) holder.prior = this.history.prior(holder.call);
    if (written.kind === 'suspend' && written.wait.wait === 'batch') {
      // Each call of a batch from the history as it stands before the batch (spec 5.5).
      for (const proposal of written.wait.calls) {
        if (!('prior' in proposal)) proposal.prior = this.history.prior(proposal.call);
      }
    }
    return written;
  }

  step(line) {
    const input = this.resolve(line);
    const verdict = rk.step(this.run, input);
    if (verdict.accepted) {
      this.run = verdict.run;
      this.history.apply(verdict.effects);
      const cp = rk.checkpointOf(verdict);
      if (cp !== undefined) this.emitted.push(cp);
    }
    return [input, verdict];
  }
}

test('every scenario is covered', () => {
  // The parity below runs over every file; an empty directory would make it vacuous.
  assert.ok(SCENARIO_FILES.length >= 27, `${SCENARIO_FILES.length} scenarios`);
});

for (const file of SCENARIO_FILES) {
  test(`each step of ${path.basename(file, '.jsonl')} matches resumable replay`, () => {
    const out = execFileSync(resumableBin(), ['replay', file, '--format', 'json'], {
      encoding: 'utf8',
    });
    const expected = out.split('\n').filter((l) => l.trim()).map((l) => rk.parse(l));
    const lines = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => rk.parse(l));
    const [header, ...inputs] = lines;
    assert.ok(inputs.length > 0);
    assert.equal(expected.length, inputs.length);
    const driver = new Driver(header);
    inputs.forEach((line, i) => {
      const want = expected[i];
      const where = `${path.basename(file)} step ${want.step}`;
      const [input, verdict] = driver.step(line);
      assert.deepEqual(input, want.input, where);
      if (verdict.accepted) {
        assert.equal(want.verdict, 'accepted', where);
        assert.deepEqual(verdict.effects, want.effects, where);
      } else {
        assert.equal(verdict.verdict, want.verdict, where);
        assert.deepEqual(verdict.rejection, want.rejection, where);
        assert.equal(verdict.message, want.message, where);
        assert.deepEqual(want.effects, [], where);
      }
      assert.deepEqual(driver.run, want.run, where);
      // The scenario's own claim holds too (replay exits 0 only then).
      assert.notEqual(want.met, false, where);
    });
  });
}
