// The API client: one request and its answer, the development identity it sends, and a failed
// answer turned into words the customer can read.
//
// The HTTP contract is openapi.yaml. This page is served by `lineup dev`, so the API is on the
// same origin. Identity is an UNSIGNED JWT made here from the "Your name" field: the local
// server takes its `sub` without checking a signature (development only); in AWS the API
// Gateway JWT authorizer verifies a real token.

import { state } from './state.js';

export const enc = encodeURIComponent;

function base64url(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** An unsigned JWT (alg "none") naming the customer: local development only. */
function unsignedJwt(sub) {
  return `${base64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url(JSON.stringify({ sub }))}.`;
}

class NetworkError extends Error {}

/** One request. Resolves to {status, data, retryAfter}; rejects only when the server is unreachable.
 *  Public documents (`auth: false`) go without a name, as the CDN serves them to everyone, and
 *  may come from the browser's cache (`cache`). */
export async function api(method, path, { body, headers = {}, auth = true, cache = 'no-store' } = {}) {
  const init = {
    method,
    cache,
    headers: { Accept: 'application/json', ...(auth ? { Authorization: `Bearer ${unsignedJwt(state.customer)}` } : {}), ...headers },
  };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new NetworkError(error?.message ?? 'network error');
  }
  const retryHeader = response.headers.get('Retry-After');
  const retryAfter = retryHeader !== null && /^\d+$/.test(retryHeader.trim()) ? Number(retryHeader) : null;
  let data = null;
  if (response.status !== 204) {
    const text = await response.text().catch(() => '');
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
  }
  return { status: response.status, data, retryAfter, date: response.headers.get('Date') };
}

/** A human explanation of a failed answer. Never shows raw JSON. */
export function problem(r) {
  const error = r.data && typeof r.data === 'object' ? r.data.error : null;
  if (error && typeof error.message === 'string') {
    return {
      code: String(error.code ?? ''),
      message: sentence(error.message),
      seatIds: Array.isArray(error.seatIds) ? error.seatIds.map(String) : [],
      orderId: typeof error.orderId === 'string' ? error.orderId : null,
      // challenge_required / challenge_invalid: the proof-of-work to solve before joining.
      challenge: typeof error.challenge === 'string' ? error.challenge : null,
      difficulty: Number.isInteger(error.difficulty) ? error.difficulty : null,
    };
  }
  if (r.data && typeof r.data.message === 'string') {
    // API Gateway's own body (401 Unauthorized, 429 throttled, ...).
    return { code: `http_${r.status}`, message: sentence(r.data.message), seatIds: [] };
  }
  const generic = {
    401: 'You are not signed in.',
    403: 'You are not allowed to do that.',
    404: 'Not found.',
    429: 'Too many requests; please wait a moment.',
    500: 'Something went wrong on our side.',
    502: 'The server is not answering properly.',
    503: 'The service is busy.',
    504: 'The server took too long to answer.',
  };
  return { code: `http_${r.status}`, message: generic[r.status] ?? `Unexpected answer from the server (HTTP ${r.status}).`, seatIds: [] };
}

function sentence(text) {
  const t = String(text).trim();
  if (!t) return 'Something went wrong.';
  const s = t[0].toUpperCase() + t.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

export const UNREACHABLE = 'Cannot reach the server. Check your connection;';
/** Said while the server restores the queue after losing its cache (503 `queue_recovering`):
 *  nothing is lost, the page carries on by itself. */
export const RECOVERING = 'The queue is recovering from an outage. Your place is kept: stay on this page, it carries on by itself.';
export const recovering = (r) => r.status === 503 && r.data?.error?.code === 'queue_recovering';
