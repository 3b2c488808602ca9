--[[
  Sets a field of a lookup entry only while the entry names the given service id (a purge or a
  re-created patient wins).

  Input:
    KEYS[1] the lookup entry of the local id (hash: psid, local, …)
    ARGV[1] the service id the entry must name
    ARGV[2] the field to set
    ARGV[3] its value

  Output:
    1 when the field was set, 0 when the entry does not name the service id
]]
if redis.call('HGET', KEYS[1], 'psid') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return 1
