-- Make a layout the event's current one. Another version's bitsets describe another seat order,
-- so they go (the rebuild makes the new ones); the same version keeps them.
-- KEYS: layout, seats_available, seats_sold, seats_pending
-- ARGV: version, summary JSON
-- Reply: 1 the layout changed | 0 it was already current
if redis.call('HGET', KEYS[1], 'version') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'summary', ARGV[2])
  return 0
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'summary', ARGV[2])
return 1
