--[[
  Closes the open query seq for new triggers and hands them over. Idempotent: a worker that died
  after claiming gets the same answer again.

  Input:
    KEYS[1] the coalescing state of the (patient, category) (qs)
    ARGV[1] the seq of the query

  Output:
    the triggers as JSON ({eventIds, count, firstAt, lastAt}), or nil for a query that is not
    open and was never claimed (a stale job)
]]
local claimed = redis.call('HGET', KEYS[1], 'c:' .. ARGV[1])
if claimed then return claimed end
if redis.call('HGET', KEYS[1], 'pending') ~= ARGV[1] then return false end
local t = redis.call('HMGET', KEYS[1], 'p_events', 'p_count', 'p_first_at', 'p_last_at')
claimed = cjson.encode({eventIds = cjson.decode(t[1]), count = tonumber(t[2]), firstAt = t[3], lastAt = t[4]})
redis.call('HDEL', KEYS[1], 'pending', 'p_events', 'p_count', 'p_first_at', 'p_last_at')
redis.call('HSET', KEYS[1], 'c:' .. ARGV[1], claimed)
return claimed
