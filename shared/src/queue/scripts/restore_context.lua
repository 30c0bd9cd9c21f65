-- What putting a customer back needs to know, in one step: when the event was re-loaded after a
-- cache loss (absent: never), where admission stood then, and whether this customer was already
-- put back (then nothing durable needs reading: a leaver presenting an old ticket again costs
-- one Redis call, not a DynamoDB read).
-- KEYS: settings, restored
-- ARGV: customer
-- Reply: {restored_at_ms|"", restored_serving|"0", already (0|1)}
local s = redis.call('HMGET', KEYS[1], 'restored_at_ms', 'restored_serving')
return {s[1] or '', s[2] or '0', redis.call('SISMEMBER', KEYS[2], ARGV[1])}
