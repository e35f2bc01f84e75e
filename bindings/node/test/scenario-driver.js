'use strict';
// A scenario driver, as a Node driver would write one: the scenario conveniences (digests
// written as text, checkpoint references with changes and resealing, the approval's revision
// and the facts left out, each call's prior from the run's history, for a batch's calls and
// decisions alike, the header's allowed verdicts) resolved with the package's own functions,
// and each resolved input stepped through the package. Shared by the parity test and the
// rejection types' test.

const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const rk = require('..');
const { SCENARIOS } = require('./helpers.js');

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

/** The lines of a scenario file, parsed: its header, then its inputs as written. */
function scenarioLines(file) {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => rk.parse(l));
}

module.exports = { Driver, SCENARIO_FILES, scenarioLines };
