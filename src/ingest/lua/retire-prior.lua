--[[
  The second step of a merge whose prior patient lives in another partition than the survivor (a
  Redis Cluster script cannot span two slots): once the survivor has the prior's record and
  presets (the first script, commit.lua), the prior patient loses its record and presets and is
  retired, but only if neither changed since they were read (its version, and its presets exactly
  as copied): else 0, and the caller reads both again and repeats the merge (the survivor's part
  again is harmless: the same items and presets). A crash between the two leaves the prior patient
  as it was (its message was not acknowledged, and its resend completes the merge).

  Input:
    KEYS[1] the prior patient's presets (hash)
    KEYS[2] the prior patient's record (hash)
    KEYS[3] the prior patient's retired key (the record's key when it is not retired)
    ARGV[1] the prior record's version the merge read
    ARGV[2] the prior presets the merge read, JSON [field, value, ...]
    ARGV[3] the survivor's service id
    ARGV[4] '1' to retire the prior patient, else '0'

  Output:
    1 when the prior patient was cleared (and retired), 0 when it changed since it was read
]]
--- @include "includes/retire-merged-prior"
if tonumber(redis.call('HGET', KEYS[2], 'version') or '0') ~= tonumber(ARGV[1]) then return 0 end
local now = redis.call('HGETALL', KEYS[1])
local was = cjson.decode(ARGV[2])
if #now ~= #was then return 0 end
local read = {}
for i = 1, #was, 2 do read[was[i]] = was[i + 1] end
for i = 1, #now, 2 do
  if read[now[i]] ~= now[i + 1] then return 0 end
end
retireMergedPrior(KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[4])
return 1
