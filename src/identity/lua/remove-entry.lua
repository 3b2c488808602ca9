--[[
  Forgets a local id (a purge): deletes its lookup entry and its sealed copy, if the entry still
  names the service id read before (else another change won).

  Input:
    KEYS[1] the lookup entry of the local id (hash: psid, local)
    KEYS[2] the sealed local id of the service id (string)
    ARGV[1] the service id the lookup entry named when read

  Output:
    1 when both were deleted, 0 when the entry no longer names the service id
]]
if redis.call('HGET', KEYS[1], 'psid') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
