-- renew.lua: extend the lease's TTL if the caller still holds it (compare
-- and extend, one round trip).
--
-- KEYS[1]  lock key  <prefix>:{<name>}:lock
-- ARGV[1]  the holder's value "<token>:<identity>:<owner>" written by acquire.lua (a
--          waiter may have appended '+': see acquire.lua)
-- ARGV[2]  new TTL in milliseconds (integer > 0)
--
-- Returns 1 when extended, 0 when the key is missing (expired or deleted),
-- -1 when someone else holds it.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] or v == ARGV[1] .. '+' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not v then return 0 end
return -1
