// The bot challenge at join: when an event asks for a proof-of-work, the join's 403
// (`challenge_required` / `challenge_invalid`) carries a challenge; the page solves it in a Web
// Worker (pow-worker.js, so the page stays responsive and a screen reader keeps talking) and joins
// again with the answer. A browser without module workers cannot solve it: the customer is told
// to ask the organiser, who can exempt their account (docs/decisions/0028-a-proof-of-work-at-join.md).
// Below, apart: the edge's managed challenge (AWS WAF's token on each join, when configured).

import { WAF_INTEGRATION_URL } from './config.js';

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

// ---------------------------------------------------------------- the edge's managed challenge
// The managed challenge at the edge (the stack's EdgeChallenge=challenge; docs/decisions/
// 0028-a-proof-of-work-at-join.md, "The managed challenge at the edge"). The stack's WAF then
// runs AWS WAF's silent browser challenge on the join: a join without a valid `aws-waf-token` is
// answered by the edge itself, 202 with `x-amzn-waf-action: challenge` and no JSON, which a fetch
// cannot solve. So, when `WAF_INTEGRATION_URL` is set (config.js), this loads AWS WAF's
// JavaScript integration (`challenge.js` from the web ACL's integration URL) as the page loads,
// and every join carries the token it keeps in the `x-aws-waf-token` header (AWS WAF reads the
// header as well as its cookie). A 202 without a body is never taken for a join: one more try
// (the first getToken may have timed out), then an error the customer can read. Empty (the default, `lineup dev`):
// nothing is loaded, no header is sent, and a join is exactly what it was.

/** Said when the edge's check still stands between this browser and the queue. */
export const EDGE_CHALLENGE =
  "The site's security check stopped this join before it reached the queue. " +
  'Reload the page and join again; if it happens again, contact the organiser.';

let loading = null;

/** AWS WAF's integration, loaded once; null when not configured or it did not load. */
function integration() {
  if (!WAF_INTEGRATION_URL || typeof document === 'undefined') return Promise.resolve(null);
  if (globalThis.AwsWafIntegration) return Promise.resolve(globalThis.AwsWafIntegration);
  loading ??= new Promise((resolve) => {
    const script = document.createElement('script');
    script.src = `${WAF_INTEGRATION_URL.replace(/\/+$/, '')}/challenge.js`;
    script.async = true;
    script.onload = () => resolve(globalThis.AwsWafIntegration ?? null);
    script.onerror = () => {
      loading = null; // the next join tries to load it again
      script.remove();
      resolve(null);
    };
    document.head.append(script);
  });
  return loading;
}

// Loaded with the page, so the silent challenge is solved before the customer presses Join.
integration();

/** The header that carries the token, or none (not configured, or no token within getToken's
 *  own 2 s: the join goes without, and the edge's 202 says so). */
async function tokenHeaders() {
  const waf = await integration();
  if (!waf) return {};
  try {
    const token = await waf.getToken();
    return typeof token === 'string' && token ? { 'x-aws-waf-token': token } : {};
  } catch {
    return {};
  }
}

/** The edge's challenge, not the API: the API never answers a join 202, nor without JSON. */
export function isEdgeChallenge(r) {
  return r.status === 202 && (r.data === null || typeof r.data !== 'object');
}

/**
 * Sends a join through the edge: `send(headers)` is the join's `api(...)` call with the token
 * header added. A 202 from the edge gets one more try, with a token asked for again, when the
 * integration is loaded; if the edge still answers 202, the answer becomes an error (`edge_challenge`) the page
 * shows, never a join.
 */
export async function throughEdge(send) {
  let r = await send(await tokenHeaders());
  if (isEdgeChallenge(r) && (await integration())) r = await send(await tokenHeaders());
  if (isEdgeChallenge(r)) return { ...r, data: { error: { code: 'edge_challenge', message: EDGE_CHALLENGE } } };
  return r;
}
