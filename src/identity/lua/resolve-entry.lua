--[[
  Creates the crosswalk entry of a local id unless another process got there first, and answers
  the service id in force.

  Input:
    KEYS[1] the lookup entry of the local id (hash: psid, local), named by its HMAC
    KEYS[2] the sealed local id of the candidate service id (string)
    ARGV[1] the candidate service id
    ARGV[2] the local id sealed for the candidate service id

  Output:
    {service id in force, 1 when this call created the entry, else 0}
]]
local existing = redis.call('HGET', KEYS[1], 'psid')
if existing then return {existing, 0} end
redis.call('HSET', KEYS[1], 'psid', ARGV[1], 'local', ARGV[2])
redis.call('SET', KEYS[2], ARGV[2])
return {ARGV[1], 1}
