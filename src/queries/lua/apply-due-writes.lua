--[[
  Writes back the outcomes of claimed queries of one partition's due set of new queries (qdue):
  - 'end' (ended, superseded, stale): the query is forgotten (out of the due set, its per-seq
    fields deleted);
  - a query whose claim is gone meanwhile (no `c:<seq>`) just leaves the due set;
  - 'retry' (a transient failure): one more failed attempt (`f:<seq>`), its begun submission
    (`s:<seq>`) and leases (`l:<seq>`) cleared, due again at `at`;
  - 'later' (held for a rate limit or a refused key, waiting for a birth date): its leases
    cleared, due again at `at` without an attempt counted; with `a` (an answer came that created
    no job) its begun submission is cleared too.

  Input:
    KEYS[1] the due set of new queries (qdue)
    ARGV[1] the partition's prefix (the coalescing hashes' keys are built from it, same tag)
    ARGV[2] the outcomes, JSON [{m, k, at?, a?}]: member, kind ('end', 'retry' or 'later'),
      when due again (epoch ms), abandoned (1)

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
  elseif redis.call('HEXISTS', qs, 'c:' .. seq) == 0 then
    redis.call('ZREM', KEYS[1], op.m)
  else
    if op.k == 'retry' then redis.call('HINCRBY', qs, 'f:' .. seq, 1) end
    if op.k == 'retry' or op.a then redis.call('HDEL', qs, 's:' .. seq) end
    redis.call('HDEL', qs, 'l:' .. seq)
    redis.call('ZADD', KEYS[1], 'XX', op.at, op.m)
  end
end
return #ops
