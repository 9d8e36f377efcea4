-- bump.lua: raise a free lease's token counter to a target, never lower it
-- (fencectl bump, lease.Client.Bump), in one round trip.
--
-- KEYS[1]  counter key  <prefix>:{<name>}:token
-- KEYS[2]  lock key     <prefix>:{<name>}:lock
-- ARGV[1]  target token, decimal digits without leading zeros
-- ARGV[2]  how far above the server's time (TIME, in µs) the target may be
--
-- Returns {changed, before, now}: changed 1 when the counter was set to
-- the target, 0 when it was already at or above it, -1 when the target is
-- too far ahead of the server's time (nothing changed), -2 when the lease
-- is held (nothing changed; a fourth element is the lock key's value, ''
-- when not a string); before the counter's value ('' when absent), leading
-- zeros removed; now the server's time in µs. A counter that is not
-- decimal digits is an error, as it is for acquire.lua.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) -- exact: below 2^53 until 2255
local before = redis.call('GET', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  local v = redis.pcall('GET', KEYS[2])
  if type(v) ~= 'string' then v = '' end
  return {-2, before or '', now, v}
end
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
