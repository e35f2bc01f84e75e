'use strict';
// Argument digests: SHA-256 over the RFC 8785 (JCS) canonical form, the same in Node, in Rust
// and on the command line; checked against RFC 8785's published examples and, on generated
// values, against an independent implementation (the `canonicalize` package).

const assert = require('node:assert/strict');
const { createHash } = require('node:crypto');
const { execFileSync } = require('node:child_process');
const { test } = require('node:test');

const rk = require('..');
const { resumableBin } = require('./helpers.js');

const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest('hex');

// RFC 8785 section 3.2.4: the input, and the canonical bytes it publishes.
const RFC_INPUT = String.raw`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`;
const RFC_OUTPUT =
  '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
  '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}';

test('the section 3.2.4 example gives its published bytes', async () => {
  const { default: canonicalize } = await import('canonicalize');
  assert.equal(rk.canonicalJson(RFC_INPUT), RFC_OUTPUT);
  assert.equal(rk.canonical(JSON.parse(RFC_INPUT)), RFC_OUTPUT);
  assert.equal(rk.digestJson(RFC_INPUT), sha256(RFC_OUTPUT));
  assert.equal(rk.digest(JSON.parse(RFC_INPUT)), sha256(RFC_OUTPUT));
  assert.equal(canonicalize(JSON.parse(RFC_INPUT)), RFC_OUTPUT);
});

test('members sort by UTF-16 code units as section 3.2.3 sorts them', () => {
  const value = {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    1: 'One',
    '\u{1f600}': 'Emoji: Grinning Face',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  };
  const text = rk.canonical(value);
  const order = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\u{1f600}', '\ufb33'];
  const positions = order.map((k) => text.indexOf(JSON.stringify(k) + ':'));
  assert.ok(positions.every((p) => p >= 0), text);
  assert.deepEqual([...positions].sort((a, b) => a - b), positions);
});

// RFC 8785 appendix B: IEEE 754 bit patterns and the number each is written as.
const APPENDIX_B = [
  ['0000000000000000', '0'],
  ['8000000000000000', '0'],
  ['0000000000000001', '5e-324'],
  ['8000000000000001', '-5e-324'],
  ['7fefffffffffffff', '1.7976931348623157e+308'],
  ['ffefffffffffffff', '-1.7976931348623157e+308'],
  ['4340000000000000', '9007199254740992'],
  ['c340000000000000', '-9007199254740992'],
  ['4430000000000000', '295147905179352830000'],
  ['44b52d02c7e14af5', '9.999999999999997e+22'],
  ['44b52d02c7e14af6', '1e+23'],
  ['44b52d02c7e14af7', '1.0000000000000001e+23'],
  ['444b1ae4d6e2ef4e', '999999999999999700000'],
  ['444b1ae4d6e2ef4f', '999999999999999900000'],
  ['444b1ae4d6e2ef50', '1e+21'],
  ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
  ['3eb0c6f7a0b5ed8d', '0.000001'],
  ['41b3de4355555553', '333333333.3333332'],
  ['41b3de4355555554', '333333333.33333325'],
  ['41b3de4355555555', '333333333.3333333'],
  ['41b3de4355555556', '333333333.3333334'],
  ['41b3de4355555557', '333333333.33333343'],
  ['becbf647612f3696', '-0.0000033333333333333333'],
  ['43143ff3c1cb0959', '1424953923781206.2'],
];

for (const [bits, expected] of APPENDIX_B) {
  test(`the double ${bits} is written as appendix B writes it: ${expected}`, () => {
    const f = Buffer.from(bits, 'hex').readDoubleBE(0);
    assert.equal(rk.canonical(f), expected);
    assert.equal(rk.canonical([f]), `[${expected}]`);
    assert.equal(rk.canonical({ n: f }), `{"n":${expected}}`);
  });
}

const NOT_JSON = [
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
  ['NaN inside', { a: [1, NaN] }],
  ['undefined', undefined],
  ['undefined member', { a: undefined }],
  ['a function', () => 1],
  ['a bigint', 10n],
  ['a symbol', Symbol('s')],
  ['a Date', new Date(0)],
  ['a Map', new Map()],
  ['a class instance', new (class Thing {})()],
  ['a lone surrogate', '\ud800'],
  ['a lone surrogate name', { '\udc00': 1 }],
];

for (const [name, value] of NOT_JSON) {
  test(`what is not JSON is refused with the one error class: ${name}`, () => {
    assert.throws(() => rk.digest(value), rk.ResumableError);
    assert.throws(() => rk.canonical(value), rk.ResumableError);
  });
}

test('a container holding itself is refused', () => {
  const loop = [];
  loop.push(loop);
  assert.throws(() => rk.digest(loop), rk.ResumableError);
});

test('a value shared twice, not a cycle, is accepted', () => {
  const shared = { a: 1 };
  assert.equal(rk.canonical([shared, shared]), '[{"a":1},{"a":1}]');
});

test('a text that readers disagree on is refused', () => {
  for (const text of ['{"a": 1, "a": 2}', '"\\ud800"', '9007199254740992', '1e400', 'NaN', '[1,]']) {
    assert.throws(() => rk.digestJson(text), rk.ResumableError, text);
  }
});

test('the digest agrees with resumable digest on the command line', () => {
  const value = { b: [1, 2.5, 'x'], a: { '\u20ac': null, z: true } };
  const text = JSON.stringify(value);
  const cli = execFileSync(resumableBin(), ['digest', '-'], { input: text, encoding: 'utf8' }).trim();
  assert.equal(cli, rk.digest(value));
  assert.equal(cli, rk.digestJson(text));
});

// A small seeded generator (xorshift32) of JSON values: deterministic, so a failure repeats.
function generator(seed) {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  const below = (n) => next() % n;
  const double = () => {
    const buf = Buffer.alloc(8);
    buf.writeUInt32BE(next(), 0);
    buf.writeUInt32BE(next(), 4);
    const f = buf.readDoubleBE(0);
    return Number.isFinite(f) ? f : 0.5;
  };
  const ALPHABET = ['a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\u0001', '\u007f', '\u00e9',
    '\u20ac', '\ufb33', '\u{1f600}', '\u2028', '\ud7ff', '\ue000'];
  const string = () => Array.from({ length: below(6) }, () => ALPHABET[below(ALPHABET.length)]).join('');
  const number = () => {
    switch (below(5)) {
      case 0: return below(1000) - 500;
      case 1: return (next() * 2 ** 21 + next()) * (below(2) ? 1 : -1);
      case 2: return double();
      case 3: return (below(100000) - 50000) / 1000;
      default: return 10 ** (below(60) - 30) * (1 + below(9));
    }
  };
  const value = (depth) => {
    const kind = below(depth > 3 ? 4 : 6);
    switch (kind) {
      case 0: return [null, true, false][below(3)];
      case 1: return number();
      case 2: return string();
      case 3: return number();
      case 4: return Array.from({ length: below(5) }, () => value(depth + 1));
      default: {
        const obj = {};
        for (let i = below(5); i > 0; i -= 1) obj[string()] = value(depth + 1);
        return obj;
      }
    }
  };
  return value;
}

test('on generated values the canonical form agrees with the canonicalize package', async () => {
  const { default: canonicalize } = await import('canonicalize');
  const value = generator(0x5eed);
  for (let i = 0; i < 2000; i += 1) {
    const v = value(0);
    const ours = rk.canonical(v);
    assert.equal(ours, canonicalize(v), JSON.stringify(v));
    assert.equal(rk.digest(v), sha256(ours));
  }
});
