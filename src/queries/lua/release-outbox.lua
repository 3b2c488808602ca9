--[[
  Removes from one partition's outbox of opened queries (qdue) the entries the relay has added to
  the partition's queue. An entry whose due score changed since it was read (the query was put
  back for a resubmission meanwhile) stays, for the next read. Each added entry's query trace
  notes when its submission job was queued and the job's id (docs/message-trace.md).

  Input:
    KEYS[1] the outbox of opened queries (qdue)
    ARGV[1] the partition's prefix (the query traces' keys are built from it, same tag)
    ARGV[2] the trace's retention, seconds (0: the trace is off, nothing is written)
    ARGV[3] when the jobs were added, epoch ms
    ARGV[4...] member, due score as read, job id: triples

  Output:
    the number of entries removed
]]
--- @include "includes/parse-due-member"
--- @include "../../trace/lua/includes/trace-step"
local ttl = tonumber(ARGV[2])
local removed = 0
for i = 4, #ARGV, 3 do
  local member = ARGV[i]
  if redis.call('ZSCORE', KEYS[1], member) == ARGV[i + 1] then
    removed = removed + redis.call('ZREM', KEYS[1], member)
  end
  local psid, cat, seq = parseDueMember(ARGV[1], member)
  traceSet(queryTraceKey(ARGV[1], psid, cat, seq), ttl, 'queued_at', ARGV[3], 'job_id', ARGV[i + 2])
end
return removed
