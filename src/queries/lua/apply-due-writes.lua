--[[
  Writes back the outcomes of queries claimed for their submission that were not submitted:
  - 'end' (ended, superseded, stale): the query is forgotten (out of the outbox if it is still
    there, its per-seq fields deleted);
  - 'retry' (a transient failure; its job is retried with backoff): one more failed attempt
    (`f:<seq>`), its begun submission (`s:<seq>`) and runs (`l:<seq>`) cleared;
  - 'later' (held for a rate limit or a refused key, waiting for a birth date; its job runs
    again later): its runs cleared, no attempt counted; with `a` (an answer came that created no
    job) its begun submission is cleared too.
  A query whose claim is gone meanwhile (no `c:<seq>`: it ended elsewhere) is left as it is.
  The query's trace notes an end (`ended_at`, `outcome`, `error_code`, `event_id`) and a retry's
  error code (`last_error`), unless it is gone (purged since the claim).

  Input:
    KEYS[1] the outbox of opened queries (qdue)
    ARGV[1] the partition's prefix (the coalescing hashes' keys are built from it, same tag)
    ARGV[2] the outcomes, JSON [{m, k, a?, o?, e?, ev?}]: member, kind ('end', 'retry' or
      'later'), abandoned (1), an end's outcome, error code (an end's, a retry's), event id
    ARGV[3] the trace's retention, seconds (0: the trace is off, nothing is written)
    ARGV[4] now, epoch ms

  Output:
    the number of outcomes
]]
--- @include "includes/parse-due-member"
--- @include "includes/forget-due-query"
--- @include "../../trace/lua/includes/trace-step"
local ttl = tonumber(ARGV[3])
local ops = cjson.decode(ARGV[2])
for _, op in ipairs(ops) do
  local psid, cat, seq, qs = parseDueMember(ARGV[1], op.m)
  local qt = queryTraceKey(ARGV[1], psid, cat, seq)
  -- The claim wrote the trace (the trace on): one gone since (a purge) is not written again.
  local traced = ttl > 0 and redis.call('EXISTS', qt) == 1
  if op.k == 'end' then
    forgetDueQuery(KEYS[1], qs, op.m, seq)
    if op.o and traced then
      traceSet(qt, ttl, 'ended_at', ARGV[4], 'outcome', op.o)
      if op.e then traceSet(qt, ttl, 'error_code', op.e) end
      if op.ev then traceSet(qt, ttl, 'event_id', op.ev) end
    end
  elseif redis.call('HEXISTS', qs, 'c:' .. seq) == 1 then
    if op.k == 'retry' then
      redis.call('HINCRBY', qs, 'f:' .. seq, 1)
      if op.e and traced then traceSet(qt, ttl, 'last_error', op.e) end
    end
    if op.k == 'retry' or op.a then redis.call('HDEL', qs, 's:' .. seq) end
    redis.call('HDEL', qs, 'l:' .. seq)
  end
end
return #ops
