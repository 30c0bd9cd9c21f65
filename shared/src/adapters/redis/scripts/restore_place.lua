-- Put a customer back from their ticket after a cache loss: only on an event that was restored,
-- only for a ticket issued before that (one issued since names a place the cache still knows,
-- or one its holder left), and only once per customer. What was done is remembered per
-- customer ("placed", or "expired" for a called number whose time is over), so a repeat poll
-- answers from the cache alone.
-- KEYS: settings, queue, active, prequeue, restored
-- ARGV: customer, ticket_issued_ms, where ("queue" | "active" | "pre_queue" | "expired"), score
-- Reply: "restored" | "expired" | "already" | "not_restorable"
local restored_at = redis.call('HGET', KEYS[1], 'restored_at_ms')
if not restored_at or tonumber(ARGV[2]) >= tonumber(restored_at) then return 'not_restorable' end
local customer, where, score = ARGV[1], ARGV[3], ARGV[4]
local done = 'placed'
if where == 'expired' then done = 'expired' end
if redis.call('HSETNX', KEYS[5], customer, done) == 0 then return 'already' end
if where == 'queue' then
  redis.call('ZADD', KEYS[2], 'NX', score, customer)
  -- Defensive: a number past the counter (a ticket from before durable ranges) is never reused.
  local next_number = tonumber(redis.call('HGET', KEYS[1], 'next_number')) or 0
  if tonumber(score) > next_number then redis.call('HSET', KEYS[1], 'next_number', score) end
elseif where == 'active' then
  redis.call('ZADD', KEYS[3], 'NX', score, customer)
elseif where == 'pre_queue' then
  redis.call('SADD', KEYS[4], customer)
else
  return 'expired'
end
return 'restored'
