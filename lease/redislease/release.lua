-- release.lua: delete the lease if the caller still holds it and, when
-- someone waits for it, tell them (compare, delete, publish: one round trip).
--
-- KEYS[1]  lock key  <prefix>:{<name>}:lock
-- ARGV[1]  the holder's value "<token>:<identity>:<owner>" written by acquire.lua
--
-- Returns 1 when deleted, 0 when the key is missing (expired or deleted), -1
-- when someone else holds it. When a waiting caller was refused during this
-- grant (acquire.lua appended '+' to the value), the release is published on
-- the channel <prefix>:{<name>}:released (the lock key with 'released' for
-- 'lock': not sent as an argument, which would cost every release more than
-- the concatenation costs the few that publish); otherwise a release makes
-- two calls (GET, DEL), like a lock without notifications. The counter key
-- is never deleted: it keeps tokens increasing.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if not v then return 0 end
if v == ARGV[1] .. '+' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', string.sub(KEYS[1], 1, -5) .. 'released', ARGV[1])
  return 1
end
return -1
