--[[
  The relay's read of one partition's outbox of opened queries (qdue): the first entries by due
  time, whatever their due time (a job's delay is what is left of its debounce), each with its
  resubmissions (`n:<seq>`, part of its job's id). One relay of the partition reads at a time: the
  call takes or renews the relay lease; while another relay holds it, nothing is read.

  Input:
    KEYS[1] the outbox of opened queries (qdue)
    KEYS[2] the partition's relay lease
    ARGV[1] the partition's prefix (the coalescing hashes' keys are built from it, same tag)
    ARGV[2] how many entries to read at most
    ARGV[3] this relay's token
    ARGV[4] the lease's length, ms

  Output:
    a flat list, 3 entries per query, in due order: member, due score, resubmissions; an empty
    list while another relay holds the lease
]]
--- @include "includes/parse-due-member"
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[3] then return {} end
redis.call('SET', KEYS[2], ARGV[3], 'PX', tonumber(ARGV[4]))
local due = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1, 'WITHSCORES')
local out = {}
for i = 1, #due, 2 do
  local _, _, seq, qs = parseDueMember(ARGV[1], due[i])
  out[#out + 1] = due[i]
  out[#out + 1] = due[i + 1]
  out[#out + 1] = redis.call('HGET', qs, 'n:' .. seq) or '0'
end
return out
