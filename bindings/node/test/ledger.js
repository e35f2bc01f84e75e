'use strict';
// A tool's ledger kept outside the process that calls it: one JSON line per commit, flushed to
// disk before the tool answers, so that a commit survives the caller's SIGKILL and can be
// counted afterwards. And the tool the kernel drives over it, and the same tool in a worker
// process that kills itself around a commit.

const fs = require('node:fs');

class Ledger {
  constructor(file) {
    this.file = file;
    fs.closeSync(fs.openSync(file, 'a'));
  }

  entries() {
    return fs
      .readFileSync(this.file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line));
  }

  append(entry) {
    const fd = fs.openSync(this.file, 'a');
    try {
      fs.writeSync(fd, `${JSON.stringify(entry)}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  commits(tool) {
    return this.entries().filter((e) => tool === undefined || e.tool === tool).length;
  }
}

/**
 * The tool the driver core drives (README.md, "The tool protocol"): commits a tool key once,
 * and answers the first result again for it; its status query finds a commit by tool key.
 */
class DedupingTool {
  constructor(ledger) {
    this.ledger = ledger;
  }

  /** What the tool answers for the `n`th commit of its ledger. */
  answer(call, n) {
    return `${call.tool} done #${n}`;
  }

  /** The ledger's entry of a commit of `call` answered `answer`. */
  entry(call, answer) {
    return { tool_key: call.tool_key, tool: call.tool, args: call.args, result: answer };
  }

  /** The answer a ledger's entry holds. */
  answered(entry) {
    return entry.result;
  }

  async query(call) {
    const found = this.ledger.entries().find((e) => e.tool_key === call.tool_key);
    return found === undefined ? null : this.answered(found);
  }

  async commit(call) {
    const found = await this.query(call);
    if (found !== null) return found;
    const answer = this.answer(call, this.ledger.commits() + 1);
    this.ledger.append(this.entry(call, answer));
    return answer;
  }
}

/** Kills this process with SIGKILL, as a crash would, when CRASH is `when`. */
function crash(when) {
  if (process.env.CRASH === when) process.kill(process.pid, 'SIGKILL');
}

/**
 * The deduping tool in a worker process that may die: with CRASH=before it is killed when a
 * commit reaches it (after the kernel's commit, before the tool); with CRASH=after, right
 * after the commit is on the ledger, before anything else is written.
 */
class CrashingTool extends DedupingTool {
  async commit(call) {
    crash('before');
    const result = await super.commit(call);
    crash('after');
    return result;
  }
}

module.exports = { CrashingTool, DedupingTool, Ledger, crash };
