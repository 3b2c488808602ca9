--[[
  Empties one key's line: its waiting events (sealed payloads and state, and their place among the
  retrying deliveries) and the line itself, and drops the key from the keys with a line.

  Input:
    KEYS[1] the key's line (sorted set of event ids)
    KEYS[2] the keys whose line is not empty (set)
    KEYS[3] the retrying deliveries (sorted set of event ids, scored by first attempt, epoch ms)
    ARGV[1] the prefix of an event's delivery state key (the event id follows it)
    ARGV[2] the key, patient_service_id/ccsr_category

  Output:
    how many events the line held
]]
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, id in ipairs(ids) do
  redis.call('DEL', ARGV[1] .. id)
  redis.call('ZREM', KEYS[3], id)
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return #ids
