--[[
  Adds a trigger to the key's open (not yet submitted) query, opening one if there is none, and
  puts a newly opened query in the due set (see query-outbox.ts).

  Input:
    KEYS[1] the coalescing state of the (patient, category) (qs)
    KEYS[2] the due set of new queries (qdue)
    ARGV[1] the event id of the trigger
    ARGV[2] when the update was accepted, ISO 8601
    ARGV[3] how many event ids a query remembers
    ARGV[4] the patient service id
    ARGV[5] the ccsr category
    ARGV[6] when a newly opened query becomes due, epoch ms

  Output:
    {seq, coalesced}: the open query's seq (a string), and 1 when the trigger joined a query
    opened earlier, else 0
]]
--- @include "includes/schedule-query"
local seq, coalesced = schedule_query(KEYS[1], KEYS[2], ARGV[4], ARGV[5], ARGV[1], ARGV[2], ARGV[6], tonumber(ARGV[3]))
return {seq, coalesced}
