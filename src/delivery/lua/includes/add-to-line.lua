--[[
  Puts an event at the end of its key's line as pending, with no attempt made yet: its state
  holds the key, the sealed event, the job that delivers it and when it was handed over; the line
  is scored by the global sequence (hand-over order), and the key is noted as having a line.
]]
local function addToLine(eventKey, lineKey, seqKey, keysKey, eventId, queryKey, event, job, now)
  local seq = redis.call('INCR', seqKey)
  redis.call('HSET', eventKey, 'key', queryKey, 'event', event, 'state', 'pending', 'job', job,
    'enqueued_at', now, 'attempts', 0)
  redis.call('ZADD', lineKey, seq, eventId)
  redis.call('SADD', keysKey, queryKey)
end
