import cf from 'cloudfront';
// The store of live events (template.yaml's LiveEventsStore): key = an event id, value "1".
const liveEvents = cf.kvs();

// CloudFront's viewer-request function (runtime cloudfront-js-2.0), in front of every cache
// behaviour: before the cache and the origin, it refuses what no honest client sends, so a flood
// of made-up URLs costs CloudFront a function run and never reaches API Gateway's shared route
// throttles. Refused here: a path that is not canonical (an empty segment: a doubled or trailing
// slash; another case or a percent-encoded letter in a fixed word), a path or method no route of
// the API has, an eventId that is not 1-64 of A-Z a-z 0-9 _ - (as EventId::parse; percent-encoded
// forms included, so one id has one cache key; on the status and draw routes, also a priority
// group's line `<eventId>.<group>`, as EventId::parse_line), a draw prefix that is not 1-6 lowercase hex
// digits, a layout version that is not 16; then, for a well-formed request, an eventId the store
// of live events (the KeyValueStore associated with this function, written by `lineup event`)
// does not hold. Refusals are the origin's own answers (400 with its code, 404 route_not_found
// or event_not_found), with the origin's Cache-Control for the public routes. A lookup that
// fails lets the request through: the origin knows every event.
// The one source of this code: template.yaml inlines it verbatim (a test checks), and
// `lineup dev` applies the same rules in Rust (cli/src/dev/edge_cache/viewer_request.rs); both are
// checked against edge/cases.json. See docs/decisions/0022-the-edge-refuses-junk.md.

// Every route of the HTTP API (template.yaml), and whether CloudFront caches it.
const ROUTES = [
  { key: 'POST /events/{eventId}/queue', cached: false },
  { key: 'GET /events/{eventId}/queue/{queueId}', cached: false },
  { key: 'DELETE /events/{eventId}/queue/{queueId}', cached: false },
  { key: 'POST /events/{eventId}/holds', cached: false },
  { key: 'DELETE /events/{eventId}/holds/{orderId}', cached: false },
  { key: 'GET /orders/{orderId}', cached: false },
  { key: 'POST /orders/{orderId}/payment', cached: false },
  { key: 'POST /orders/{orderId}/confirm', cached: false },
  { key: 'POST /webhooks/stripe', cached: false },
  { key: 'GET /events/{eventId}/status', cached: true },
  { key: 'GET /events/{eventId}/draw', cached: true },
  { key: 'GET /events/{eventId}/draw/{prefix}', cached: true },
  { key: 'GET /events/{eventId}/seats', cached: true },
  { key: 'GET /events/{eventId}/layout', cached: true },
  { key: 'GET /events/{eventId}/layout/{version}', cached: true },
];

// The routes that also serve a priority group's line, `<eventId>.<group>` (its status and its
// draw: docs/decisions/0031-priority-groups.md), as EventId::parse_line: the event's part is
// checked as an eventId, the group's as 1-32 of a-z 0-9 - starting with a letter, not `general`.
const LINE_ROUTES = [
  'GET /events/{eventId}/status',
  'GET /events/{eventId}/draw',
  'GET /events/{eventId}/draw/{prefix}',
];
const GROUP = /^[a-z][a-z0-9-]{0,31}$/;
const BAD_GROUP_LINE = "eventId must be an event id, or <event id>.<group> for a group's line";

// The path parameters checked here, with the origin's error for a malformed one.
const SYNTAX = {
  eventId: {
    pattern: /^[A-Za-z0-9_-]{1,64}$/,
    code: 'invalid_event_id',
    message: "eventId must be 1-64 characters of A-Z, a-z, 0-9, '_' or '-'",
  },
  prefix: {
    pattern: /^[0-9a-f]{1,6}$/,
    code: 'invalid_prefix',
    message: "a chunk is named by the draw's prefixLength (1-6) lowercase hex digits",
  },
  version: {
    pattern: /^[0-9a-f]{16}$/,
    code: 'invalid_layout_version',
    message: 'a layout version is 16 lowercase hex digits',
  },
};

// The public routes' errors are cached 5 s, as the origin marks them (openapi.yaml's
// CacheControlMiss); so is "no such route".
const MISS = 'public, max-age=5';

const NOT_A_ROUTE = {
  status: 404,
  code: 'route_not_found',
  message: 'no route matches this method and path',
  cacheControl: MISS,
};

// The origin's answer for an event it does not have.
const UNKNOWN_EVENT = { status: 404, code: 'event_not_found', message: 'no on-sale event with this id' };

// null to let the request through; else the refusal.
async function decide(method, uri) {
  const segments = uri.split('/');
  if (segments[0] !== '') return NOT_A_ROUTE;
  for (let i = 1; i < segments.length; i++) {
    if (segments[i] === '') return NOT_A_ROUTE; // "//", a trailing "/", or "/" alone
  }
  for (let r = 0; r < ROUTES.length; r++) {
    const space = ROUTES[r].key.indexOf(' ');
    const template = ROUTES[r].key.slice(space + 1).split('/');
    if (template.length !== segments.length) continue;
    let matches = true;
    for (let i = 1; i < template.length && matches; i++) {
      matches = template[i].charAt(0) === '{' || template[i] === segments[i];
    }
    if (!matches) continue;
    if (ROUTES[r].key.slice(0, space) === method) {
      return checkParameters(ROUTES[r], template, segments) ||
        (await checkEventIsLive(ROUTES[r], template, segments));
    }
  }
  return NOT_A_ROUTE; // no such path, or not with this method (API Gateway's 404 too)
}

function checkParameters(route, template, segments) {
  for (let i = 1; i < template.length; i++) {
    if (template[i].charAt(0) !== '{') continue;
    const name = template[i].slice(1, -1);
    let given = segments[i];
    let message = null;
    if (name === 'eventId' && LINE_ROUTES.indexOf(route.key) >= 0 && given.indexOf('.') >= 0) {
      const dot = given.indexOf('.');
      const group = given.slice(dot + 1);
      given = given.slice(0, dot);
      if (SYNTAX.eventId.pattern.test(given) && (!GROUP.test(group) || group === 'general')) {
        message = BAD_GROUP_LINE;
      }
    }
    const syntax = SYNTAX[name];
    if (syntax && (message !== null || !syntax.pattern.test(given))) {
      return {
        status: 400,
        code: syntax.code,
        message: message === null ? syntax.message : message,
        cacheControl: route.cached ? MISS : null,
      };
    }
  }
  return null;
}

// Refuses an eventId (well formed by now) the store does not hold; null if it holds it, if the
// route has no eventId, or if the lookup fails (throttled, not yet propagated): the origin answers.
async function checkEventIsLive(route, template, segments) {
  const at = template.indexOf('{eventId}');
  if (at < 0) return null;
  let live;
  try {
    // A group's line is live with its event.
    live = await liveEvents.exists(segments[at].split('.')[0]);
  } catch (lookupFailed) {
    return null;
  }
  if (live) return null;
  return {
    status: UNKNOWN_EVENT.status,
    code: UNKNOWN_EVENT.code,
    message: UNKNOWN_EVENT.message,
    cacheControl: route.cached ? MISS : null,
  };
}

async function handler(event) {
  const request = event.request;
  const refusal = await decide(request.method, request.uri);
  if (refusal === null) return request;
  const headers = { 'content-type': { value: 'application/json' } };
  if (refusal.cacheControl) headers['cache-control'] = { value: refusal.cacheControl };
  return {
    statusCode: refusal.status,
    statusDescription: refusal.status === 400 ? 'Bad Request' : 'Not Found',
    headers: headers,
    body: {
      encoding: 'text',
      data: JSON.stringify({ error: { code: refusal.code, message: refusal.message } }),
    },
  };
}
