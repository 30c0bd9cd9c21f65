// The page's limits and timings in one place: poll intervals, page sizes, how long a refused
// seat stays marked, and the API's rule for a customer's name.

export const MAX_SEATS = 4;
export const SEAT_REFRESH_MS = 5000;
export const ROWS_PER_PAGE = 25; // one section's seats are shown this many rows at a time
export const DEFAULT_PARTY_SIZE = 2; // seats wanted, until the customer says otherwise
export const ORDER_POLL_MS = 1000;
export const TICKET_POLL_MS = 1000;
export const DEFAULT_POLL_S = 5; // also the status read interval at the front of the queue
export const MAX_STATUS_READ_S = 300; // far back, the status is read at most this far apart
export const JUST_TAKEN_MS = 15000; // the seat map may lag: keep seats we were told are taken marked
export const CUSTOMER_RE = /^[!-~]{1,128}$/; // the API's rule for `sub`: 1-128 visible ASCII
// The managed challenge at the edge (template parameter EdgeChallenge; docs/decisions/0028):
// the web ACL's application integration URL (`aws wafv2 get-web-acl --scope CLOUDFRONT
// --region us-east-1 ... --query ApplicationIntegrationURL`). Set, the page loads AWS WAF's
// challenge.js from it and every join carries a WAF token (web/challenge.js, its end). Empty (the
// default, and `lineup dev`): nothing is loaded.
export const WAF_INTEGRATION_URL = '';
