'use strict';
// A tool's ledger kept outside the process that calls it: one JSON line per commit, flushed to
// disk before the tool answers, so that a commit survives the caller's SIGKILL and can be
// counted afterwards. And the tool the kernel drives over it.

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

/** The tool the kernel drives: commits a tool key once, answers the first result again. */
class DedupingTool {
  constructor(ledger) {
    this.ledger = ledger;
  }

  async query(toolKey) {
    const found = this.ledger.entries().find((e) => e.tool_key === toolKey);
    return found === undefined ? null : found.result;
  }

  async commit(toolKey, tool, args) {
    const found = await this.query(toolKey);
    if (found !== null) return found;
    const result = `${tool} done #${this.ledger.commits() + 1}`;
    this.ledger.append({ tool_key: toolKey, tool, args, result });
    return result;
  }
}

module.exports = { DedupingTool, Ledger };
