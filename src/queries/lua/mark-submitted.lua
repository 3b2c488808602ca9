--[[
  Records that query seq has a remote job in the same step that learnt it; newer submitted queries
  supersede older ones. The query leaves the due set of new queries and its first poll goes in
  the due set of polls. The query's trace notes when it was submitted and the remote job's id; a
  remote job that carries the `traceparent` of its submission's span (`tp`, tracing on) gives it
  to the trace of the query's result event, before any poll can end the query and hand the event
  over, so that its delivery continues the trace.

  Input:
    KEYS[1] the coalescing state of the (patient, category) (qs)
    KEYS[2] the due set of polls of the partition (qpoll)
    KEYS[3] the due set of new queries of the partition (qdue)
    KEYS[4] the query's trace (hash)
    KEYS[5] the trace of its result event (hash; written only with a `tp` and a `queryId` in the
      remote job)
    ARGV[1] the seq of the query
    ARGV[2] the remote job, JSON
    ARGV[3] when the first poll is due, epoch ms
    ARGV[4] the query's member in both due sets (psid|category|seq)
    ARGV[5] the trace's retention, seconds (0: the trace is off, nothing is written)
    ARGV[6] when the service answered the submission, epoch ms

  Output:
    the seq submitted before this one (0 when none)
]]
--- @include "../../trace/lua/includes/trace-step"
local current = tonumber(redis.call('HGET', KEYS[1], 'submitted') or '0')
if tonumber(ARGV[1]) > current then redis.call('HSET', KEYS[1], 'submitted', ARGV[1]) end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[1], 's:' .. ARGV[1], 'l:' .. ARGV[1], 'f:' .. ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[4])
local remote = cjson.decode(ARGV[2])
traceSet(KEYS[4], tonumber(ARGV[5]), 'submitted_at', ARGV[6], 'remote_job_id', remote.remoteJobId)
if type(remote.tp) == 'string' and type(remote.queryId) == 'string' then traceSet(KEYS[5], tonumber(ARGV[5]), 'tp', remote.tp) end
return current
