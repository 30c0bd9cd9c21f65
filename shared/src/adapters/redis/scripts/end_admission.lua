-- End one admission (its customer paid): only the admission that expires at expires_ms, so a
-- late or repeated payment never ends a newer admission of the same customer, nor touches the
-- waiting queue.
-- KEYS: active
-- ARGV: customer, expires_ms
-- Reply: 1 (ended) | 0 (not that admission, or none)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
