--[[
  Many commits in one script (one slot): the commit of commit.lua for each item in turn, its KEYS
  and ARGV the item's slice of the call's, answering one reply per item. Before anything is
  written every item is checked: an item whose lookup entry moved (stale, retired), whose new
  patient was created meanwhile (conflict) or that has no record to run on (missing) makes the
  whole call write nothing and answer {'refused', i, reason} (the first such item, from 1), so
  that the caller can look it up again or refuse the batch.

  Input:
    KEYS[1...] the 11 keys of each item in turn, as commit.lua's KEYS[1..11]; then the 3 trace
      keys of each item in turn, as commit.lua's KEYS[12..14]
    ARGV[1] the item count
    ARGV[2...] the 24 arguments of each item in turn, as commit.lua's ARGV[1..24]; then the 8
      trace arguments of each item in turn, as commit.lua's ARGV[25..32] (a receipt '' writes none)

  Output:
    {'done', replies}, one reply of commit.lua per item, or {'refused', i, reason}
]]
--- @include "includes/commit-one"
--- @include "includes/commit-receipt"
-- How many KEYS and ARGV one commit takes, and its trace.
local COMMIT_KEYS = 11
local COMMIT_ARGS = 24
local TRACE_KEYS = 3
local TRACE_ARGS = 8
-- What the items before this one will have written by the time it runs: records, lookup entries.
local function precheck(keys, argv, will_exist, will_name)
  local named = false
  if argv[24] == '1' or argv[15] == '1' then
    named = will_name[keys[6]] or redis.call('HGET', keys[6], 'psid')
  end
  if argv[24] == '1' then
    if named ~= argv[7] then return 'stale' end
    if redis.call('EXISTS', keys[11]) == 1 then return 'retired' end
  end
  if argv[15] == '1' then
    if named and named ~= argv[7] then return 'conflict' end
    will_name[keys[6]] = argv[7]
  end
  if argv[1] == 'keep' and not will_exist[keys[1]]
    and redis.call('HEXISTS', keys[1], 'record') == 0 and redis.call('HEXISTS', keys[1], 'clinical') == 0 then
    if tonumber(argv[14]) == 0 or not redis.call('GET', keys[3]) then return 'missing' end
  end
  if argv[1] == 'put' then will_exist[keys[1]] = true end
  return nil
end
local count = tonumber(ARGV[1])
local items = {}
for i = 0, count - 1 do
  local k, a = {}, {}
  for j = 1, COMMIT_KEYS do k[j] = KEYS[i * COMMIT_KEYS + j] end
  for j = 1, COMMIT_ARGS do a[j] = ARGV[1 + i * COMMIT_ARGS + j] end
  local tk, ta = {}, {}
  for j = 1, TRACE_KEYS do tk[j] = KEYS[count * COMMIT_KEYS + i * TRACE_KEYS + j] end
  for j = 1, TRACE_ARGS do ta[j] = ARGV[1 + count * COMMIT_ARGS + i * TRACE_ARGS + j] end
  items[i + 1] = {k, a, tk, ta}
end
local will_exist, will_name = {}, {}
for i, item in ipairs(items) do
  local reason = precheck(item[1], item[2], will_exist, will_name)
  if reason then return {'refused', i, reason} end
end
local replies = {}
for i, item in ipairs(items) do
  -- Checked above, in this same script: the lookup entries cannot have moved since.
  item[2][24] = '0'
  replies[i] = commit_one(item[1], item[2])
  commitReceipt(replies[i], item[3], item[4], item[2][7])
end
return {'done', replies}
