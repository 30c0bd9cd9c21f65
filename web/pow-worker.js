// The page's Web Worker for the join's proof-of-work: solves off the main thread, so the page
// stays responsive (and a screen reader keeps talking) while the phone hashes for a second.
// Message in: {challenge, difficulty}; out: {progress: hashes} now and then, then {nonce, hashes}
// or {error}.
import { solve } from './pow.js';

self.onmessage = (message) => {
  const { challenge, difficulty } = message.data;
  try {
    const solved = solve(challenge, difficulty, {
      onProgress: (hashes) => self.postMessage({ progress: hashes }),
    });
    self.postMessage(solved);
  } catch (error) {
    self.postMessage({ error: String(error) });
  }
};
