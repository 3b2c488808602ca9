--[[
  Compares each result with its key's last one and records it, in one step for a batch of results
  (of one partition), in the order given: a later result of the same key is compared with the
  earlier one. The event id is kept with the hash, so that the same event handed over again (a
  query retried after a crash) gets the same answer, not "unchanged" against itself, which
  only_changed would then drop.

  Input:
    KEYS[1...] each result's key: its last result (hash: hash, event_id, changed)
    ARGV[1...] for each key in turn, two arguments: the result's content hash, then its event id

  Output:
    for each key, 1 when its result differs from the last one (or is the first), else 0
]]
local answers = {}
for i = 1, #KEYS do
  local hash, eventId = ARGV[2 * i - 1], ARGV[2 * i]
  local last = redis.call('HMGET', KEYS[i], 'hash', 'event_id', 'changed')
  if last[2] == eventId then
    answers[i] = tonumber(last[3])
  else
    local changed = 1
    if last[1] == hash then changed = 0 end
    redis.call('HSET', KEYS[i], 'hash', hash, 'event_id', eventId, 'changed', changed)
    answers[i] = changed
  end
end
return answers
