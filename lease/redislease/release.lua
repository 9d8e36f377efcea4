-- release.lua: delete the lease if the caller still holds it and, when
-- someone waits for it, tell them (compare, delete, publish: one round trip).
--
-- KEYS[1]  lock key  <prefix>:{<name>}:lock
-- ARGV[1]  the holder's value "<token>:<identity>:<owner>" written by acquire.lua
-- ARGV[2]  release channel <prefix>:{<name>}:released
--
-- Returns 1 when deleted, 0 when the key is missing (expired or deleted), -1
-- when someone else holds it. When a waiting caller was refused during this
-- grant (acquire.lua appended '+' to the value), the release is published on
-- the channel; otherwise a release makes two calls (GET, DEL), like a lock
-- without notifications. The counter key is never deleted: it keeps tokens
-- increasing.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if not v then return 0 end
if v == ARGV[1] .. '+' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return -1
