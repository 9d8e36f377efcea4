-- inspect.lua: read who holds the lease and the last token issued, changing
-- nothing (one round trip, atomic).
--
-- KEYS[1]  lock key     <prefix>:{<name>}:lock   (same hash tag as KEYS[2])
-- KEYS[2]  counter key  <prefix>:{<name>}:token
--
-- Returns {pttl, holder, last}: pttl is the lock key's remaining TTL in ms
-- (-2: not held, -1: no expiry), holder its value ('' when absent or not a
-- string), last the counter's value ('' when absent or not a string).
local pttl = redis.call('PTTL', KEYS[1])
local holder = ''
if pttl ~= -2 then
  holder = redis.pcall('GET', KEYS[1])
  if type(holder) ~= 'string' then holder = '' end
end
local last = redis.pcall('GET', KEYS[2])
if type(last) ~= 'string' then last = '' end
return {pttl, holder, last}
