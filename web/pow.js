// The join's proof-of-work, solved the way the server checks it (shared/src/domain/proof_of_work.rs):
// find a nonce (a decimal counter from 0) such that SHA-256(challenge bytes ‖ nonce) starts with
// `difficulty` zero bits. Used by pow-worker.js in the page, and by the node test and the
// benchmark directly.
//
// SHA-256 is computed here, in plain JavaScript, not with WebCrypto: `crypto.subtle.digest` is
// one promise per hash, about 30,000 hashes a second even batched (BENCHMARKS.md, section 13),
// while the message here (32 bytes and a nonce of at most 20 digits) is always one 64-byte block,
// which a plain loop compresses tens of times faster. The node test checks every result against
// node's own SHA-256.

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const INITIAL = new Uint32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

/** The challenge's 32 bytes from its 64 hex digits. */
export function challengeBytes(hex) {
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new Error('a challenge is 64 hex digits');
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/**
 * SHA-256 of a message of at most 55 bytes (one block), as 8 big-endian 32-bit words written
 * to `out` (returned). `w` is a 64-word scratch array; both are reused from call to call.
 */
export function sha256OneBlock(message, w = new Uint32Array(64), out = new Uint32Array(8)) {
  if (message.length > 55) throw new Error('one block holds at most 55 bytes');
  w.fill(0, 0, 16);
  for (let i = 0; i < message.length; i++) w[i >> 2] |= message[i] << (24 - 8 * (i & 3));
  w[message.length >> 2] |= 0x80 << (24 - 8 * (message.length & 3));
  w[15] = message.length * 8;
  for (let i = 16; i < 64; i++) {
    const a = w[i - 15];
    const b = w[i - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
  }
  let a = INITIAL[0];
  let b = INITIAL[1];
  let c = INITIAL[2];
  let d = INITIAL[3];
  let e = INITIAL[4];
  let f = INITIAL[5];
  let g = INITIAL[6];
  let h = INITIAL[7];
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  out[0] = a + INITIAL[0];
  out[1] = b + INITIAL[1];
  out[2] = c + INITIAL[2];
  out[3] = d + INITIAL[3];
  out[4] = e + INITIAL[4];
  out[5] = f + INITIAL[5];
  out[6] = g + INITIAL[6];
  out[7] = h + INITIAL[7];
  return out;
}

/** The leading zero bits of a digest given as 32-bit words. */
export function zeroBits(words) {
  let bits = 0;
  for (const word of words) {
    if (word === 0) {
      bits += 32;
      continue;
    }
    return bits + Math.clz32(word);
  }
  return bits;
}

/**
 * The first nonce whose hash has `difficulty` zero bits, and how many hashes it took.
 * `onProgress(hashes)` is called every `batch` hashes (the page shows it).
 */
export function solve(challengeHex, difficulty, { batch = 65536, onProgress } = {}) {
  const message = new Uint8Array(55);
  message.set(challengeBytes(challengeHex));
  const w = new Uint32Array(64);
  const out = new Uint32Array(8);
  const views = Array.from({ length: 24 }, (_, digits) => message.subarray(0, 32 + digits));
  for (let counter = 0; ; counter++) {
    const nonce = String(counter);
    for (let i = 0; i < nonce.length; i++) message[32 + i] = nonce.charCodeAt(i);
    if (zeroBits(sha256OneBlock(views[nonce.length], w, out)) >= difficulty) {
      return { nonce, hashes: counter + 1 };
    }
    if (onProgress && (counter + 1) % batch === 0) onProgress(counter + 1);
  }
}
