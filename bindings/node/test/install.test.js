'use strict';
// The package installs into an app as a dependency: `npm pack`, then the tarball installed
// into a scratch app with the frameworks as the app's own dependencies (the package's peers),
// offline, from npm's cache as the committed lockfile filled it (`npm ci`): the app's lockfile
// is this package's, its root made the app's. A tiny script there drives the Agents SDK desk
// with the app's own RunState and checks that the package loads no copy of a framework of its
// own. better-sqlite3 is installed without its install script and given the native build of
// the same version this package's own install compiled (same Node), so the test does not
// compile SQLite again.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const { scratch } = require('./helpers');

const PKG = path.join(__dirname, '..');
const { tmp } = scratch('resumable-install-');

const APP_SCRIPT = `
'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');
const Database = require('better-sqlite3');
const { Agent, RunState, Usage, run, setTracingDisabled, tool } = require('@openai/agents');
const { z } = require('zod');
const rk = require('@resumable/kernel');
const agents = require('@resumable/kernel/agents');
require('@resumable/kernel/gate');
require('@resumable/kernel/hitl');
setTracingDisabled(true);
globalThis.fetch = async () => { throw new Error('offline'); };

// The package resolves the frameworks to the app's own copies.
const pkgDir = path.dirname(require.resolve('@resumable/kernel'));
assert.equal(require.resolve('@openai/agents', { paths: [pkgDir] }), require.resolve('@openai/agents'));

class Scripted {
  constructor(turns) { this.turns = turns; }
  async getResponse() { return { usage: new Usage(), output: this.turns.shift(), responseId: 'r' }; }
  async *getStreamedResponse() { throw new Error('no streaming'); }
}
const paid = [];
const payments = {
  async commit(call) { paid.push(call.args); return 'receipt-' + paid.length; },
  async query() { return null; },
};
(async () => {
  const desk = new agents.ApprovalDesk({
    store: new agents.SqliteTurnStore(new Database(':memory:')),
    name: 'chat-1',
    identity: { tenant: 'acme', session: 'chat-1', run: 'chat-1', definition: 'payer@1' },
    RunState,
    clock: Date.now,
  });
  const send = tool({
    name: 'send_payment', description: 'Pay.', needsApproval: true,
    parameters: z.object({ to: z.string(), amount: z.number() }),
    execute: async (_a, _c, details) => JSON.stringify(await desk.runTool(details.toolCall, payments)),
  });
  const call = { type: 'function_call', callId: 'call_1', name: 'send_payment',
    arguments: JSON.stringify({ to: 'bob', amount: 50 }), status: 'completed' };
  const done = { type: 'message', role: 'assistant', status: 'completed',
    content: [{ type: 'output_text', text: 'paid' }] };
  const agent = new Agent({ name: 'payer', model: new Scripted([[call], [done]]), tools: [send] });
  const first = await run(agent, 'pay bob 50');
  const request = await desk.suspend(first, { requester: 'agent', approver: 'alice', expiresIn: 60000 });
  const approval = agents.approveCall(request, 'call_1', 'alice', Date.now() + 60000);
  const state = await desk.decide(agent, agents.decisions(request, [approval]));
  const last = await run(agent, state);
  console.log(JSON.stringify({ final: last.finalOutput, paid, rules: rk.RULES_VERSION,
    shown: request.calls[0].args }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

function npm(args, cwd) {
  const p = spawnSync('npm', args, { cwd, encoding: 'utf8', timeout: 600_000,
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false',
      npm_config_update_notifier: 'false' } });
  assert.equal(p.status, 0, `npm ${args.join(' ')}: ${p.stdout}${p.stderr}`);
  return p.stdout;
}

test('npm pack, installed offline into an app with its own frameworks, drives the desk',
  { timeout: 900_000 }, () => {
    const app = tmp();
    npm(['pack', '--pack-destination', app, '--silent'], PKG);
    const [tarball] = fs.readdirSync(app).filter((f) => f.endsWith('.tgz'));
    const own = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'));
    const lock = JSON.parse(fs.readFileSync(path.join(PKG, 'package-lock.json'), 'utf8'));
    const dependencies = { ...own.devDependencies, '@resumable/kernel': `file:${tarball}` };
    const manifest = { name: 'payments-app', version: '1.0.0', private: true, dependencies };
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify(manifest, null, 2));
    // The app's lockfile: this package's, the root the app's, the package from its tarball.
    const packages = {};
    for (const [where, entry] of Object.entries(lock.packages)) {
      if (where === '') continue;
      const { dev: _dev, ...kept } = entry;
      if (kept.resolved === undefined && !kept.link) {
        // The registry's tarball address, which the cache holds it under.
        const name = kept.name ?? where.slice(where.lastIndexOf('node_modules/') + 13);
        const base = name.startsWith('@') ? name.split('/')[1] : name;
        kept.resolved = `https://registry.npmjs.org/${name}/-/${base}-${kept.version}.tgz`;
      }
      packages[where] = kept;
    }
    packages[''] = { name: manifest.name, version: manifest.version, dependencies };
    packages['node_modules/@resumable/kernel'] = {
      version: own.version,
      resolved: `file:${tarball}`,
      license: own.license,
      peerDependencies: own.peerDependencies,
      peerDependenciesMeta: own.peerDependenciesMeta,
      engines: own.engines,
    };
    fs.writeFileSync(path.join(app, 'package-lock.json'),
      JSON.stringify({ name: manifest.name, version: manifest.version, lockfileVersion: 3,
        requires: true, packages }, null, 2));
    npm(['ci', '--offline', '--ignore-scripts'], app);
    // better-sqlite3's native build: the one this package's install compiled, same version.
    const built = path.join(PKG, 'node_modules', 'better-sqlite3', 'build');
    fs.cpSync(built, path.join(app, 'node_modules', 'better-sqlite3', 'build'), { recursive: true });
    // The installed package is the tarball's, not a link to this checkout.
    const installed = path.join(app, 'node_modules', '@resumable', 'kernel');
    assert.equal(fs.lstatSync(installed).isSymbolicLink(), false);
    assert.equal(fs.existsSync(path.join(installed, 'node_modules')), false);
    fs.writeFileSync(path.join(app, 'pay.js'), APP_SCRIPT);
    const p = spawnSync(process.execPath, ['pay.js'], { cwd: app, encoding: 'utf8', timeout: 120_000 });
    assert.equal(p.status, 0, p.stdout + p.stderr);
    const out = JSON.parse(p.stdout.trim().split('\n').at(-1));
    assert.deepEqual(out.paid, [{ amount: 50, to: 'bob' }]);
    assert.equal(out.final, 'paid');
    assert.equal(out.shown, '{"amount":50,"to":"bob"}');
  });
