-- Join an event's queue, or keep the place already held. One atomic step.
-- Before opening the customer enters the pre-queue, a set with no order: at opening it closes
-- and the draw gives its entrants the first numbers (see shared/src/draw.rs). After opening a
-- joiner gets the next queue number. An admitted customer who has not claimed yet claims here.
-- Numbers come from a range made durable first (the events table's number ceiling,
-- `number_ceiling` here): a join never hands out a number past it, so no loss of the cache can
-- make a number be handed out twice. When the range runs low, the join that notices takes the
-- top-up lock and its caller reserves the next range (shared/src/numbering.rs); when it has run
-- out, the join answers "numbers_exhausted" and its caller reserves before trying again.
-- KEYS: settings, queue, active, admission, offered, prequeue, entrants, left, numbers_lock
-- A customer about to be stored anew (not one already queued, admitted or in the pre-queue)
-- must have shown the event's proof-of-work (`challenge_difficulty` leading zero bits; the
-- caller checked the proof and passes the bits it shows, see shared/src/domain/proof_of_work.rs):
-- else the reply is "challenge" and nothing is written. Then, to an event with `code_required`,
-- such a newcomer must come with an access code the caller already bound them to, durably
-- (code_accepted "1"; docs/decisions/0030-access-codes.md): else the reply is "code_required".
-- ARGV: customer, now_ms, top_up_lock_ms, work_bits (zero bits the caller's proof shows),
--       code_accepted (0|1)
-- Reply: {"no_event"} | {"closed"} | {"challenge", difficulty} | {"code_required"}
--      | {"admitted", expires_ms}
--      | {"numbers_exhausted", top_up (0|1)}
--      | {"pre_queue", newly_queued, opens_at_ms, draw_seed} (the seed for the adapter to compute
--        the entrant's public hash with; it never reaches the customer)
--      | {"waiting", number, position, newly_queued, serving, advance_rate|"", admit_per_sec, opens_at_ms,
--         top_up (0|1)}
local s = redis.call('HMGET', KEYS[1], 'state', 'opens_at_ms', 'admit_per_sec', 'session_ms',
  'entrants', 'drawn', 'next_number', 'draw_seed', 'number_ceiling', 'number_block',
  'challenge_difficulty', 'code_required')
local state = s[1]
if not state then return {'no_event'} end
local opens_at, session = tonumber(s[2]), tonumber(s[4])
local customer, now = ARGV[1], tonumber(ARGV[2])

-- Already admitted and shopping: joining again changes nothing.
local admitted_until = redis.call('ZSCORE', KEYS[3], customer)
if admitted_until and tonumber(admitted_until) > now then return {'admitted', admitted_until} end
-- Admitted and not claimed yet: claiming starts the session.
local offer = redis.call('ZSCORE', KEYS[5], customer)
if offer and tonumber(offer) > now then
  local expires = string.format('%.0f', now + session)
  redis.call('ZREM', KEYS[5], customer)
  redis.call('ZADD', KEYS[3], expires, customer)
  return {'admitted', expires}
end
if state == 'closed' then return {'closed'} end

-- Whether this caller should reserve the next range of numbers: the range is low (or out) and
-- nobody else is reserving (the lock lapses by itself if its holder dies).
local function top_up(next_number)
  local ceiling = tonumber(s[9]) or 0
  local block = tonumber(s[10]) or 0
  if ceiling - next_number > math.floor(block / 2) then return 0 end
  if redis.call('SET', KEYS[9], '1', 'NX', 'PX', ARGV[3]) then return 1 end
  return 0
end

local function waiting(number, newly_queued, reserve)
  local admission = redis.call('HMGET', KEYS[4], 'serving', 'advance_rate')
  return {'waiting', tostring(number), tostring(redis.call('ZRANK', KEYS[2], customer)),
    tostring(newly_queued), admission[1] or '0', admission[2] or '', s[3], s[2], tostring(reserve)}
end

local number = redis.call('ZSCORE', KEYS[2], customer)
if number then return waiting(number, 0, 0) end

-- The bot challenge, before anything is stored: a newcomer needs the event's proof-of-work
-- (someone already in the pre-queue or among its entrants keeps their place without one).
local difficulty = tonumber(s[11]) or 0
if difficulty > (tonumber(ARGV[4]) or 0)
    and redis.call('SISMEMBER', KEYS[6], customer) == 0
    and redis.call('SISMEMBER', KEYS[7], customer) == 0 then
  return {'challenge', tostring(difficulty)}
end

-- Access codes (ADR 0030), likewise before anything is stored: a newcomer to an event that
-- requires a code needs one accepted first; the caller checks it in DynamoDB and joins again.
if s[12] == '1' and ARGV[5] ~= '1'
    and redis.call('SISMEMBER', KEYS[6], customer) == 0
    and redis.call('SISMEMBER', KEYS[7], customer) == 0 then
  return {'code_required'}
end

-- The pre-queue, until it closes: a join whose clock still says "before opening" but that
-- arrives after an admitter closed it joins the queue after it (a set nobody draws would keep
-- it waiting for ever).
if now < opens_at and not s[5] then
  return {'pre_queue', tostring(redis.call('SADD', KEYS[6], customer)), s[2], s[8] or ''}
end

-- The first step after opening closes the pre-queue: its entrants are set aside for the draw,
-- and the numbers after theirs are for everyone who joins from now on.
if not s[5] then
  local entrants = redis.call('SCARD', KEYS[6])
  if entrants > 0 then redis.call('RENAME', KEYS[6], KEYS[7]) end
  s[7] = tostring(math.max(tonumber(s[7]) or 0, entrants))
  redis.call('HSET', KEYS[1], 'entrants', entrants, 'next_number', s[7])
  if entrants == 0 then
    redis.call('HSET', KEYS[1], 'drawn', '1')
    s[6] = '1'
  end
end
-- An entrant of the closed pre-queue gets a number from the draw, not a new one; one who left
-- while the draw runs and joins again is an entrant again (before opening, too, leaving and
-- joining again keeps the place). KEYS[8] is the set of those who left.
if not s[6] and redis.call('SISMEMBER', KEYS[7], customer) == 1 then
  redis.call('SREM', KEYS[8], customer)
  return {'pre_queue', '0', s[2], s[8] or ''}
end

local last = tonumber(s[7]) or 0
if last + 1 > (tonumber(s[9]) or 0) then return {'numbers_exhausted', tostring(top_up(last))} end
number = redis.call('HINCRBY', KEYS[1], 'next_number', 1)
redis.call('ZADD', KEYS[2], number, customer)
-- A lapsed admission or offer is replaced by the new place in the queue.
if admitted_until then redis.call('ZREM', KEYS[3], customer) end
if offer then redis.call('ZREM', KEYS[5], customer) end
return waiting(number, 1, top_up(number))
