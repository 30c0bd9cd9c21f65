-- Record the seats not sold (the expiry sweep counts them), for the public status. Only on an
-- event that exists: HSET on a missing hash would make a settings hash with no state.
-- KEYS: settings
-- ARGV: seats_left
-- Reply: 1 recorded | 0 no such event
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'seats_left', ARGV[1])
return 1
