--[[
  Starts an attempt, but only for the job that owns the event and only when the event is first in
  its key's line. The attempt is counted before the request is sent, so that a crash mid-request
  still counts, in the event's delivery trace too (`webhook_attempts`, `webhook_first_at`,
  `webhook_last_at`), and the `traceparent` that the event's delivery trace keeps (`tp`: the span
  of its query's submission, or of its message's ingest) is read for the attempt's span.

  Input:
    KEYS[1] the event's delivery state (hash)
    KEYS[2] its key's line (sorted set of event ids, scored by hand-over order)
    ARGV[1] the event id
    ARGV[2] the id of the job that asks
    ARGV[3] now, epoch ms
    ARGV[4] the partition's prefix (the delivery trace's key is built from it, same tag)
    ARGV[5] the trace's retention, seconds (0: the trace is off, nothing is written)

  Output:
    {'go', sealed event, enqueued_at, attempt number, first_attempt_at, traceparent or ''} when
    the attempt starts;
    {'waiting', id first in the line or ''} when another event goes first; {'stale'} when another
    job owns the event; {'missing'} when there is no such event; else {its state}
]]
--- @include "../../trace/lua/includes/trace-step"
local s = redis.call('HMGET', KEYS[1], 'state', 'job', 'key', 'event', 'enqueued_at', 'first_attempt_at')
if not s[1] then return {'missing'} end
if s[1] ~= 'pending' then return {s[1]} end
if s[2] ~= ARGV[2] then return {'stale'} end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if head ~= ARGV[1] then return {'waiting', head or ''} end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
local first = s[6] or ARGV[3]
redis.call('HSET', KEYS[1], 'first_attempt_at', first, 'last_attempt_at', ARGV[3])
local ttl = tonumber(ARGV[5])
local dt = deliveryTraceKey(ARGV[4], ARGV[1])
traceSet(dt, ttl, 'webhook_attempts', attempts, 'webhook_first_at', first, 'webhook_last_at', ARGV[3])
local tp = ttl > 0 and redis.call('HGET', dt, 'tp') or ''
return {'go', s[4], s[5], tostring(attempts), first, tp}
