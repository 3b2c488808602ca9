--[[
  The key no longer waits: removes one member from the waiting set and the seq hash.

  Input:
    KEYS[1] the waiting set (zset)
    KEYS[2] the newest waiting seq of each member (hash)
    ARGV[1] the member, `<patient service id>|<category>`

  Output:
    the number of members removed from the waiting set (0 or 1)
]]
redis.call('HDEL', KEYS[2], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
