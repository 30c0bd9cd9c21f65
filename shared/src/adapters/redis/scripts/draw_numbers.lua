-- Give a batch of the closed pre-queue's entrants their drawn numbers, skipping those who left
-- while the draw ran. ZADD NX: a second admitter writing the same draw changes nothing.
-- KEYS: queue, left
-- ARGV: customer, number, customer, number, ...
-- Reply: how many were added
local added = 0
for i = 1, #ARGV, 2 do
  if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 0 then
    added = added + redis.call('ZADD', KEYS[1], 'NX', ARGV[i + 1], ARGV[i])
  end
end
return added
