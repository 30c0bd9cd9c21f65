-- Leave the queue, or give up an admission (freeing its slot at once). Also used when an order
-- is paid: the customer's admission ends.
-- KEYS: queue, active
-- ARGV: customer
-- Reply: number of entries removed (0 = nothing to leave)
return redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])
