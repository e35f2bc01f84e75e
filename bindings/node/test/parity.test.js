'use strict';
// The same verdicts as the command line: every scenario of spec/scenarios, replayed through
// the package's own `step`, step by step against `resumable replay --format json`.
//
// The scenario conveniences (digests written as text, checkpoint references with changes and
// resealing, the approval's revision and the facts left out, each call's prior from the run's
// history, for a batch's calls and decisions alike, the header's allowed verdicts) are
// resolved in JavaScript (scenario-driver.js), with the package's functions, as a Node driver
// would: the resolved input must be the one the command line fed its kernel, and the verdict,
// the rejection with its evidence and message, the effects and the run after the step must be
// the same.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { test } = require('node:test');

const rk = require('..');
const { resumableBin } = require('./helpers.js');
const { Driver, SCENARIO_FILES, scenarioLines } = require('./scenario-driver.js');

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
    const lines = scenarioLines(file);
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
