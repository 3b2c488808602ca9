--[[
  Writes back a batch of outcomes of polls leased from one partition's due set of polls (qpoll):
  - 'end': the query is forgotten (out of the poll set, its claim, submission, remote job and
    other per-seq fields deleted); with `lat`, its job's latency (ms) is pushed onto the
    category's recent latencies (`<prefix>:qlat:<category>`), of which the newest are kept;
  - 'resubmit': the poll leaves the set, its leases are cleared, its resubmissions (`n:<seq>`)
    set to `n`, and the query goes back to the due set of new queries, due at `at`;
  - 'again' (polled, or held): due again at `at`, leases cleared, with `r` its remote job's
    updated state; a poll whose remote job is gone meanwhile (a purge) is not brought back,
    it just leaves the set.
  The query's trace counts each poll made (`p`: `polls`, `last_poll_at`) and notes an end (`o`:
  `ended_at`, `outcome`, `error_code`, `event_id`), and the result event's trace gets the query's
  `feed`, so that the delivery side counts the event by feed.

  Input:
    KEYS[1] the due set of polls (qpoll)
    KEYS[2] the due set of new queries (qdue)
    ARGV[1] the partition's prefix (the coalescing hashes' and latency lists' keys are built
      from it, same tag)
    ARGV[2] the outcomes, JSON [{m, k, at?, r?, lat?, n?, p?, t?, o?, e?, ev?}]: member, kind
      ('end', 'resubmit' or 'again'), when due again (epoch ms), remote job JSON, latency (ms),
      resubmissions, when the poll was made (epoch ms), an end's time (epoch ms), outcome, error
      code, event id
    ARGV[3] how many recent latencies to keep per category
    ARGV[4] the trace's retention, seconds (0: the trace is off, nothing is written)

  Output:
    the number of outcomes
]]
--- @include "includes/parse-due-member"
--- @include "includes/forget-due-query"
--- @include "../../trace/lua/includes/trace-step"
local ttl = tonumber(ARGV[4])
local ops = cjson.decode(ARGV[2])
for _, op in ipairs(ops) do
  local psid, cat, seq, qs = parseDueMember(ARGV[1], op.m)
  local qt = queryTraceKey(ARGV[1], psid, cat, seq)
  if op.p and redis.call('HEXISTS', qs, 'r:' .. seq) == 1 then
    traceIncr(qt, ttl, 'polls')
    traceSet(qt, ttl, 'last_poll_at', op.p)
  end
  if op.k == 'end' and op.o and redis.call('HEXISTS', qs, 'r:' .. seq) == 1 then
    traceSet(qt, ttl, 'ended_at', op.t, 'outcome', op.o)
    if op.e then traceSet(qt, ttl, 'error_code', op.e) end
    if op.ev then
      traceSet(qt, ttl, 'event_id', op.ev)
      local feed = ttl > 0 and redis.call('HGET', qt, 'feed')
      if feed then traceSet(deliveryTraceKey(ARGV[1], op.ev), ttl, 'feed', feed) end
    end
  end
  if op.k == 'end' then
    forgetDueQuery(KEYS[1], qs, op.m, seq)
    if op.lat then
      local lk = ARGV[1] .. ':qlat:' .. cat
      redis.call('LPUSH', lk, op.lat)
      redis.call('LTRIM', lk, 0, tonumber(ARGV[3]) - 1)
    end
  elseif op.k == 'resubmit' then
    redis.call('ZREM', KEYS[1], op.m)
    redis.call('HDEL', qs, 'l:' .. seq)
    redis.call('HSET', qs, 'n:' .. seq, op.n)
    redis.call('ZADD', KEYS[2], op.at, op.m)
  elseif redis.call('HEXISTS', qs, 'r:' .. seq) == 1 then
    if op.r then redis.call('HSET', qs, 'r:' .. seq, op.r) end
    redis.call('HDEL', qs, 'l:' .. seq)
    redis.call('ZADD', KEYS[1], 'XX', op.at, op.m)
  else
    redis.call('ZREM', KEYS[1], op.m)
  end
end
return #ops
