--[[
  Puts a dead-lettered event back at the end of its key's line with a fresh clock and a new job
  id (the old job may still be in the queue's bookkeeping, and an existing id makes add a no-op).
  An event still pending or already delivered is left as it is.

  Input:
    KEYS[1] the event's delivery state (hash)
    KEYS[2] its key's line (sorted set of event ids, scored by hand-over order)
    KEYS[3] the global hand-over sequence
    KEYS[4] the keys whose line is not empty (set)
    ARGV[1] the event id
    ARGV[2] the event's key, patient_service_id/ccsr_category
    ARGV[3] the event, its patient_id sealed (JSON)
    ARGV[4] now, epoch ms

  Output:
    {'requeued', new job id}, or {'pending' | 'delivered', job id} when left as it was
]]
--- @include "includes/add-to-line"

local state = redis.call('HGET', KEYS[1], 'state')
if state == 'pending' or state == 'delivered' then return {state, redis.call('HGET', KEYS[1], 'job')} end
local replays = redis.call('HINCRBY', KEYS[1], 'replays', 1)
local job = ARGV[1] .. '-r' .. replays
redis.call('HDEL', KEYS[1], 'first_attempt_at', 'last_attempt_at', 'last_error', 'finished_at')
redis.call('PERSIST', KEYS[1])
addToLine(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3], job, ARGV[4])
return {'requeued', job}
