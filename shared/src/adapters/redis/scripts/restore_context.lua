-- What putting a customer back needs to know, in one step: when the event was re-loaded after a
-- cache loss (absent: never), where admission stood then, since when the cache was lost (the
-- last durable save before it), and what was already done for this customer since (then nothing
-- durable needs reading: a leaver presenting an old ticket again, or a customer whose turn
-- lapsed, costs one Redis call, not a DynamoDB read).
-- KEYS: settings, restored
-- ARGV: customer
-- Reply: {restored_at_ms|"", restored_serving|"0", lost_since_ms|"", done|""}
--        (done: "placed", "expired" or "token" once something was done for the customer)
local s = redis.call('HMGET', KEYS[1], 'restored_at_ms', 'restored_serving', 'restored_lost_since_ms')
return {s[1] or '', s[2] or '0', s[3] or '', redis.call('HGET', KEYS[2], ARGV[1]) or ''}
