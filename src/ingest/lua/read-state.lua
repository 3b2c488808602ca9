--[[
  Reads what the commit script reads of a known patient, in one round trip (read only): the record
  hash's version, sealed clinical record and query stamp, the presets, the opt-out flag, the
  survivor a merge retired the patient into, and (optional) the service id the local id's lookup
  entry names.

  Input:
    KEYS[1] the patient's record (hash)
    KEYS[2] the patient's presets (hash)
    KEYS[3] the patient's opt-out flag
    KEYS[4] the patient's retired key
    KEYS[5...] optional: the local id's lookup entry (hash: psid)

  Output:
    {{version, clinical, q_version, q_categories}, presets as [field, value, ...], 1 when opted
    out else 0, the survivor or false, the lookup entry's psid or false (false without KEYS[5])}
]]
local named = false
if KEYS[5] then named = redis.call('HGET', KEYS[5], 'psid') end
return {
  redis.call('HMGET', KEYS[1], 'version', 'clinical', 'q_version', 'q_categories'),
  redis.call('HGETALL', KEYS[2]),
  redis.call('EXISTS', KEYS[3]),
  redis.call('GET', KEYS[4]),
  named
}
