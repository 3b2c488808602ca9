--[[
  Stores the record and raises the version in one step, so that no reader sees one without the
  other.

  Input:
    KEYS[1] the patient's record (hash: version, record, clinical, updated_at)
    ARGV[1] the sealed record (JSON)
    ARGV[2] now, ISO 8601

  Output:
    the new version
]]
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'updated_at', ARGV[2])
return version
