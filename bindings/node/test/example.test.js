'use strict';
// The README's examples run, through the package's own name (an ES module import), and says
// what the README says it says.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { test } = require('node:test');

test('the approval example dispatches once and refuses the replayed approval', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, '..', 'examples', 'approval.mjs')], {
    encoding: 'utf8',
  });
  const lines = out.trim().split('\n');
  assert.match(lines[0], /^dispatch publish tool key [0-9a-f]{64}$/);
  assert.equal(lines[1], 'again: already_applied');
});

test('the payments example pays the approved amount once', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, '..', 'examples', 'payments.mjs')], {
    encoding: 'utf8',
  });
  const lines = out.trim().split('\n');
  assert.match(lines[0], /^approve\? send_payment \{"amount":50,"to":"bob"\} [0-9a-f]{64}$/);
  assert.equal(lines[1], 'paid {"amount":50,"to":"bob"}');
  assert.equal(lines[2], 'receipt receipt-1');
  assert.equal(lines.length, 3);
});
