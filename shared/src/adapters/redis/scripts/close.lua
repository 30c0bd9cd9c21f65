-- Close an event's queue (sold out, an operator's close, or a cancellation): only if the event
-- exists. A cancellation is final: no later close (a sold-out check) replaces its reason.
-- KEYS: settings
-- ARGV: reason ("sold_out" | "closed" | "cancelled")
-- Reply: 1 closed | 0 no such event
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[1], 'closed_reason') == 'cancelled' then return 1 end
redis.call('HSET', KEYS[1], 'state', 'closed', 'closed_reason', ARGV[1])
return 1
