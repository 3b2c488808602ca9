--[[
  Claims one query for its submission (a job of the partition's concordance-queries queue is
  being processed) and reads, in the same step, everything the submission needs: the claimed
  triggers, the newest submitted seq, a remote job an earlier attempt stored, the attempt and
  lease counts, the opt-out, the record's sealed fields and the sealed local id.

  A query whose triggers are still pending has them claimed (moved to `c:<seq>`); one that has
  neither claimed nor pending triggers is stale (it ended, or its patient was purged) and nothing
  is written. A claimed query keeps the id it was given or takes the new one (`i:<seq>`), and
  counts one more lease (`l:<seq>`: more than one since its last written outcome means a worker
  died with it).

  The keys it reads besides its own (`<prefix>:rec:<psid>`, `<prefix>:optout:<psid>`,
  `<prefix>:xwr:<psid>`) share the partition's hash tag, as do the message trace's: the claim
  counts one more run (`attempts`) and notes the first claim (`claimed_at`) in the query's trace,
  reads the feed that opened it and the `traceparent` of the message's ingest span (`tp`, kept only
  when that trace is sampled), and copies both into the trace of its result event (its id), so that
  the delivery side counts the event by feed and an event that ends here is delivered in the
  message's trace. A stale query whose trace did not end yet
  ends there `stale`; a query without a trace (purged) gets none.

  Input:
    KEYS[1] the coalescing state of the (patient, category) (qs)
    ARGV[1] the partition's prefix
    ARGV[2] the patient service id
    ARGV[3] the query's seq
    ARGV[4] the id the query takes if it has none yet (its result event's id)
    ARGV[5] the query's category
    ARGV[6] the trace's retention, seconds (0: the trace is off, nothing is written)
    ARGV[7] now, epoch ms

  Output:
    an empty list for a stale query, else 15 entries: triggers JSON, newest submitted seq ('0'
    when none), stored remote job JSON (or ''), resubmissions, failed attempts, query id, leases,
    opted out (1 or 0), record version, sealed record, clinical fields, record updated_at (each
    '' when none), sealed local id (or ''), the feed that opened the query (or ''), the
    `traceparent` of the message's ingest span (or '')
]]
--- @include "../../trace/lua/includes/trace-step"
local qs = KEYS[1]
local p = ARGV[1]
local psid = ARGV[2]
local seq = ARGV[3]
local ttl = tonumber(ARGV[6])
local qt = queryTraceKey(p, psid, ARGV[5], seq)
local claimed = redis.call('HGET', qs, 'c:' .. seq)
if not claimed then
  if redis.call('HGET', qs, 'pending') ~= seq then
    if ttl > 0 and redis.call('EXISTS', qt) == 1 and redis.call('HEXISTS', qt, 'ended_at') == 0 then
      traceSet(qt, ttl, 'ended_at', ARGV[7], 'outcome', 'stale')
    end
    return {}
  end
  local t = redis.call('HMGET', qs, 'p_events', 'p_count', 'p_first_at', 'p_last_at')
  claimed = cjson.encode({eventIds = cjson.decode(t[1]), count = tonumber(t[2]), firstAt = t[3], lastAt = t[4]})
  redis.call('HDEL', qs, 'pending', 'p_events', 'p_count', 'p_first_at', 'p_last_at')
  redis.call('HSET', qs, 'c:' .. seq, claimed)
end
redis.call('HSETNX', qs, 'i:' .. seq, ARGV[4])
local f = redis.call('HMGET', qs, 'submitted', 'r:' .. seq, 'n:' .. seq, 'f:' .. seq, 'i:' .. seq)
local leases = redis.call('HINCRBY', qs, 'l:' .. seq, 1)
traceIncr(qt, ttl, 'attempts')
traceSetNx(qt, ttl, 'claimed_at', ARGV[7])
local t = redis.call('HMGET', qt, 'feed', 'tp')
local feed = t[1] or ''
local tp = t[2] or ''
if feed ~= '' then traceSet(deliveryTraceKey(p, f[5]), ttl, 'feed', feed) end
if tp ~= '' then traceSet(deliveryTraceKey(p, f[5]), ttl, 'tp', tp) end
local rec = redis.call('HMGET', p .. ':rec:' .. psid, 'version', 'record', 'clinical', 'updated_at')
return {
  claimed, f[1] or '0', f[2] or '', f[3] or '0', f[4] or '0', f[5], leases,
  redis.call('EXISTS', p .. ':optout:' .. psid),
  rec[1] or '', rec[2] or '', rec[3] or '', rec[4] or '',
  redis.call('GET', p .. ':xwr:' .. psid) or '',
  feed, tp
}
