-- Create or change an event's settings, in one atomic step on the event's settings hash.
-- The pre-queue draw seed is written only if the event has none yet (HSETNX): re-configuring an
-- event (`lineup event set`, `open` again) must never re-roll the pre-queue's order.
-- KEYS: settings
-- ARGV: state, opens_at_ms, max_active, admit_per_sec, session_ms,
--       ticket_limit ("" = no limit: the field is removed), draw_seed (used only if none is stored)
-- Reply: 1
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'opens_at_ms', ARGV[2], 'max_active', ARGV[3],
  'admit_per_sec', ARGV[4], 'session_ms', ARGV[5])
if ARGV[6] == '' then
  redis.call('HDEL', KEYS[1], 'ticket_limit')
else
  redis.call('HSET', KEYS[1], 'ticket_limit', ARGV[6])
end
redis.call('HSETNX', KEYS[1], 'draw_seed', ARGV[7])
return 1
