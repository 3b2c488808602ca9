--[[
  Raises a subscription's last_event to the given event number unless it is already there or
  beyond (never lowers it).

  Input:
    KEYS[1] the subscription's state (hash: last_event, last_heartbeat, last_status)
    ARGV[1] the event number processed

  Output:
    the prior last_event, or nil when there was none
]]
local prior = redis.call('HGET', KEYS[1], 'last_event')
if prior == false or tonumber(ARGV[1]) > tonumber(prior) then
  redis.call('HSET', KEYS[1], 'last_event', ARGV[1])
end
return prior
