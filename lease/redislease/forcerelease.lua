-- forcerelease.lua: end a lease whoever holds it (fencectl release --force, lease.Client.ForceRelease):
-- delete the lock key and wake the waiters, as release.lua does for the
-- holder, in one round trip.
--
-- KEYS[1]  lock key         <prefix>:{<name>}:lock
-- ARGV[1]  release channel  <prefix>:{<name>}:released
-- ARGV[2]  the holder's token the operator expects, '' for any holder
--
-- Returns {result, value, pttl}: result 1 deleted, 0 the key was absent, -1
-- held by another token than ARGV[2] (nothing changed); value the key's
-- value ('' when absent or not a string), pttl its remaining TTL in ms
-- before the delete (-2 absent, -1 no expiry). A key of another type under
-- the lease's name blocks the lease as well: it is deleted too.
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -2 then return {0, '', pttl} end
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then v = '' end
if ARGV[2] ~= '' and string.match(v, '^(%d+):') ~= ARGV[2] then
  return {-1, v, pttl}
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], v)
return {1, v, pttl}
