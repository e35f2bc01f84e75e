'use strict';
// The declarations compile against their documented use, in strict mode, with TypeScript
// pinned in the package's devDependencies: the framework modules' use (typecheck/usage.ts),
// and the Agents SDK desk as README.md documents it with the SDK's own RunState and
// RunResult types (typecheck/agents-desk.ts, resolving `@resumable/kernel/agents` through the
// package's exports map as an app would). `--skipLibCheck` there: the SDK's own declarations
// do not compile under this TypeScript and @types/node; ours are still checked.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { test } = require('node:test');

function tsc(file, args) {
  const bin = require.resolve('typescript/bin/tsc');
  const p = spawnSync(process.execPath, [bin, '--noEmit', '--strict', ...args,
    path.join(__dirname, '..', 'typecheck', file)], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(p.status, 0, p.stdout + p.stderr);
}

test('the modules\' declarations type-check their use in strict mode', () => {
  tsc('usage.ts', ['--module', 'commonjs', '--target', 'es2020']);
});

test('the Agents SDK desk type-checks with the SDK\'s own RunState and RunResult', () => {
  tsc('agents-desk.ts', ['--module', 'nodenext', '--moduleResolution', 'nodenext', '--target',
    'es2022', '--skipLibCheck']);
});
