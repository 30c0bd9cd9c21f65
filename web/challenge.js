// The bot challenge at join: when an event asks for a proof-of-work, the join's 403
// (`challenge_required` / `challenge_invalid`) carries a challenge; the page solves it in a Web
// Worker (pow-worker.js, so the page stays responsive and a screen reader keeps talking) and joins
// again with the answer. A browser without module workers cannot solve it: the customer is told
// to ask the organiser, who can exempt their account (docs/decisions/0028-a-proof-of-work-at-join.md).

/** Whether an error body is a challenge this page can solve. */
export function isChallenge(problem) {
  return (
    (problem.code === 'challenge_required' || problem.code === 'challenge_invalid') &&
    typeof problem.challenge === 'string' &&
    Number.isInteger(problem.difficulty)
  );
}

/** Said when this browser cannot solve the challenge. */
export const CANNOT_SOLVE =
  'This on-sale asks browsers to solve a short check before joining, and this browser cannot run it. ' +
  'Contact the organiser: they can let your account join without it.';

/**
 * Solves `{challenge, difficulty}` in a worker; `onProgress(hashes)` now and then.
 * Resolves to the body's `proofOfWork`; rejects if the browser has no module workers.
 */
export function solveChallenge({ challenge, difficulty }, onProgress) {
  return new Promise((resolve, reject) => {
    let worker;
    try {
      worker = new Worker(new URL('./pow-worker.js', import.meta.url), { type: 'module' });
    } catch (error) {
      reject(error);
      return;
    }
    worker.onmessage = ({ data }) => {
      if (typeof data.progress === 'number') {
        onProgress?.(data.progress);
        return;
      }
      worker.terminate();
      if (typeof data.nonce === 'string') resolve({ challenge, nonce: data.nonce });
      else reject(new Error(data.error ?? 'the worker failed'));
    };
    worker.onerror = (event) => {
      worker.terminate();
      reject(new Error(event.message || 'the worker could not start'));
    };
    worker.postMessage({ challenge, difficulty });
  });
}
