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
-- KEYS: settings, queue, active, admission, offered, prequeue, entrants
-- ARGV: now_ms, forget_lapsed_after_ms, mode ("plan" | "admit"), serving_limit ("" = none),
--       restore_grace_ms
-- Reply: {"no_event"} | {admitted, shopping_after, waiting_after, serving, advance_rate|"", state,
--         opens_at_ms, admit_per_sec, next_number, entrants|"", drawn (0|1), seats_left|"",
--         draw_commitment|"", closed_reason|"", draw_seed, claim_ms, session_ms, restored_at_ms|"",
--         first_call_at_ms|"", pre_queue|""}
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

local admitted = 0
local serving = tonumber(redis.call('HGET', KEYS[4], 'serving')) or 0
-- Nobody is admitted before the pre-queue's numbers are in the queue (they come first), nor
-- before a paced opening's first call.
local pre_queue = ''
if now < opens_at and not s[6] then pre_queue = redis.call('SCARD', KEYS[6]) end
if state == 'open' and now >= opens_at and s[7] and now >= (tonumber(s[17]) or 0) then
  -- The rate budget: a token bucket holding at most one second's admissions, refilled here by
  -- the time elapsed. Several admitters share it; a clock behind the last refill adds nothing.
  local bucket = redis.call('HMGET', KEYS[4], 'tokens', 'refilled_at_ms')
  local tokens, refilled_at = tonumber(bucket[1]), tonumber(bucket[2])
  if not tokens then
    tokens, refilled_at = rate, now
  elseif now > refilled_at then
    tokens = math.min(rate, tokens + (now - refilled_at) * rate / 1000)
    refilled_at = now
  end
  local budget = math.min(max_active - shopping, math.floor(tokens))

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
    return {0, shopping, redis.call('ZCARD', KEYS[2]), string.format('%.0f', serving),
      redis.call('HGET', KEYS[4], 'advance_rate') or '', state, s[2], s[4], s[8] or '0',
      s[6] or '', s[7] and 1 or 0, s[9] or '', s[10] or '', s[11] or '', s[12] or '',
      tostring(claim), s[13], s[14] or '', s[17] or '', pre_queue}
  end

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

  redis.call('HSET', KEYS[4], 'tokens', tostring(tokens - admitted),
    'refilled_at_ms', tostring(refilled_at), 'serving', string.format('%.0f', serving))

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
end

return {admitted, shopping + admitted, redis.call('ZCARD', KEYS[2]), string.format('%.0f', serving),
  redis.call('HGET', KEYS[4], 'advance_rate') or '', state, s[2], s[4], s[8] or '0', s[6] or '',
  s[7] and 1 or 0, s[9] or '', s[10] or '', s[11] or '', s[12] or '', tostring(claim), s[13], s[14] or '',
  s[17] or '', pre_queue}
