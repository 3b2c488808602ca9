--[[
  Removes from one partition's outbox of opened queries (qdue) the entries the relay has added to
  the partition's queue. An entry whose due score changed since it was read (the query was put
  back for a resubmission meanwhile) stays, for the next read.

  Input:
    KEYS[1] the outbox of opened queries (qdue)
    ARGV[1...] member, due score as read, pairs

  Output:
    the number of entries removed
]]
local removed = 0
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
