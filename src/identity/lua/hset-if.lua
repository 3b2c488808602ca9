--[[
  Sets a hash field only when it still holds the value read (a key rotation never overwrites
  news).

  Input:
    KEYS[1] the hash
    ARGV[1] the field
    ARGV[2] the value read before
    ARGV[3] the new value

  Output:
    1 when the field was set, 0 when it changed since it was read
]]
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
