--[[
  The first step of move-entry when its keys are in different partitions (a cluster script cannot
  span slots): writes the new lookup entry, unless it names another patient. The steps are each
  idempotent and in an order that a run again completes: the new lookup entry, then the sealed
  copy (set-if), then the old lookup entry goes. The field `prevent_patient_id` is
  PREVENT_PATIENT_ID of crosswalk.ts.

  Input:
    KEYS[1] the lookup entry under the new keys (hash: psid, local, prevent_patient_id)
    ARGV[1] the service id
    ARGV[2] the local id sealed under the new keys
    ARGV[3] the Prevent id sealed under the new keys, or '' when there is none

  Output:
    1 when the entry was written, 0 when it names another service id
]]
local existing = redis.call('HGET', KEYS[1], 'psid')
if existing and existing ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'psid', ARGV[1], 'local', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'prevent_patient_id', ARGV[3]) end
return 1
