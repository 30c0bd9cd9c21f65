-- Is this exact admission still live? The access token carries the admission's expiry, which is
-- also its score in the active set: an admission that was left, paid, or replaced by a newer one
-- no longer matches, so its token is revoked even before it expires. A live one comes back with
-- the event's ticket limit, read in the same step, so a hold needs no second round trip.
-- After a cache loss the signed token is the proof of an admission the cache forgot: a token for
-- an admission claimed before the event was restored (its expiry minus a session is before the
-- restore), still running, puts its holder back in the active set, once per customer.
-- A cancelled event (`lineup event cancel`) refuses every admission: nothing more is sold.
-- KEYS: active, settings, restored
-- ARGV: customer, expires_ms, now_ms
-- Reply: {1, ticket_limit or ""} | {0} | {"no_event"} (the cache has lost the event)
--        | {"cancelled"}
local expires, now = tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('HGET', KEYS[2], 'closed_reason') == 'cancelled' then return {'cancelled'} end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == expires and tonumber(score) > now then
  return {1, redis.call('HGET', KEYS[2], 'ticket_limit') or ''}
end
local s = redis.call('HMGET', KEYS[2], 'state', 'restored_at_ms', 'session_ms', 'ticket_limit')
if not s[1] then return {'no_event'} end
if not score and s[2] and expires > now and expires - tonumber(s[3]) < tonumber(s[2])
    and redis.call('HSETNX', KEYS[3], ARGV[1], 'token') == 1 then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return {1, s[4] or ''}
end
return {0}
