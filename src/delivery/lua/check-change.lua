--[[
  Compares a result with its key's last one and records it, in one step. The event id is kept
  with the hash, so that the same event handed over again (a query retried after a crash) gets
  the same answer, not "unchanged" against itself, which only_changed would then drop.

  Input:
    KEYS[1] the key's last result (hash: hash, event_id, changed)
    ARGV[1] the content hash of this result
    ARGV[2] the event id of this result

  Output:
    1 when the result differs from the last one (or is the first), else 0
]]
local last = redis.call('HMGET', KEYS[1], 'hash', 'event_id', 'changed')
if last[2] == ARGV[2] then return tonumber(last[3]) end
local changed = 1
if last[1] == ARGV[1] then changed = 0 end
redis.call('HSET', KEYS[1], 'hash', ARGV[1], 'event_id', ARGV[2], 'changed', changed)
return changed
