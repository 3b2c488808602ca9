--[[
  The prior patient of a merge, once the survivor has its record and presets: its presets and
  record go, and, when asked, it is retired: its local id leads to the survivor, and its record's
  version moves on, so that a writer that read it before fails.
]]
local function retireMergedPrior(presetsKey, recordKey, retiredKey, survivor, retire)
  redis.call('DEL', presetsKey)
  redis.call('HDEL', recordKey, 'record', 'clinical')
  if retire == '1' then
    redis.call('SET', retiredKey, survivor)
    redis.call('HINCRBY', recordKey, 'version', 1)
  end
end
