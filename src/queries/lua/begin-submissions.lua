--[[
  Before the submissions of a batch are sent: for each, 'stored' and the remote job when an
  earlier attempt of this (re)submission stored one (never submit twice), else marks the attempt
  begun (`s:<seq>`, the resubmission count) and answers 'interrupted' when an earlier attempt
  had begun without storing its answer (its worker died during the POST), or 'new'.

  Input:
    KEYS[1] (routing only) the due set of new queries (qdue): it sends the call to the
      partition's slot, where the coalescing hashes (keys built from the prefix) live too
    ARGV[1] the partition's prefix
    ARGV[2] the batch, JSON [{m, n}]: each query's member and its resubmissions

  Output:
    a flat list, 2 entries per query, in the batch's order: the state ('new', 'interrupted' or
    'stored'), then the stored remote job JSON ('' unless stored)
]]
--- @include "includes/parse-due-member"
local ops = cjson.decode(ARGV[2])
local out = {}
for _, op in ipairs(ops) do
  local _, _, seq, qs = parseDueMember(ARGV[1], op.m)
  local remote = redis.call('HGET', qs, 'r:' .. seq)
  local state = 'new'
  if remote and tostring(cjson.decode(remote).resubmits) == tostring(op.n) then
    state = 'stored'
  else
    remote = ''
    local begun = redis.call('HGET', qs, 's:' .. seq)
    redis.call('HSET', qs, 's:' .. seq, op.n)
    if begun == tostring(op.n) then state = 'interrupted' end
  end
  out[#out + 1] = state
  out[#out + 1] = remote
end
return out
