--[[
  Keeps one completed result for the CDS Hooks service (docs/cds-hooks.md), unless the patient's
  kept result of that category is newer: a higher record version, or the same version and a later
  `created_at` (an older query's retry never replaces a newer result). Each category's fields
  carry their own end of life; the hash lives as long as its longest-lived category.
  Expired categories are skipped by the reader.

  Input:
    KEYS[1] the patient's kept results, `P:cds:<psid>` (hash: `<cat>` sealed result, `<cat>|v`
            record version, `<cat>|t` created_at, `<cat>|x` expiry in epoch ms or 0)
    ARGV[1] the category (`ccsr_category`; `prevent` for Prevent)
    ARGV[2] the result's record version (-1 when it has none)
    ARGV[3] the result's created_at (ISO 8601, UTC: compared as text)
    ARGV[4] the sealed result
    ARGV[5] the retention in ms (0: kept until purged)
    ARGV[6] now, epoch ms

  Output:
    1 kept, 0 an equal or newer result is kept already
]]

local category = ARGV[1]
local version = tonumber(ARGV[2])
local createdAt = ARGV[3]
local retention = tonumber(ARGV[5])
local now = tonumber(ARGV[6])

local held = redis.call('HMGET', KEYS[1], category .. '|v', category .. '|t', category .. '|x')
local heldExpiry = tonumber(held[3] or '')
local alive = held[1] and (heldExpiry == 0 or (heldExpiry ~= nil and heldExpiry > now))
if alive then
  local heldVersion = tonumber(held[1]) or -1
  if heldVersion > version then return 0 end
  if heldVersion == version and held[2] and held[2] > createdAt then return 0 end
end

local before = redis.call('PTTL', KEYS[1])
local expiry = 0
if retention > 0 then expiry = now + retention end
redis.call('HSET', KEYS[1], category, ARGV[4], category .. '|v', version, category .. '|t',
  createdAt, category .. '|x', expiry)

if retention == 0 then
  redis.call('PERSIST', KEYS[1])
elseif before == -2 or (before >= 0 and before < retention) then
  redis.call('PEXPIRE', KEYS[1], retention)
end
-- before == -1: the hash holds results kept until purged (retention was 0): it stays, and each
-- category's own expiry (`|x`) is checked when it is read.
return 1
