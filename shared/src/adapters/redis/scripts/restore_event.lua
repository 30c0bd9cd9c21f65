-- Put an event back after a cache loss, from its durable record, only if it is missing (two
-- functions finding it missing at once restore it once). `restored_at_ms` marks the event as
-- restored: tickets issued before it may put their holders back (restore_place.lua), and
-- `restored_serving` is how far admission had come: a ticket's number up to it was called before
-- the loss, one past it was still waiting (whatever admission does after the restore).
-- Numbering starts again past the durable number ceiling: every number the lost cache could have
-- handed out is at or below it, so none is handed out twice; the next join reserves a new range.
-- KEYS: settings, admission
-- ARGV: state, opens_at_ms, max_active, admit_per_sec, session_ms, claim_ms, ticket_limit|"",
--       draw_seed, draw_commitment, number_ceiling, entrants|"", drawn (0|1), serving,
--       closed_reason|"", now_ms, lost_since_ms, first_call_at_ms|"", challenge_difficulty,
--       code_required (0|1), group_lines|"" (the priority groups' names, in order)
-- Reply: 1 restored | 0 it was there
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'opens_at_ms', ARGV[2], 'max_active', ARGV[3],
  'admit_per_sec', ARGV[4], 'session_ms', ARGV[5], 'claim_ms', ARGV[6],
  'draw_seed', ARGV[8], 'draw_commitment', ARGV[9], 'next_number', ARGV[10],
  'number_ceiling', ARGV[10], 'number_block', '0',
  'restored_at_ms', ARGV[15], 'restored_serving', ARGV[13], 'restored_lost_since_ms', ARGV[16],
  'restored_ceiling', ARGV[10])
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'ticket_limit', ARGV[7]) end
if ARGV[11] ~= '' then redis.call('HSET', KEYS[1], 'entrants', ARGV[11]) end
if ARGV[12] == '1' then redis.call('HSET', KEYS[1], 'drawn', '1') end
if ARGV[14] ~= '' then redis.call('HSET', KEYS[1], 'closed_reason', ARGV[14]) end
if ARGV[17] and ARGV[17] ~= '' then redis.call('HSET', KEYS[1], 'first_call_at_ms', ARGV[17]) end
if ARGV[18] and ARGV[18] ~= '0' then redis.call('HSET', KEYS[1], 'challenge_difficulty', ARGV[18]) end
if ARGV[19] == '1' then redis.call('HSET', KEYS[1], 'code_required', '1') end
if ARGV[20] and ARGV[20] ~= '' then redis.call('HSET', KEYS[1], 'group_lines', ARGV[20]) end
redis.call('HSET', KEYS[2], 'serving', ARGV[13])
return 1
