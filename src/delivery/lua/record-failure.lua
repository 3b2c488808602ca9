--[[
  Records a failed attempt of a pending event that will be retried: its last error, and the event
  among the retrying deliveries, scored by its first attempt (kept as it is when already there).
  An event that is no longer pending (purged, or ended by another job meanwhile) is left alone, so
  that nothing is written for it and no retry is counted that nobody would end. The event's
  delivery trace notes the answer (`webhook_last_answer`).

  Input:
    KEYS[1] the event's delivery state (hash)
    KEYS[2] the retrying deliveries (sorted set of event ids, scored by first attempt, epoch ms)
    ARGV[1] the event id
    ARGV[2] the last error (JSON)
    ARGV[3] the partition's prefix (the delivery trace's key is built from it, same tag)
    ARGV[4] the trace's retention, seconds (0: the trace is off, nothing is written)
    ARGV[5] the answer, for the trace: the HTTP status, or the error code (`ERR_*`)

  Output:
    1 when recorded, 0 when the event is not pending
]]
--- @include "../../trace/lua/includes/trace-step"
local s = redis.call('HMGET', KEYS[1], 'state', 'first_attempt_at')
if s[1] ~= 'pending' or not s[2] then return 0 end
redis.call('HSET', KEYS[1], 'last_error', ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', s[2], ARGV[1])
traceSet(deliveryTraceKey(ARGV[3], ARGV[1]), tonumber(ARGV[4]), 'webhook_last_answer', ARGV[5])
return 1
