--[[
  Forgets a query that ended (or was superseded, or went stale): its member leaves the due set
  `dueKey`, and its per-seq fields leave its coalescing hash `qs`: `c:` its claimed triggers,
  `s:` its begun submission, `r:` its remote job, `l:` its leases, `f:` its failed attempts,
  `n:` its resubmissions and `i:` its id.
]]
local function forgetDueQuery(dueKey, qs, member, seq)
  redis.call('ZREM', dueKey, member)
  redis.call('HDEL', qs, 'c:' .. seq, 's:' .. seq, 'r:' .. seq, 'l:' .. seq, 'f:' .. seq, 'n:' .. seq, 'i:' .. seq)
end
