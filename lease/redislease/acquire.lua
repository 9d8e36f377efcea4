-- acquire.lua: grant the lease if nobody holds it and issue its fencing token,
-- in one atomic step (one round trip).
--
-- KEYS[1]  lock key     <prefix>:{<name>}:lock   (same hash tag as KEYS[2])
-- KEYS[2]  counter key  <prefix>:{<name>}:token  (never expires)
-- ARGV[1]  TTL in milliseconds (integer > 0)
-- ARGV[2]  '<identity>:<owner>': the holder's Options.Identity and a hex id
--          unique per grant
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
-- A grant makes three calls: TIME (the token if the clock is ahead of the
-- counter, as it is unless several grants fall in one microsecond or the
-- clock was set back), SET of the lock with NX, PX and GET (it sets the key
-- only if absent and returns the holder's value if not: Redis 7.0 or later),
-- and SET ... GET of the counter. The old counter is compared with the time
-- as decimal strings (longer is larger; same length compares bytewise) and
-- converted to a number only when it may be at or ahead of the time; then
-- the token becomes counter + 1 and the counter and the lock are written
-- again. A counter that is not a token is put back (one of another type is
-- left as it was) and the lock deleted, so an error changes nothing. A
-- refusal makes three calls: TIME, the SET that found the key, PTTL (and
-- APPEND when it marks the holder for a waiter).
local t = redis.call('TIME')
local us = t[2]
local tok = t[1] .. us -- seconds .. 6-digit µs
if #us < 6 then tok = t[1] .. string.sub('00000', #us) .. us end
if #tok >= 16 and (#tok > 16 or tok >= '9007199254740991') then -- after the year 2255
  return redis.error_reply('fencekit: server time ' .. tok .. ' µs is at 2^53, the largest exact token')
end

local holder = redis.pcall('SET', KEYS[1], tok .. ':' .. ARGV[2], 'NX', 'PX', ARGV[1], 'GET')
if holder then -- held: its value, or WRONGTYPE for a hash, a list...
  if type(holder) ~= 'string' then
    if not string.find(holder.err, '^WRONGTYPE') then return holder end -- OOM, a bad TTL...
    holder = ''
  end
  if ARGV[3] and string.byte(holder, -1) ~= 43 and string.find(holder, '^%d+:.*%x$') then
    redis.call('APPEND', KEYS[1], '+') -- keeps the TTL
  end
  return {redis.call('PTTL', KEYS[1]), holder}
end

local raw = redis.pcall('SET', KEYS[2], tok, 'GET')
if raw then -- the old counter: as a rule a token below tok
  if type(raw) ~= 'string' then -- WRONGTYPE: a hash, a list... (left as it was)
    redis.call('DEL', KEYS[1])
    return redis.error_reply('fencekit: token counter ' .. KEYS[2] .. ': ' .. raw.err)
  end
  if #raw > #tok or (#raw == #tok and raw >= tok) or not string.find(raw, '^%d+$') then
    local err
    if not string.find(raw, '^%d+$') then
      err = 'holds ' .. raw .. ', not a token'
    elseif tonumber(raw) >= 9007199254740991 then -- 2^53 - 1: counter + 1 would not be exact
      err = 'is at 2^53, the largest exact token'
    end
    if err then
      redis.call('SET', KEYS[2], raw)
      redis.call('DEL', KEYS[1])
      return redis.error_reply('fencekit: token counter ' .. KEYS[2] .. ' ' .. err)
    end
    local counter = tonumber(raw)
    if counter >= tonumber(tok) then -- leading zeros can make a longer string smaller
      tok = string.format('%.0f', counter + 1)
      redis.call('SET', KEYS[2], tok)
      redis.call('SET', KEYS[1], tok .. ':' .. ARGV[2], 'KEEPTTL')
    end
  end
end
return tok
