--[[
  Drops letters past their retention from all three keys at once.

  Input:
    KEYS[1] the letters by event id (hash)
    KEYS[2] the index by event time (sorted set)
    KEYS[3] the index by expiry (sorted set)
    ARGV[1] now, epoch ms: letters that expire at or before it go

  Output:
    how many letters were dropped
]]
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
for _, id in ipairs(expired) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
end
return #expired
