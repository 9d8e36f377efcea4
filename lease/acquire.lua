-- acquire.lua: grant the lease if nobody holds it and issue its fencing token,
-- in one atomic step (one round trip).
--
-- KEYS[1]  lock key     <prefix>:{<name>}:lock   (same hash tag as KEYS[2])
-- KEYS[2]  counter key  <prefix>:{<name>}:token  (never expires)
-- ARGV[1]  TTL in milliseconds (integer > 0)
-- ARGV[2]  owner id (random hex, unique per grant)
--
-- Returns {1, token, ""} when granted: the lock key now holds "<token>:<owner>"
-- with the TTL, and the counter holds token. Returns {0, pttl, holder} when
-- the key is held: pttl is the holder's remaining TTL in ms (-1: no expiry)
-- and holder the key's value.
--
-- The token is max(counter + 1, server time in microseconds): a hybrid
-- logical clock. It is strictly greater than the last token this counter
-- issued, and, when the counter was lost (restart without persistence,
-- FLUSHALL, failover to a replica that missed it), still greater than every
-- earlier token as long as the server clocks are closer than the time since
-- the lost grant. Lua numbers are doubles: exact up to 2^53 (time in µs is
-- about 1.8e15 < 9.0e15), so a counter at or above 2^53 is refused.
-- Writing after TIME needs effects replication: the default since Redis 5,
-- the only mode since Redis 7.
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then
  local holder = redis.call('GET', KEYS[1])
  if type(holder) ~= 'string' then holder = '' end
  return {0, pttl, holder}
end

local limit = 9007199254740992 -- 2^53
local raw = redis.call('GET', KEYS[2])
local counter = 0
if raw then
  counter = tonumber(raw)
  if counter == nil or counter < 0 or counter ~= math.floor(counter) then
    return redis.error_reply('fencekit: token counter ' .. KEYS[2] .. ' holds ' .. raw .. ', not a token')
  end
  if counter >= limit - 1 then
    return redis.error_reply('fencekit: token counter ' .. KEYS[2] .. ' is at 2^53, the largest exact token')
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local token = counter + 1
if now > token and now < limit then token = now end

local tok = string.format('%.0f', token)
redis.call('SET', KEYS[2], tok)
redis.call('SET', KEYS[1], tok .. ':' .. ARGV[2], 'PX', ARGV[1])
return {1, tok, ''}
