'use strict';
// The framework modules are reachable through the package's exports map, from CommonJS and
// from ES modules, as the same objects (one gate, one error class each).

const assert = require('node:assert/strict');
const { test } = require('node:test');

test('gate, desk and HITL gate load by their package paths, alike from both module kinds', async () => {
  const gate = require('@resumable/kernel/gate');
  const agents = require('@resumable/kernel/agents');
  assert.equal(gate, require('../gate'));
  assert.equal(agents.NotBuilt, gate.NotBuilt);
  assert.equal(agents.Refused, gate.Refused);
  const esGate = await import('@resumable/kernel/gate');
  const esAgents = await import('@resumable/kernel/agents');
  assert.equal(esGate.ApprovalGate, gate.ApprovalGate);
  assert.equal(esGate.Refused, gate.Refused);
  assert.equal(esAgents.ApprovalDesk, agents.ApprovalDesk);
  const hitl = require('@resumable/kernel/hitl');
  assert.equal(hitl, require('../hitl'));
  assert.equal(hitl.Refused, gate.Refused);
  assert.equal((await import('@resumable/kernel/hitl')).HitlGate, hitl.HitlGate);
});
