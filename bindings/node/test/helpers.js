'use strict';
// What the tests share: where the repository's scenarios are, and the command-line binary
// they are compared with (RESUMABLE_BIN, else the workspace's release build).

const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SCENARIOS = path.join(ROOT, 'spec', 'scenarios');

function resumableBin() {
  const bin = process.env.RESUMABLE_BIN || path.join(ROOT, 'target', 'release', 'resumable');
  if (!fs.existsSync(bin)) {
    throw new Error(`no resumable binary at ${bin}: run cargo build --release or set RESUMABLE_BIN`);
  }
  return bin;
}

module.exports = { ROOT, SCENARIOS, resumableBin };
