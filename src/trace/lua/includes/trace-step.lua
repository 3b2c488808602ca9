--[[
  Writes one step of the message trace (docs/message-trace.md) in the script that runs the step,
  then sets the key's expiry to the retention. A ttl of 0 (the trace off) writes nothing.
  - traceSet(key, ttl, field, value, ...): HSET of the fields
  - traceSetNx(key, ttl, field, value): HSETNX of one field (the first time of a step)
  - traceIncr(key, ttl, field): HINCRBY of a counter, returns its new value (0 when off)
]]
--- @include "trace-keys"
local function traceSet(key, ttl, ...)
  if ttl <= 0 then return end
  redis.call('HSET', key, ...)
  touchTrace(key, ttl)
end

local function traceSetNx(key, ttl, field, value)
  if ttl <= 0 then return end
  redis.call('HSETNX', key, field, value)
  touchTrace(key, ttl)
end

local function traceIncr(key, ttl, field)
  if ttl <= 0 then return 0 end
  local n = redis.call('HINCRBY', key, field, 1)
  touchTrace(key, ttl)
  return n
end
