--[[
  Records one message receipt (docs/message-trace.md), in the script that answers the message.
  recordReceipt(receipts_key, patient_key, recent_key, control_id, receipt_json, ttl, max_receipts,
  now_ms):
  - receipts_key: the control id's receipts (list, `P:trace:m:<control id>`): the receipt JSON
    goes last, and the list keeps its last max_receipts
  - patient_key: the patient's control ids (sorted set, `P:trace:p:<psid>`), or '' when the
    patient is not known
  - recent_key: the partition's recent control ids (sorted set, `P:trace:recent`), at most
    RECENT_CAP members
  The control id is scored now_ms in both sets; members older than the retention (ttl, s) go, and
  every key written expires ttl seconds after this write.
]]
--- @include "trace-keys"
local function recordReceipt(receipts_key, patient_key, recent_key, control_id, receipt_json, ttl, max_receipts, now_ms)
  local RECENT_CAP = 10000
  local oldest = tonumber(now_ms) - tonumber(ttl) * 1000
  redis.call('RPUSH', receipts_key, receipt_json)
  redis.call('LTRIM', receipts_key, -tonumber(max_receipts), -1)
  touchTrace(receipts_key, ttl)
  if patient_key ~= '' then
    redis.call('ZADD', patient_key, now_ms, control_id)
    redis.call('ZREMRANGEBYSCORE', patient_key, '-inf', '(' .. oldest)
    touchTrace(patient_key, ttl)
  end
  redis.call('ZADD', recent_key, now_ms, control_id)
  redis.call('ZREMRANGEBYSCORE', recent_key, '-inf', '(' .. oldest)
  redis.call('ZREMRANGEBYRANK', recent_key, 0, -RECENT_CAP - 1)
  touchTrace(recent_key, ttl)
end
