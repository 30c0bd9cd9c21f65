// The CloudFront function itself (edge/viewer-request.js, as template.yaml inlines it), run in
// node against every case of edge/cases.json, the table lineup dev's Rust stand-in is tested
// against too: a request let through comes back unchanged, a refusal is the status, the JSON
// error code and the Cache-Control the case says. The file is evaluated as CloudFront evaluates
// it (a script defining `handler`), in a context of its own, its one import (`cloudfront`, whose
// `kvs()` is the store of live events) given as a stand-in holding the table's `liveEvents`, and
// failing for its `lookupFails` as a throttled or not yet propagated store does.
//
// Run: `node --test edge/` from the repository root (tests/edge_function.rs runs it too).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const source = readFileSync(path.join(HERE, 'viewer-request.js'), 'utf8');
const { cases, liveEvents, lookupFails } = JSON.parse(readFileSync(path.join(HERE, 'cases.json'), 'utf8'));

/** The `cloudfront` module's stand-in: a key value store holding the table's live events. */
const cloudfront = {
  kvs: () => ({
    exists: async (key) => {
      if (lookupFails.includes(key)) throw new Error('KVS lookup throttled');
      return liveEvents.includes(key);
    },
  }),
};
const IMPORT = "import cf from 'cloudfront';\n";
assert.equal(source.split(IMPORT).length, 2, `the function imports the cloudfront module once: ${IMPORT}`);
const script = source.replace(IMPORT, '');
const handler = vm.runInNewContext(`${script}\n;handler`, { cf: cloudfront }, { filename: 'viewer-request.js' });

/** The viewer-request event CloudFront passes (functions-event-structure), for METHOD URI. */
function eventFor(method, uri) {
  return {
    version: '1.0',
    context: { eventType: 'viewer-request', distributionId: 'EDFDVBD6EXAMPLE', requestId: 'test' },
    viewer: { ip: '198.51.100.7' },
    request: { method, uri, querystring: {}, headers: { host: { value: 'd111111abcdef8.cloudfront.net' } }, cookies: {} },
  };
}

test('the table covers every way through the function', () => {
  assert.ok(cases.length >= 50, `${cases.length} cases`);
  const outcomes = new Set(cases.map((c) => (c.outcome === 'pass' ? 'pass' : `${c.outcome.status} ${c.outcome.code}`)));
  for (const expected of ['pass', '400 invalid_event_id', '400 invalid_prefix', '400 invalid_layout_version', '404 route_not_found', '404 event_not_found']) {
    assert.ok(outcomes.has(expected), `no case ends in ${expected}`);
  }
});

for (const { request, outcome, why } of cases) {
  test(`${request}: ${outcome === 'pass' ? 'pass' : `${outcome.status} ${outcome.code}`} (${why})`, async () => {
    const space = request.indexOf(' ');
    const event = eventFor(request.slice(0, space), request.slice(space + 1));
    const untouched = JSON.parse(JSON.stringify(event.request));
    const result = await handler(event);
    if (outcome === 'pass') {
      assert.deepEqual(result, untouched, 'the request goes on unchanged');
      return;
    }
    assert.equal(result.statusCode, outcome.status);
    assert.equal(result.headers['content-type']?.value, 'application/json');
    assert.equal(result.headers['cache-control']?.value ?? null, outcome.cacheControl);
    assert.equal(result.body.encoding, 'text');
    const body = JSON.parse(result.body.data);
    assert.equal(body.error.code, outcome.code);
    assert.equal(typeof body.error.message, 'string');
  });
}
