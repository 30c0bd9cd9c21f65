-- Create or change an event's settings, in one atomic step on the event's settings hash.
-- The draw seed and its commitment come from the event's durable record (DynamoDB), which makes
-- the seed once and never changes it; `next_number` starts at 0 only for a new event, with no
-- number reserved yet (`number_ceiling` 0: the first join reserves a range, see join.lua). An
-- event the cache lost is restored (restore_event.lua) before an operator's change reaches here.
-- KEYS: settings
-- ARGV: state, opens_at_ms, max_active, admit_per_sec, session_ms, claim_ms,
--       ticket_limit ("" = no limit: the field is removed), draw_seed, draw_commitment,
--       challenge_difficulty (leading zero bits a joiner's proof-of-work needs; "0" = none: the
--       field is removed), code_required ("1": a new joiner needs an access code; "0": the
--       field is removed), group_lines (the event's priority groups in order, `fanclub,card`,
--       for the admit tick; "" = none: the field is removed)
-- Reply: 1
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'opens_at_ms', ARGV[2], 'max_active', ARGV[3],
  'admit_per_sec', ARGV[4], 'session_ms', ARGV[5], 'claim_ms', ARGV[6],
  'draw_seed', ARGV[8], 'draw_commitment', ARGV[9])
if ARGV[7] == '' then
  redis.call('HDEL', KEYS[1], 'ticket_limit')
else
  redis.call('HSET', KEYS[1], 'ticket_limit', ARGV[7])
end
if ARGV[10] == '0' then
  redis.call('HDEL', KEYS[1], 'challenge_difficulty')
else
  redis.call('HSET', KEYS[1], 'challenge_difficulty', ARGV[10])
end
if ARGV[11] == '1' then
  redis.call('HSET', KEYS[1], 'code_required', '1')
else
  redis.call('HDEL', KEYS[1], 'code_required')
end
if ARGV[12] == '' then
  redis.call('HDEL', KEYS[1], 'group_lines')
else
  redis.call('HSET', KEYS[1], 'group_lines', ARGV[12])
end
if ARGV[1] ~= 'closed' then redis.call('HDEL', KEYS[1], 'closed_reason') end
redis.call('HSETNX', KEYS[1], 'next_number', 0)
redis.call('HSETNX', KEYS[1], 'number_ceiling', 0)
return 1
