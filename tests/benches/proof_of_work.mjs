// The page's solver (web/pow.js) timed under node's WebCrypto, for the proof_of_work benchmark:
// solves `rounds` challenges at 16 bits and prints one JSON line: hashes a second, and the nonce
// it finds for a fixed challenge (which the Rust solver must find too: the two agree on the rule).
import { solve } from '../../web/pow.js';

const rounds = Number(process.argv[2] ?? 16);
let hashes = 0;
const started = performance.now();
for (let round = 0; round < rounds; round++) {
  const challenge = round.toString(16).padStart(2, '0').repeat(32);
  hashes += (await solve(challenge, 16)).hashes;
}
const seconds = (performance.now() - started) / 1000;
const fixed = await solve('a1'.repeat(32), 16);
console.log(JSON.stringify({ hashesPerSecond: hashes / seconds, hashes, seconds, fixedNonce: fixed.nonce }));
