--[[
  Adds (patient, category) to the waiting set unless it is there (its first wait counts), and
  raises the newest waiting query's seq.

  Input:
    KEYS[1] the waiting set (zset: member -> first wait, epoch ms)
    KEYS[2] the newest waiting seq of each member (hash)
    ARGV[1] the member, `<patient service id>|<category>`
    ARGV[2] now, epoch ms
    ARGV[3] the seq of the query that waits

  Output:
    {first wait (epoch ms, as a string), newest waiting seq}
]]
redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
local newest = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[3]) > newest then
  newest = tonumber(ARGV[3])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
return {redis.call('ZSCORE', KEYS[1], ARGV[1]), newest}
