-- Close an event's queue (sold out, or an operator's close): only if the event exists.
-- KEYS: settings
-- ARGV: reason ("sold_out" | "closed")
-- Reply: 1 closed | 0 no such event
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'closed', 'closed_reason', ARGV[1])
return 1
