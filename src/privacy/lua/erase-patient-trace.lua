--[[
  Removes one patient's message trace in its partition (a purge or an opt-out;
  docs/message-trace.md): its receipts under each control id its index names (only the receipts
  of this patient: another patient's under the same control id stay), the index, the control ids
  left without receipts from the partition's recent set, and the given query traces with the
  delivery trace their `event_id` names. Lists and sets that keep members keep their expiry.

  Input:
    KEYS[1] the patient's index, `P:trace:p:<psid>` (zset of control ids)
    KEYS[2] the partition's recent control ids, `P:trace:recent` (zset)
    KEYS[3...] the patient's query traces, `P:trace:q:<psid>:<cat>:<seq>` (hashes; may be none)
    ARGV[1] the partition's prefix
    ARGV[2] the patient's service id

  Output:
    { receipts removed, control ids dropped from the recent set, query traces deleted,
      delivery traces deleted, index deleted (0/1) }
]]
--- @include "../../trace/lua/includes/trace-keys"

local prefix = ARGV[1]
local psid = ARGV[2]
local receipts, recent, queries, deliveries = 0, 0, 0, 0

for _, controlId in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local list = prefix .. ':trace:m:' .. controlId
  for _, entry in ipairs(redis.call('LRANGE', list, 0, -1)) do
    local ok, receipt = pcall(cjson.decode, entry)
    if ok and type(receipt) == 'table' and receipt['psid'] == psid then
      receipts = receipts + redis.call('LREM', list, 0, entry)
    end
  end
  if redis.call('EXISTS', list) == 0 then
    recent = recent + redis.call('ZREM', KEYS[2], controlId)
  end
end

for i = 3, #KEYS do
  local eventId = redis.call('HGET', KEYS[i], 'event_id')
  if eventId then
    deliveries = deliveries + redis.call('DEL', deliveryTraceKey(prefix, eventId))
  end
  queries = queries + redis.call('DEL', KEYS[i])
end

local index = redis.call('DEL', KEYS[1])
return { receipts, recent, queries, deliveries, index }
