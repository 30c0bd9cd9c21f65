// The page's proof-of-work solver (web/pow.js) under node: its one-block SHA-256 agrees with
// node's own and with WebCrypto's, it finds the first nonce the server's rule accepts, counts
// zero bits across words, and refuses a malformed challenge.
// Run: node --test tests/web/pow.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { challengeBytes, sha256OneBlock, solve, zeroBits } from '../../web/pow.js';

const challenge = 'a1'.repeat(32);

function nodeDigest(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

function hexOf(words) {
  return Array.from(words, (word) => word.toString(16).padStart(8, "0")).join("");
}

function bitsOf(nonce) {
  return zeroBits(sha256OneBlock(Buffer.concat([Buffer.from(challenge, 'hex'), Buffer.from(nonce)])));
}

test('the one-block SHA-256 is SHA-256, for every length it takes', async () => {
  for (let length = 0; length <= 55; length++) {
    const bytes = Uint8Array.from({ length }, (_, i) => (i * 37 + length) & 0xff);
    assert.equal(hexOf(sha256OneBlock(bytes)), nodeDigest(bytes), `${length} bytes`);
    const subtle = Buffer.from(await crypto.subtle.digest('SHA-256', bytes)).toString('hex');
    assert.equal(subtle, nodeDigest(bytes));
  }
  assert.throws(() => sha256OneBlock(new Uint8Array(56)));
});

test('a solved nonce has the zero bits asked for, and is the first that has', () => {
  const { nonce, hashes } = solve(challenge, 12);
  assert.ok(bitsOf(nonce) >= 12, `${nonce} has ${bitsOf(nonce)} bits`);
  assert.equal(hashes, Number(nonce) + 1);
  for (let n = 0; n < Number(nonce); n++) assert.ok(bitsOf(String(n)) < 12);
});

test('progress is reported every batch', () => {
  const seen = [];
  const { hashes } = solve(challenge, 12, { batch: 100, onProgress: (count) => seen.push(count) });
  assert.deepEqual(seen, Array.from({ length: Math.floor((hashes - 1) / 100) }, (_, i) => 100 * (i + 1)));
});

test('zero bits are counted across words', () => {
  assert.equal(zeroBits([0, 0x0fffffff]), 36);
  assert.equal(zeroBits([0x80000000]), 0);
  assert.equal(zeroBits([0x00010000]), 15);
});

test('a malformed challenge is refused', () => {
  assert.throws(() => challengeBytes('abc'));
  assert.throws(() => challengeBytes('zz'.repeat(32)));
});
