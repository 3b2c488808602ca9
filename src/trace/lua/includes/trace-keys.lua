--[[
  The message trace's keys, built inside the scripts that write a step (docs/message-trace.md): all
  under a partition's prefix, so they share its hash tag with the keys the script already touches.
  Mirrors src/trace/trace-keys.ts.
  - queryTraceKey(prefix, psid, category, seq): the steps of one query (hash)
  - deliveryTraceKey(prefix, event_id): the delivery of one result event (hash)
  - touchTrace(key, ttl): sets the key's expiry to the retention (seconds) after a write
]]
local function queryTraceKey(prefix, psid, category, seq)
  return prefix .. ':trace:q:' .. psid .. ':' .. category .. ':' .. seq
end

local function deliveryTraceKey(prefix, event_id)
  return prefix .. ':trace:e:' .. event_id
end

local function touchTrace(key, ttl)
  redis.call('EXPIRE', key, ttl)
end
