-- Leave the queue (or the pre-queue), or give up an admission, freeing its slot at once.
-- An entrant who leaves between the pre-queue's closing and the draw's numbers is remembered,
-- so the draw does not put them back.
-- KEYS: settings, queue, active, offered, prequeue, entrants, left
-- ARGV: customer
-- Reply: number of entries removed (0 = nothing to leave)
local customer = ARGV[1]
local removed = redis.call('ZREM', KEYS[2], customer) + redis.call('ZREM', KEYS[3], customer)
  + redis.call('ZREM', KEYS[4], customer) + redis.call('SREM', KEYS[5], customer)
local s = redis.call('HMGET', KEYS[1], 'entrants', 'drawn')
if s[1] and not s[2] and redis.call('SISMEMBER', KEYS[6], customer) == 1 then
  removed = removed + redis.call('SADD', KEYS[7], customer)
end
return removed
