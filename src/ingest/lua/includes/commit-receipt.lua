--[[
  The message trace of one commit (docs/message-trace.md): once commit_one answered a final
  outcome (ok, unchanged, duplicate), the message's receipt is completed from it and recorded, and
  each query it opened or joined has its trace hash written (opened_at and feed the first time,
  messages counted, and tp: the traceparent of the ingest span of the first message that had one,
  which the workers' spans continue). Outcomes the caller retries or refuses (stale, retired, conflict, missing)
  write nothing.

  commitReceipt(result, keys, argv, psid):
  - result: commit_one's answer
  - keys: {receipts list, patient index, recent set} (see recordReceipt)
  - argv: {receipt head JSON ('' for no receipt: nothing is written), control id, feed, ttl (s),
    max receipts, now (epoch ms), partition prefix, traceparent ('' for none: tracing off or the
    trace not sampled)}
  - psid: the patient service id
  The receipt head is a JSON object without state, psid, version and queries: they are appended.
]]
--- @include "../../../trace/lua/includes/record-receipt"
local function commitReceipt(result, keys, argv, psid)
  local head = argv[1]
  if head == '' then return end
  local status = result[1]
  local state
  local version = 'null'
  local queries = {}
  if status == 'ok' then
    version = tostring(result[2])
    local scheduled = result[4]
    for i = 1, #scheduled, 3 do
      local category, seq = scheduled[i], scheduled[i + 1]
      local flag = 'false'
      if tonumber(scheduled[i + 2]) == 1 then flag = 'true' end
      table.insert(queries, '{"category":' .. cjson.encode(category) .. ',"seq":' .. tostring(seq) ..
        ',"coalesced":' .. flag .. '}')
      local q_key = queryTraceKey(argv[7], psid, category, seq)
      redis.call('HSETNX', q_key, 'opened_at', argv[6])
      redis.call('HSETNX', q_key, 'feed', argv[3])
      redis.call('HINCRBY', q_key, 'messages', 1)
      if argv[8] ~= nil and argv[8] ~= '' then redis.call('HSETNX', q_key, 'tp', argv[8]) end
      touchTrace(q_key, argv[4])
    end
    if #queries > 0 then state = 'queued' else state = 'stored' end
  elseif status == 'unchanged' then
    state = 'unchanged'
    version = tostring(result[2])
  elseif status == 'duplicate' then
    state = 'duplicate'
  else
    return
  end
  local receipt = string.sub(head, 1, -2) .. ',"state":"' .. state .. '","psid":' .. cjson.encode(psid) ..
    ',"version":' .. version .. ',"queries":[' .. table.concat(queries, ',') .. ']}'
  recordReceipt(keys[1], keys[2], keys[3], argv[2], receipt, argv[4], argv[5], argv[6])
end
