--[[
  Ends an event's delivery (delivered or dead) and names the next in its key's line. The event's
  state is kept, without the event, as a marker for a while; it leaves the retrying deliveries (in
  the same step, so that the age of the oldest retry never counts an ended delivery); a line left
  empty drops its key from the keys with a line. The event's delivery trace notes the end
  (`webhook_state`, `webhook_ended_at`, `webhook_last_answer`) and gives the feed of its query.

  Input:
    KEYS[1] the event's delivery state (hash)
    KEYS[2] its key's line (sorted set of event ids, scored by hand-over order)
    KEYS[3] the keys whose line is not empty (set)
    KEYS[4] the retrying deliveries (sorted set of event ids, scored by first attempt, epoch ms)
    ARGV[1] the event id
    ARGV[2] its final state, 'delivered' or 'dead'
    ARGV[3] now, epoch ms
    ARGV[4] how long the marker is kept, seconds
    ARGV[5] the event's key, patient_service_id/ccsr_category
    ARGV[6] the partition's prefix (the delivery trace's key is built from it, same tag)
    ARGV[7] the trace's retention, seconds (0: the trace is off, nothing is written)
    ARGV[8] the last answer, for the trace: the HTTP status, or the error code (`ERR_*`)

  Output:
    {the id of the event now first in the line, or '' when the line is empty; the feed of the
    event's delivery trace, or ''}
]]
--- @include "../../trace/lua/includes/trace-step"
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'finished_at', ARGV[3])
redis.call('HDEL', KEYS[1], 'event')
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
local dt = deliveryTraceKey(ARGV[6], ARGV[1])
traceSet(dt, tonumber(ARGV[7]), 'webhook_state', ARGV[2], 'webhook_ended_at', ARGV[3], 'webhook_last_answer', ARGV[8])
local feed = redis.call('HGET', dt, 'feed') or ''
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not head then
  redis.call('SREM', KEYS[3], ARGV[5])
  return {'', feed}
end
return {head, feed}
