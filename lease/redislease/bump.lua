-- bump.lua: raise a lease's token counter to a target, never lower it
-- (fencectl bump, lease.Client.Bump), in one round trip.
--
-- KEYS[1]  counter key  <prefix>:{<name>}:token
-- ARGV[1]  target token, decimal digits without leading zeros
-- ARGV[2]  how far above the server's time (TIME, in µs) the target may be
--
-- Returns {changed, before, now}: changed 1 when the counter was set to
-- the target, 0 when it was already at or above it, -1 when the target is
-- too far ahead of the server's time (nothing changed); before the
-- counter's value ('' when absent), leading zeros removed; now the
-- server's time in µs. A counter that is not decimal digits is an error,
-- as it is for acquire.lua.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- exact: below 2^53 until 2255
local before = redis.call('GET', KEYS[1])
if before then
  if not string.find(before, '^%d+$') then
    return redis.error_reply('fencekit: token counter ' .. KEYS[1] .. ' holds ' .. before .. ', not a token')
  end
  before = string.gsub(before, '^0+', '')
  if before == '' then before = '0' end
  if #before > #ARGV[1] or (#before == #ARGV[1] and before >= ARGV[1]) then
    return {0, before, now}
  end
else
  before = ''
end
if tonumber(ARGV[1]) > now + tonumber(ARGV[2]) then
  return {-1, before, now}
end
redis.call('SET', KEYS[1], ARGV[1])
return {1, before, now}
