--[[
  Moves one crosswalk entry to the new keys in one step (a key rotation): the lookup entry is
  renamed (its name is the HMAC of the local id under the lookup key), both sealed copies of the
  local id re-sealed, and the patient's Prevent id (when it has one) re-sealed with them. Applies
  only if the sealed local id and the Prevent id did not change since they were read, and never
  over a new lookup entry that names another patient (a live rotation: see
  docs/security-and-privacy.md). The field `prevent_patient_id` is PREVENT_PATIENT_ID of
  crosswalk.ts.

  Input:
    KEYS[1] the sealed local id of the service id (string)
    KEYS[2] the lookup entry under the new keys (hash: psid, local, prevent_patient_id)
    KEYS[3] the lookup entry under the old keys (deleted if it names the service id)
    ARGV[1] the sealed local id as read (old keys)
    ARGV[2] the local id sealed under the new keys
    ARGV[3] the service id
    ARGV[4] the Prevent id sealed under the new keys, or '' when there is none
    ARGV[5] the old lookup entry's Prevent id as read, or '' when there was none

  Output:
    1 when the entry was moved, 0 when the sealed local id or the Prevent id changed since they
    were read, 2 when the new lookup entry names another service id (nothing is written)
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if KEYS[3] ~= KEYS[2] and (redis.call('HGET', KEYS[3], 'prevent_patient_id') or '') ~= ARGV[5] then
  return 0
end
local existing = redis.call('HGET', KEYS[2], 'psid')
if existing and existing ~= ARGV[3] then return 2 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'psid', ARGV[3], 'local', ARGV[2])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'prevent_patient_id', ARGV[4]) end
if KEYS[3] ~= KEYS[2] and redis.call('HGET', KEYS[3], 'psid') == ARGV[3] then
  redis.call('DEL', KEYS[3])
end
return 1
