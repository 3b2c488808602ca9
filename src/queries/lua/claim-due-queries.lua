--[[
  Claims up to a batch of due queries of one partition's due set of new queries (qdue) and reads,
  in the same step, everything their submission needs: the claimed triggers, the newest submitted
  seq, a remote job an earlier attempt stored, the attempt and lease counts, the opt-out, the
  record's sealed fields and the sealed local id. Nothing is claimed while the partition is held
  (a rate limit) or paused (a refused API key).

  A due query whose triggers are still pending has them claimed (moved to `c:<seq>`); one that
  has neither claimed nor pending triggers (or is not a query's member) leaves the set. Each
  claimed query is leased (its score moves to the lease's end), keeps the id it was given or
  takes the next of the new ids (`i:<seq>`), and counts one more lease (`l:<seq>`).

  The keys it reads besides its own (`<prefix>:qs:<psid>:<category>`, `<prefix>:rec:<psid>`,
  `<prefix>:optout:<psid>`, `<prefix>:xwr:<psid>`) share the partition's hash tag.

  Input:
    KEYS[1] the due set of new queries (qdue)
    KEYS[2] the partition's rate-limit hold on submissions (qsubhold)
    KEYS[3] the partition's pause of submissions (a refused API key)
    ARGV[1] now, epoch ms: members scored up to it are due
    ARGV[2] how many to claim at most
    ARGV[3] the lease's end, epoch ms
    ARGV[4] the partition's prefix
    ARGV[5...] the ids for new queries, one per argument, taken in order

  Output:
    a flat list, 15 entries per claimed query: member, due score, triggers JSON, newest
    submitted seq ('0' when none), stored remote job JSON (or ''), resubmissions, failed
    attempts, query id, leases, opted out (1 or 0), record version, sealed record, clinical
    fields, record updated_at (each '' when none), sealed local id (or ''); an empty list while
    held or paused
]]
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return {} end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local p = ARGV[4]
local out = {}
local n = 0
for i = 1, #due, 2 do
  local member = due[i]
  local psid, cat, seq = string.match(member, '^(.*)|([^|]*)|(%d+)$')
  local claimed = false
  local qs = ''
  if psid then
    qs = p .. ':qs:' .. psid .. ':' .. cat
    claimed = redis.call('HGET', qs, 'c:' .. seq)
    if not claimed and redis.call('HGET', qs, 'pending') == seq then
      local t = redis.call('HMGET', qs, 'p_events', 'p_count', 'p_first_at', 'p_last_at')
      claimed = cjson.encode({eventIds = cjson.decode(t[1]), count = tonumber(t[2]), firstAt = t[3], lastAt = t[4]})
      redis.call('HDEL', qs, 'pending', 'p_events', 'p_count', 'p_first_at', 'p_last_at')
      redis.call('HSET', qs, 'c:' .. seq, claimed)
    end
  end
  if not claimed then
    redis.call('ZREM', KEYS[1], member)
  else
    n = n + 1
    redis.call('ZADD', KEYS[1], 'XX', ARGV[3], member)
    redis.call('HSETNX', qs, 'i:' .. seq, ARGV[4 + n])
    local f = redis.call('HMGET', qs, 'submitted', 'r:' .. seq, 'n:' .. seq, 'f:' .. seq, 'i:' .. seq)
    local leases = redis.call('HINCRBY', qs, 'l:' .. seq, 1)
    local rec = redis.call('HMGET', p .. ':rec:' .. psid, 'version', 'record', 'clinical', 'updated_at')
    out[#out + 1] = member
    out[#out + 1] = due[i + 1]
    out[#out + 1] = claimed
    out[#out + 1] = f[1] or '0'
    out[#out + 1] = f[2] or ''
    out[#out + 1] = f[3] or '0'
    out[#out + 1] = f[4] or '0'
    out[#out + 1] = f[5]
    out[#out + 1] = leases
    out[#out + 1] = redis.call('EXISTS', p .. ':optout:' .. psid)
    out[#out + 1] = rec[1] or ''
    out[#out + 1] = rec[2] or ''
    out[#out + 1] = rec[3] or ''
    out[#out + 1] = rec[4] or ''
    out[#out + 1] = redis.call('GET', p .. ':xwr:' .. psid) or ''
  end
end
return out
