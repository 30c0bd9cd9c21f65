-- Mark the pre-queue as drawn. Only on an event that exists: if the cache was lost between the
-- draw's numbers and this mark, HSET on the missing hash would make a settings hash with no
-- state, which every script then reads as "no event" and which no restore replaces (the event
-- would never be re-loaded). Left missing, the next tick restores it from its record instead.
-- A paced opening's first call (`wait_policy::first_call_at`) is set with it: admission waits for
-- it (admit_tick.lua).
-- KEYS: settings
-- ARGV: first_call_at_ms ("" = call from now on)
-- Reply: 1 marked | 0 no such event
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'drawn', '1')
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'first_call_at_ms', ARGV[1]) end
return 1
