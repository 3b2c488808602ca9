--[[
  Sets a string only when it still holds the value read (the sealed-copy step of a key rotation
  whose keys are in different partitions: see set-forward).

  Input:
    KEYS[1] the string (a sealed local id)
    ARGV[1] the value read before
    ARGV[2] the new value

  Output:
    1 when it was set, 0 when it changed since it was read
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
