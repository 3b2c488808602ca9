--[[
  Removes every waiting member of one patient (a purge), from the waiting set and the seq hash.

  Input:
    KEYS[1] the waiting set (zset)
    KEYS[2] the newest waiting seq of each member (hash)
    ARGV[1] the members' prefix, `<patient service id>|`

  Output:
    the number of members removed from the waiting set
]]
local removed = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(member, 1, string.len(ARGV[1])) == ARGV[1] then
    removed = removed + redis.call('ZREM', KEYS[1], member)
    redis.call('HDEL', KEYS[2], member)
  end
end
return removed
