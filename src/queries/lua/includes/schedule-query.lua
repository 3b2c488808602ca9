--[[
  Shared by the scripts that open queries: attaches one trigger to the open query of a (patient,
  category), opening a new one (the next seq) when none is open, and puts a newly opened query in
  the due set. Returns seq, coalesced (1 when the update joined an open query).

  schedule_query(qs_key, outbox_key, psid, category, event_id, at_iso, due_ms, max_ids)
]]
local function schedule_query(qs_key, outbox_key, psid, category, event_id, at, due, max_ids)
  local pending = redis.call('HGET', qs_key, 'pending')
  local coalesced = 1
  if not pending then
    pending = tostring(redis.call('HINCRBY', qs_key, 'seq', 1))
    redis.call('HSET', qs_key, 'pending', pending, 'p_first_at', at, 'p_count', 0, 'p_events', '[]')
    redis.call('ZADD', outbox_key, 'NX', due, psid .. '|' .. category .. '|' .. pending)
    coalesced = 0
  end
  local events = cjson.decode(redis.call('HGET', qs_key, 'p_events'))
  table.insert(events, event_id)
  if #events > max_ids then table.remove(events, 1) end
  redis.call('HSET', qs_key, 'p_events', cjson.encode(events), 'p_last_at', at)
  redis.call('HINCRBY', qs_key, 'p_count', 1)
  return pending, coalesced
end
