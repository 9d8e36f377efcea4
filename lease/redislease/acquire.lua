-- acquire.lua: grant the lease if nobody holds it and issue its fencing token,
-- in one atomic step (one round trip).
--
-- KEYS[1]  lock key     <prefix>:{<name>}:lock   (same hash tag as KEYS[2])
-- KEYS[2]  counter key  <prefix>:{<name>}:token  (never expires)
-- ARGV[1]  TTL in milliseconds (integer > 0)
-- ARGV[2]  '<identity>:<owner>': the holder's Options.Identity and a random
--          hex id unique per grant
-- ARGV[3]  optional: 'w' when the caller waits for a release (AcquireWait)
--
-- Returns the token (a decimal string) when granted: the lock key now holds
-- "<token>:<identity>:<owner>" with the TTL, and the counter holds the token. Returns
-- {pttl, holder} when the key is held: pttl is the holder's remaining TTL in
-- ms (-1: no expiry) and holder the key's value ('' for a key of another
-- type than string). A refused caller that waits marks the holder's value
-- (fencekit's only) with a trailing '+', which renewals keep and which makes
-- release.lua publish the release; without it a release publishes nothing.
--
-- The token is max(counter + 1, server time in microseconds): a hybrid
-- logical clock. It is strictly greater than the last token this counter
-- issued, and, when the counter was lost (restart without persistence,
-- FLUSHALL, failover to a replica that missed it), still greater than every
-- earlier token as long as the server clocks are closer than the time since
-- the lost grant. Lua numbers are doubles: exact up to 2^53 (time in µs is
-- about 1.8e15 < 9.0e15), so a counter at or above 2^53 - 1 is refused.
-- Writing after TIME needs effects replication: the default since Redis 5,
-- the only mode since Redis 7.
--
-- Each redis.call costs Redis about as much as a small command on its own
-- (docs/performance.md), so a refusal makes two (PTTL, GET) and a grant four
-- (PTTL, TIME, SET GET of the counter, SET of the lock), with no arithmetic on
-- doubles on the usual path: the time is built as a string and compared with
-- the old counter as decimal strings (longer is larger; same length compares
-- bytewise). Only a counter that may be at or ahead of the clock (several
-- grants in one microsecond, a clock set back, leading zeros) is converted
-- to a number. The counter is swapped first (SET ... GET) and put back when
-- it turns out not to be a token, so an error changes nothing.
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then
  local holder = redis.pcall('GET', KEYS[1]) -- WRONGTYPE for a hash, a list...
  if type(holder) ~= 'string' then holder = '' end
  if ARGV[3] and string.byte(holder, -1) ~= 43 and string.find(holder, '^%d+:.*%x$') then
    redis.call('APPEND', KEYS[1], '+') -- keeps the TTL
  end
  return {pttl, holder}
end

local t = redis.call('TIME')
local us = t[2]
local tok = t[1] .. us -- seconds .. 6-digit µs
if #us < 6 then tok = t[1] .. string.sub('00000', #us) .. us end
if #tok >= 16 and (#tok > 16 or tok >= '9007199254740991') then -- after the year 2255
  return redis.error_reply('fencekit: server time ' .. tok .. ' µs is at 2^53, the largest exact token')
end
local raw = redis.call('SET', KEYS[2], tok, 'GET')
if raw and (#raw > #tok or (#raw == #tok and raw >= tok) or not string.find(raw, '^%d+$')) then
  if not string.find(raw, '^%d+$') then
    redis.call('SET', KEYS[2], raw)
    return redis.error_reply('fencekit: token counter ' .. KEYS[2] .. ' holds ' .. raw .. ', not a token')
  end
  local counter = tonumber(raw)
  if counter >= 9007199254740991 then -- 2^53 - 1: counter + 1 would not be exact
    redis.call('SET', KEYS[2], raw)
    return redis.error_reply('fencekit: token counter ' .. KEYS[2] .. ' is at 2^53, the largest exact token')
  end
  if counter >= tonumber(tok) then -- leading zeros can make a longer string smaller
    tok = string.format('%.0f', counter + 1)
    redis.call('SET', KEYS[2], tok)
  end
end

-- The key is absent (PTTL -2) and the script runs atomically: a plain SET.
redis.call('SET', KEYS[1], tok .. ':' .. ARGV[2], 'PX', ARGV[1])
return tok
