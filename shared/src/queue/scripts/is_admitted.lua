-- Is this exact admission still live? The access token carries the admission's expiry, which is
-- also its score in the active set: an admission that was left, paid, or replaced by a newer one
-- no longer matches, so its token is revoked even before it expires. A live one comes back with
-- the event's ticket limit, read in the same step, so a hold needs no second round trip.
-- KEYS: active, settings
-- ARGV: customer, expires_ms, now_ms
-- Reply: {1, ticket_limit or ""} | {0}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) and tonumber(score) > tonumber(ARGV[3]) then
  return {1, redis.call('HGET', KEYS[2], 'ticket_limit') or ''}
end
return {0}
