-- bump.lua: raise a lease's token counter to a target, never lower it
-- (fencectl bump, [Bump]), in one round trip.
--
-- KEYS[1]  counter key  <prefix>:{<name>}:token
-- ARGV[1]  target token, decimal digits without leading zeros
--
-- Returns {changed, before}: changed 1 when the counter was set to the
-- target, 0 when it was already at or above it; before the counter's value
-- ('' when absent), leading zeros removed. A counter that is not decimal
-- digits is an error, as it is for acquire.lua.
local before = redis.call('GET', KEYS[1])
if before then
  if not string.find(before, '^%d+$') then
    return redis.error_reply('fencekit: token counter ' .. KEYS[1] .. ' holds ' .. before .. ', not a token')
  end
  before = string.gsub(before, '^0+', '')
  if before == '' then before = '0' end
  if #before > #ARGV[1] or (#before == #ARGV[1] and before >= ARGV[1]) then
    return {0, before}
  end
else
  before = ''
end
redis.call('SET', KEYS[1], ARGV[1])
return {1, before}
