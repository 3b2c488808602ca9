--[[
  The lookup entry's part of remove-entry, when the sealed copy lives in another partition (so in
  another slot): deletes the lookup entry alone, if it still names the service id read before.

  Input:
    KEYS[1] the lookup entry of the local id (hash: psid, local)
    ARGV[1] the service id the lookup entry named when read

  Output:
    1 when the entry was deleted, 0 when it no longer names the service id
]]
if redis.call('HGET', KEYS[1], 'psid') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
