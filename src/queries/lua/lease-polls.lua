--[[
  Leases due polls of one partition's due set of polls (qpoll), moving their score to the lease's
  end, and reads each one's state from its query's coalescing hash
  (`<prefix>:qs:<psid>:<category>`, same hash tag): the newest submitted seq, the remote job
  (`r:<seq>`), the triggers (`c:<seq>`); each counts one more lease (`l:<seq>`). Nothing is
  leased while the partition is held (a rate limit) or paused (a refused API key). A member whose
  remote job is gone (ended, purged) is dropped from the set.

  Input:
    KEYS[1] the due set of polls (qpoll)
    KEYS[2] the partition's rate-limit hold on polls (qhold)
    KEYS[3] the partition's pause of polls (a refused API key)
    ARGV[1] now, epoch ms: members scored up to it are due
    ARGV[2] how many to lease at most
    ARGV[3] the lease's end, epoch ms
    ARGV[4] the partition's prefix

  Output:
    a flat list, 6 entries per leased poll: member, due score, newest submitted seq ('0' when
    none), remote job JSON, triggers JSON (or ''), leases; an empty list while held or paused
]]
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return {} end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for i = 1, #due, 2 do
  local member = due[i]
  local psid, cat, seq = string.match(member, '^(.*)|([^|]*)|(%d+)$')
  local qs = ARGV[4] .. ':qs:' .. (psid or '') .. ':' .. (cat or '')
  local f = psid and redis.call('HMGET', qs, 'submitted', 'r:' .. seq, 'c:' .. seq) or {}
  if not f[2] then
    redis.call('ZREM', KEYS[1], member)
  else
    redis.call('ZADD', KEYS[1], 'XX', ARGV[3], member)
    local leases = redis.call('HINCRBY', qs, 'l:' .. seq, 1)
    out[#out + 1] = member
    out[#out + 1] = due[i + 1]
    out[#out + 1] = f[1] or '0'
    out[#out + 1] = f[2]
    out[#out + 1] = f[3] or ''
    out[#out + 1] = leases
  end
end
return out
