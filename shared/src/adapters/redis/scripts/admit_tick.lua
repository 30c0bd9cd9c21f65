-- One admission tick for one event: the whole check-and-change, atomically, so any number of
-- admitters running at once (EventBridge delivers at least once) exceed neither cap nor rate.
-- Admitting moves the head of the queue to the offered set and advances `serving`, the highest
-- number admitted; each admitted customer then has `claim_ms` to claim (their poll), or the
-- offer lapses and its slot goes to the next tick's admissions. The reply carries what the
-- public status shows.
-- A number is called only once the events table says admission may reach it: the admitter first
-- asks how far this tick would go (mode "plan": nothing is admitted, the reply's `serving` is
-- where admission would stand), saves that as the durable cursor, then admits (mode "admit")
-- up to what it saved (`serving_limit`). So a number shown as called survives any cache loss.
-- After a restore the queue holds only those who came back; the others come back as they read
-- the status. So that admission does not run past their numbers in the meantime, it moves
-- through the numbers handed out before the loss no faster than the configured rate, starting
-- `restore_grace_ms` after the restore (the time for a waiting client to read the status and
-- present its ticket): the frontier `restored_serving + rate x (now - restored_at - grace)`,
-- until it passes `restored_ceiling`, the last number the lost cache could have handed out.
-- A priority group's line (shared/src/domain/priority_group.rs) ticks with this same script, on
-- its own keys, sharing the event's `active` and `offered` and the event's rate bucket (the
-- `tokens` of KEYS[8], the event's admission hash: the line's own for the event's line). Strict
-- order: a line calls nobody while a line ahead of it (KEYS[9..], settings, queue and pre-queue
-- of each, in order; ARGV[6..] their group names) is open and past its opening with anyone
-- waiting, or a pre-queue not yet closed or not yet drawn, or is missing from the cache (lost,
-- and not restored yet) or restored and still waiting for its customers to come back (its
-- restore frontier short of what the lost cache handed out); the reply then names that group
-- (`served_first`).
-- KEYS: settings, queue, active, admission, offered, prequeue, entrants, bucket,
--       [ahead settings, ahead queue, ahead prequeue]...
-- ARGV: now_ms, forget_lapsed_after_ms, mode ("plan" | "admit"), serving_limit ("" = none),
--       restore_grace_ms, [ahead group name]...
-- Reply: {"no_event"} | {admitted, shopping_after, waiting_after, serving, advance_rate|"", state,
--         opens_at_ms, admit_per_sec, next_number, entrants|"", drawn (0|1), seats_left|"",
--         draw_commitment|"", closed_reason|"", draw_seed, claim_ms, session_ms, restored_at_ms|"",
--         first_call_at_ms|"", pre_queue|"", max_active, admitted_total|"", freed_total|"",
--         slot_ms_total|"", no_shows_total|"", numbers_total|"", seats_base|"", freed_base|"",
--         pace_since_ms|"", ended_total|"", pace_windows|""}
-- (the last eleven: the pace counters, ADR 0029; `pace_windows`, admit mode only:
-- "<window_ms>;<ms into the newest window>;<held>,<admitted>;..." for the newest window and
-- the eight before it), then served_first|"" (the group ahead that keeps this line waiting)
-- (the seed goes back to the admitter, which shows it only once the draw is published;
-- `pre_queue`, the pre-queue's size, only before the opening, for the status's paced opening)
-- A paced opening (`first_call_at_ms`, set with `drawn`) calls nobody before that time: the
-- pre-queue is still learning its numbers.
local s = redis.call('HMGET', KEYS[1], 'state', 'opens_at_ms', 'max_active', 'admit_per_sec',
  'claim_ms', 'entrants', 'drawn', 'next_number', 'seats_left', 'draw_commitment', 'closed_reason',
  'draw_seed', 'session_ms', 'restored_at_ms', 'restored_serving', 'restored_ceiling',
  'first_call_at_ms')
local state = s[1]
if not state then return {'no_event'} end
-- The reply's pace tail: max_active, then the pace counters ('' for none yet), then this
-- tick's windows (admit mode).
local pace_windows = ''
local function pace_reply()
  local p = redis.call('HMGET', KEYS[4], 'pace_admitted', 'pace_freed', 'pace_slot_ms',
    'pace_no_shows', 'pace_numbers', 'pace_seats_base', 'pace_freed_base', 'pace_since_ms',
    'pace_ended')
  local reply = {s[3] or ''}
  for i = 1, 9 do reply[#reply + 1] = p[i] or '' end
  reply[#reply + 1] = pace_windows
  return reply
end
local opens_at, max_active = tonumber(s[2]), tonumber(s[3])
-- (An event configured before claim windows existed has none: the default, a minute.)
local rate, claim = tonumber(s[4]), tonumber(s[5]) or 60000
local now, forget_after = tonumber(ARGV[1]), tonumber(ARGV[2])
local planning, limit = ARGV[3] == 'plan', tonumber(ARGV[4])
local restored_at, restored_ceiling = tonumber(s[14]), tonumber(s[16])
if restored_at and restored_ceiling then
  local frontier = math.floor((tonumber(s[15]) or 0)
    + math.max(0, now - restored_at - tonumber(ARGV[5])) * rate / 1000)
  if frontier < restored_ceiling then limit = math.min(limit or frontier, frontier) end
end

-- Lapsed admissions and offers stay a while so their owner's poll says "expired"; then they go.
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - forget_after))
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', '(' .. (now - forget_after))

-- At opening the pre-queue closes (if no join after opening did it first).
if state ~= 'closed' and now >= opens_at and not s[6] then
  local entrants = redis.call('SCARD', KEYS[6])
  if entrants > 0 then redis.call('RENAME', KEYS[6], KEYS[7]) end
  s[8] = tostring(math.max(tonumber(s[8]) or 0, entrants))
  redis.call('HSET', KEYS[1], 'entrants', entrants, 'next_number', s[8])
  s[6] = tostring(entrants)
  if entrants == 0 then
    redis.call('HSET', KEYS[1], 'drawn', '1')
    s[7] = '1'
  end
end

-- Slots in use: customers shopping, and admitted customers whose claim window is still open.
local shopping = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')
  + redis.call('ZCOUNT', KEYS[5], '(' .. now, '+inf')

-- The first line ahead that is being served (or drawn) keeps this one waiting.
local served_first = ''
for i = 9, #KEYS - 2, 3 do
  local ahead = redis.call('HMGET', KEYS[i], 'state', 'opens_at_ms', 'entrants', 'drawn',
    'restored_at_ms', 'restored_serving', 'restored_ceiling', 'admit_per_sec')
  -- A line the cache lost, not restored yet, may have anyone waiting; one restored has only
  -- those who came back in its queue until its restore frontier passes the numbers the lost
  -- cache handed out (as its own tick bounds it, above): either keeps this one waiting.
  local recovering = false
  if ahead[5] and ahead[7] then
    local frontier = (tonumber(ahead[6]) or 0) + math.max(0, now - tonumber(ahead[5])
      - tonumber(ARGV[5])) * (tonumber(ahead[8]) or 0) / 1000
    recovering = frontier < tonumber(ahead[7])
  end
  if not ahead[1] or ahead[1] == 'open' and now >= (tonumber(ahead[2]) or 0) and (
      recovering or (ahead[3] and not ahead[4])
      or (not ahead[3] and redis.call('SCARD', KEYS[i + 2]) > 0)
      or redis.call('ZCARD', KEYS[i + 1]) > 0) then
    served_first = ARGV[6 + (i - 9) / 3]
    break
  end
end
local function with_served_first(reply)
  reply[#reply + 1] = served_first
  return reply
end

local admitted = 0
local serving = tonumber(redis.call('HGET', KEYS[4], 'serving')) or 0
-- Nobody is admitted before the pre-queue's numbers are in the queue (they come first), nor
-- before a paced opening's first call.
local pre_queue = ''
if now < opens_at and not s[6] then pre_queue = redis.call('SCARD', KEYS[6]) end
if state == 'open' and now >= opens_at and s[7] and now >= (tonumber(s[17]) or 0) then
  -- The rate budget: a token bucket holding at most one second's admissions, refilled here by
  -- the time elapsed. Several admitters share it; a clock behind the last refill adds nothing.
  local bucket = redis.call('HMGET', KEYS[8], 'tokens', 'refilled_at_ms')
  local tokens, refilled_at = tonumber(bucket[1]), tonumber(bucket[2])
  if not tokens then
    tokens, refilled_at = rate, now
  elseif now > refilled_at then
    tokens = math.min(rate, tokens + (now - refilled_at) * rate / 1000)
    refilled_at = now
  end
  local budget = math.min(max_active - shopping, math.floor(tokens))
  if served_first ~= '' then budget = 0 end

  if planning then
    -- How far this tick would go: the number of the last customer it would admit.
    if budget > 0 then
      local cap = limit or '+inf'
      local head = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', cap, 'WITHSCORES', 'LIMIT',
        budget - 1, 1)
      if #head == 0 then
        head = redis.call('ZREVRANGEBYSCORE', KEYS[2], cap, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
      end
      if #head > 0 then serving = math.max(serving, tonumber(head[2])) end
    end
    return with_served_first({0, shopping, redis.call('ZCARD', KEYS[2]), string.format('%.0f', serving),
      redis.call('HGET', KEYS[4], 'advance_rate') or '', state, s[2], s[4], s[8] or '0',
      s[6] or '', s[7] and 1 or 0, s[9] or '', s[10] or '', s[11] or '', s[12] or '',
      tostring(claim), s[13], s[14] or '', s[17] or '', pre_queue, unpack(pace_reply())})
  end

  local serving_before = serving
  if budget > 0 then
    -- The head of the queue, up to the durable limit.
    local popped
    if limit then
      popped = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', limit, 'WITHSCORES', 'LIMIT', 0, budget)
      for i = 1, #popped, 2 do redis.call('ZREM', KEYS[2], popped[i]) end
    else
      popped = redis.call('ZPOPMIN', KEYS[2], budget)
    end
    local deadline = string.format('%.0f', now + claim)
    local batch = {}
    for i = 1, #popped, 2 do
      batch[#batch + 1] = deadline
      batch[#batch + 1] = popped[i]
      if #batch >= 1000 then -- stay far below Lua's unpack() limit
        redis.call('ZADD', KEYS[5], unpack(batch))
        batch = {}
      end
    end
    if #batch > 0 then redis.call('ZADD', KEYS[5], unpack(batch)) end
    admitted = #popped / 2
    if admitted > 0 then serving = math.max(serving, tonumber(popped[#popped])) end
  end

  redis.call('HSET', KEYS[8], 'tokens', tostring(tokens - admitted),
    'refilled_at_ms', tostring(refilled_at))
  redis.call('HSET', KEYS[4], 'serving', string.format('%.0f', serving))

  -- Measure how fast `serving` advances (leavers included: their numbers are passed too), over
  -- windows of at least 10 s, only while a backlog remains (an empty queue advances slowly for
  -- lack of customers, which says nothing of the pace).
  local waiting = redis.call('ZCARD', KEYS[2])
  local window = redis.call('HMGET', KEYS[4], 'window_start_ms', 'window_serving', 'advance_rate')
  local window_start = tonumber(window[1])
  if waiting == 0 or not window_start or window_start > now then
    redis.call('HSET', KEYS[4], 'window_start_ms', now, 'window_serving', serving)
  elseif now - window_start >= 10000 then
    local measured = (serving - tonumber(window[2])) * 1000 / (now - window_start)
    if window[3] then measured = (tonumber(window[3]) + measured) / 2 end
    redis.call('HSET', KEYS[4], 'advance_rate', tostring(measured),
      'window_start_ms', now, 'window_serving', serving)
  end

  -- The pace (ADR 0029), counted since admission started, for the status's honest ETA: slots
  -- freed (the slots in use after the last tick, less those in use now: claims move a slot,
  -- purchases, leavers, lapsed offers and sessions free it), slot-seconds held (the slots in
  -- use times the time between ticks), offers lapsed unclaimed (no-shows), admissions and the
  -- numbers they passed (leavers from the queue included); and, from the first tick that knows
  -- the seats left, that count and the slots freed by then, for the seats per admission.
  local pace = redis.call('HMGET', KEYS[4], 'pace_at_ms', 'pace_in_use', 'pace_seats_base')
  local pace_at, pace_in_use = tonumber(pace[1]), tonumber(pace[2])
  if pace_at and pace_in_use and now > pace_at then
    redis.call('HINCRBY', KEYS[4], 'pace_freed', math.max(0, pace_in_use - shopping))
    redis.call('HINCRBYFLOAT', KEYS[4], 'pace_slot_ms', pace_in_use * (now - pace_at))
    redis.call('HINCRBY', KEYS[4], 'pace_no_shows',
      redis.call('ZCOUNT', KEYS[5], '(' .. pace_at, now))
    -- Sessions that ran to their end (the slot held to its deadline, purchases remove theirs).
    redis.call('HINCRBY', KEYS[4], 'pace_ended',
      redis.call('ZCOUNT', KEYS[3], '(' .. pace_at, now))
  end
  if not pace_at or now > pace_at then
    redis.call('HINCRBY', KEYS[4], 'pace_admitted', admitted)
    redis.call('HINCRBY', KEYS[4], 'pace_numbers', serving - serving_before)
    redis.call('HSET', KEYS[4], 'pace_at_ms', now, 'pace_in_use', shopping + admitted)
    redis.call('HSETNX', KEYS[4], 'pace_since_ms', now)
  end
  if not pace[3] and s[9] then
    redis.call('HSET', KEYS[4], 'pace_seats_base', s[9], 'pace_freed_base',
      redis.call('HGET', KEYS[4], 'pace_freed') or '0')
  end
  -- The session's first part foreseen (ADR 0029): in windows of an eighth of the session, the
  -- admissions made in each of the last nine (the admitted count at each window's first tick,
  -- kept in a ring of ten fields) and the claimed slots of each still held (a session claimed
  -- in a window ends a session after it: its deadline tells its window). A slot still held
  -- long after the quick buyers left will likely be held to its deadline.
  local session = tonumber(s[13]) or 0
  if session >= 8 then
    local width = math.floor(session / 8)
    local newest = math.floor(now / width)
    local total = tonumber(redis.call('HGET', KEYS[4], 'pace_admitted')) or 0
    local ring = 'pace_window_' .. (newest % 10)
    local first = redis.call('HGET', KEYS[4], ring)
    if not first or tonumber(string.match(first, '^(%-?%d+):')) ~= newest then
      redis.call('HSET', KEYS[4], ring, string.format('%.0f:%.0f', newest, total - admitted))
    end
    local parts = {tostring(width), string.format('%.0f', now - newest * width)}
    local next_start = total
    for j = 0, 8 do
      local window = newest - j
      -- No tick in a window (before admission started, or a stalled admitter): none admitted.
      local start = next_start
      local kept = redis.call('HGET', KEYS[4], 'pace_window_' .. (window % 10))
      if kept then
        local id, count = string.match(kept, '^(%-?%d+):(%d+)$')
        if tonumber(id) == window then start = tonumber(count) end
      end
      local from = window * width + session
      local held = redis.call('ZCOUNT', KEYS[3],
        from > now and string.format('%.0f', from) or '(' .. string.format('%.0f', now),
        '(' .. string.format('%.0f', from + width))
      parts[#parts + 1] = string.format('%d,%.0f', held, math.max(0, next_start - start))
      next_start = start
    end
    pace_windows = table.concat(parts, ';')
  end
end

return with_served_first({admitted, shopping + admitted, redis.call('ZCARD', KEYS[2]),
  string.format('%.0f', serving),
  redis.call('HGET', KEYS[4], 'advance_rate') or '', state, s[2], s[4], s[8] or '0', s[6] or '',
  s[7] and 1 or 0, s[9] or '', s[10] or '', s[11] or '', s[12] or '', tostring(claim), s[13], s[14] or '',
  s[17] or '', pre_queue, unpack(pace_reply())})
