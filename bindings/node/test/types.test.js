'use strict';
// The declarations of the framework modules (gate.d.ts, agents.d.ts) compile against their
// documented use, in strict mode, with TypeScript pinned in the package's devDependencies.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { test } = require('node:test');

test('gate.d.ts and agents.d.ts type-check their use in strict mode', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const usage = path.join(__dirname, '..', 'typecheck', 'usage.ts');
  const args = ['--noEmit', '--strict', '--module', 'commonjs', '--target', 'es2020', usage];
  const p = spawnSync(process.execPath, [tsc, ...args], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(p.status, 0, p.stdout + p.stderr);
});
