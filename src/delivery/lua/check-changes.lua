--[[
  Compares each result with its key's last one and records it, in one step for a batch of results
  (of one partition), in the order given: a later result of the same key is compared with the
  earlier one. The event id is kept with the hash, so that the same event handed over again (a
  query retried after a crash) gets the same answer, not "unchanged" against itself, which
  only_changed would then drop. Each result's delivery trace (`<prefix>:trace:e:<event id>`, same
  hash tag) gives the feed that opened its query, and notes `unchanged_at` when a result equal to
  the last one is held back (only_changed).

  Input:
    KEYS[1...] each result's key: its last result (hash: hash, event_id, changed)
    ARGV[1] the partition's prefix (the delivery traces' keys are built from it)
    ARGV[2] the trace's retention, seconds, for unchanged results held back (0: none written:
      the trace is off, or only_changed does not hold them back)
    ARGV[3] now, epoch ms
    ARGV[4...] for each key in turn, two arguments: the result's content hash, then its event id

  Output:
    for each key, two entries: 1 when its result differs from the last one (or is the first),
    else 0; then the feed of its delivery trace ('' when none)
]]
--- @include "../../trace/lua/includes/trace-step"
local ttl = tonumber(ARGV[2])
local answers = {}
for i = 1, #KEYS do
  local hash, eventId = ARGV[2 * i + 2], ARGV[2 * i + 3]
  local last = redis.call('HMGET', KEYS[i], 'hash', 'event_id', 'changed')
  local changed
  if last[2] == eventId then
    changed = tonumber(last[3])
  else
    changed = 1
    if last[1] == hash then changed = 0 end
    redis.call('HSET', KEYS[i], 'hash', hash, 'event_id', eventId, 'changed', changed)
  end
  local dt = deliveryTraceKey(ARGV[1], eventId)
  if changed == 0 then traceSet(dt, ttl, 'unchanged_at', ARGV[3]) end
  answers[#answers + 1] = changed
  answers[#answers + 1] = redis.call('HGET', dt, 'feed') or ''
end
return answers
