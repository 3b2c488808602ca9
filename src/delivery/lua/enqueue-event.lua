--[[
  Hands an event to the webhook once: puts it at the end of its key's line, and a second
  hand-over of the same id changes nothing.

  Input:
    KEYS[1] the event's delivery state (hash)
    KEYS[2] its key's line (sorted set of event ids, scored by hand-over order)
    KEYS[3] the global hand-over sequence
    KEYS[4] the keys whose line is not empty (set)
    ARGV[1] the event id (also the id of the job that delivers it)
    ARGV[2] the event's key, patient_service_id/ccsr_category
    ARGV[3] the event, its patient_id sealed (JSON)
    ARGV[4] now, epoch ms

  Output:
    {'new', job id} for a first hand-over, else {state, job id} as already kept
]]
--- @include "includes/add-to-line"

local state = redis.call('HGET', KEYS[1], 'state')
if state then return {state, redis.call('HGET', KEYS[1], 'job')} end
addToLine(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3], ARGV[1], ARGV[4])
return {'new', ARGV[1]}
