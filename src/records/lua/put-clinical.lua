--[[
  Writes the clinical record only if nobody changed the patient's record since it was read, so
  that concurrent feeds never lose each other's changes (the caller re-reads and retries).

  Input:
    KEYS[1] the patient's record (hash: version, record, clinical, updated_at)
    ARGV[1] the version read (0 when there was none)
    ARGV[2] the sealed clinical record
    ARGV[3] now, ISO 8601

  Output:
    the new version, or -1 when the version changed since it was read
]]
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if current ~= tonumber(ARGV[1]) then return -1 end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'clinical', ARGV[2], 'updated_at', ARGV[3])
return version
