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

  Input:
    KEYS[1] the outbox of opened queries (qdue)
    ARGV[1] the partition's prefix (the coalescing hashes' keys are built from it, same tag)
    ARGV[2] the outcomes, JSON [{m, k, a?}]: member, kind ('end', 'retry' or 'later'),
      abandoned (1)

  Output:
    the number of outcomes
]]
--- @include "includes/parse-due-member"
--- @include "includes/forget-due-query"
local ops = cjson.decode(ARGV[2])
for _, op in ipairs(ops) do
  local _, _, seq, qs = parseDueMember(ARGV[1], op.m)
  if op.k == 'end' then
    forgetDueQuery(KEYS[1], qs, op.m, seq)
  elseif redis.call('HEXISTS', qs, 'c:' .. seq) == 1 then
    if op.k == 'retry' then redis.call('HINCRBY', qs, 'f:' .. seq, 1) end
    if op.k == 'retry' or op.a then redis.call('HDEL', qs, 's:' .. seq) end
    redis.call('HDEL', qs, 'l:' .. seq)
  end
end
return #ops
