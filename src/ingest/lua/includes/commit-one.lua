--[[
  Everything one message changes, shared by commit.lua and commit-many.lua (one item), so that
  Redis holds all of it or none of it: the crosswalk entry of a new patient, the record (a JSON
  record replaced, or a clinical record written only if its version is still the one it was
  computed from), a merge's prior patient, the problem-list presets, one open query per preset
  category (and its place in the due set), and the sender's event id. An acknowledged update
  therefore always has its queries written down.

  commit_one(keys, argv): keys and argv are the KEYS and ARGV of commit.lua (see its header).

  Answers {'stale'} or {'retired'} (the lookup entry to verify moved: the caller looks the local id
  up again), {'duplicate', answer}, {'conflict'} (the caller re-reads and retries), {'missing'}
  (no record to run on), {'unchanged', version} (the same record, its queries already opened), or
  {'ok', version, opted_out, {category, seq, coalesced, ...}}.
]]
--- @include "../../../queries/lua/includes/schedule-query"
--- @include "retire-merged-prior"
local function commit_one(keys, argv)
  local mode = argv[1]
  -- A service id taken from the process's crosswalk cache or read before: the local id's lookup
  -- entry must still name it, and no merge may have retired it; else the caller looks it up again.
  if argv[24] == '1' then
    if redis.call('HGET', keys[6], 'psid') ~= argv[7] then return {'stale'} end
    if redis.call('EXISTS', keys[11]) == 1 then return {'retired'} end
  end
  -- A record identical to the stored one (same content HMAC) changes nothing: it is a 'keep' that
  -- opens queries only if they are stale (see below).
  local only_if_stale = argv[21] == '1'
  if mode == 'put' and argv[20] ~= '' and redis.call('HGET', keys[1], 'content') == argv[20] then
    mode = 'keep'
    only_if_stale = true
  end
  local idem_ttl = tonumber(argv[14])
  if idem_ttl > 0 then
    local stored = redis.call('GET', keys[3])
    if stored then return {'duplicate', stored} end
  end
  if mode == 'keep' then
    if redis.call('HEXISTS', keys[1], 'record') == 0 and redis.call('HEXISTS', keys[1], 'clinical') == 0 then
      return {'missing'}
    end
  end
  if argv[15] == '1' then
    local existing = redis.call('HGET', keys[6], 'psid')
    if existing and existing ~= argv[7] then return {'conflict'} end
    if not existing then
      redis.call('HSET', keys[6], 'psid', argv[7], 'local', argv[16])
      redis.call('SET', keys[7], argv[16])
    end
  end
  if mode == 'clinical' then
    if tonumber(redis.call('HGET', keys[1], 'version') or '0') ~= tonumber(argv[2]) then return {'conflict'} end
  end
  if argv[17] == '1' then
    if tonumber(redis.call('HGET', keys[9], 'version') or '0') ~= tonumber(argv[18]) then return {'conflict'} end
  end
  local version
  if mode == 'keep' then
    version = tonumber(redis.call('HGET', keys[1], 'version') or '0')
  else
    version = redis.call('HINCRBY', keys[1], 'version', 1)
    if mode == 'put' then
      redis.call('HSET', keys[1], 'record', argv[3], 'updated_at', argv[4], 'content', argv[20])
    else
      redis.call('HSET', keys[1], 'clinical', argv[3], 'updated_at', argv[4])
    end
  end
  local retention = tonumber(argv[13])
  if retention > 0 then redis.call('EXPIRE', keys[1], retention) end
  if argv[17] == '1' then
    local prior = redis.call('HGETALL', keys[8])
    for i = 1, #prior, 2 do redis.call('HSETNX', keys[2], prior[i], prior[i + 1]) end
    retireMergedPrior(keys[8], keys[9], keys[10], argv[7], argv[22])
  end
  -- A merge whose prior patient is in another partition: its presets, read before, come as argv[23]
  -- (field, value, …) and the prior patient is retired by a second script (see retire-prior.lua).
  if argv[23] ~= '' then
    local moved = cjson.decode(argv[23])
    for i = 1, #moved, 2 do redis.call('HSETNX', keys[2], moved[i], moved[i + 1]) end
  end
  if argv[10] == '1' then
    local wanted = {}
    local value = cjson.encode({source = 'problem_list', created_at = argv[4]})
    for _, category in ipairs(cjson.decode(argv[11])) do
      wanted[category] = true
      redis.call('HSETNX', keys[2], category, value)
    end
    local all = redis.call('HGETALL', keys[2])
    for i = 1, #all, 2 do
      if not wanted[all[i]] then
        local ok, preset = pcall(cjson.decode, all[i + 1])
        if ok and type(preset) == 'table' and preset.source == 'problem_list' then
          redis.call('HDEL', keys[2], all[i])
        end
      end
    end
  end
  local categories = {}
  local seen = {}
  for _, category in ipairs(redis.call('HKEYS', keys[2])) do
    seen[category] = true
    table.insert(categories, category)
  end
  table.sort(categories)
  for _, category in ipairs(cjson.decode(argv[12])) do
    if not seen[category] then
      seen[category] = true
      table.insert(categories, category)
    end
  end
  local opted_out = redis.call('EXISTS', keys[5])
  -- The categories the stored version's queries were opened for: the same record and the same
  -- categories again open nothing (no work for nothing); new presets, or a version whose queries
  -- never opened (the patient was opted out), still do.
  local fingerprint = table.concat(categories, ',')
  if only_if_stale and opted_out == 0
    and tonumber(redis.call('HGET', keys[1], 'q_version') or '-1') == version
    and redis.call('HGET', keys[1], 'q_categories') == fingerprint then
    if idem_ttl > 0 then
      local answer = '{"event_id":' .. cjson.encode(argv[6]) .. ',"patient_service_id":' ..
        cjson.encode(argv[7]) .. ',"queries":[]}'
      redis.call('SET', keys[3], answer, 'EX', idem_ttl)
    end
    return {'unchanged', version}
  end
  if opted_out == 0 then redis.call('HSET', keys[1], 'q_version', version, 'q_categories', fingerprint) end
  local scheduled = {}
  local answers = {}
  if opted_out == 0 then
    for _, category in ipairs(categories) do
      local qs_key = argv[8] .. category
      local seq, coalesced = schedule_query(qs_key, keys[4], argv[7], category, argv[6], argv[4], argv[5], tonumber(argv[9]))
      if retention > 0 then redis.call('EXPIRE', qs_key, retention) end
      table.insert(scheduled, category)
      table.insert(scheduled, seq)
      table.insert(scheduled, coalesced)
      local flag = 'false'
      if coalesced == 1 then flag = 'true' end
      table.insert(answers, '{"ccsr_category":' .. cjson.encode(category) .. ',"job_id":' ..
        cjson.encode(argv[19] .. category .. '-' .. seq) .. ',"coalesced":' .. flag .. '}')
    end
  end
  if idem_ttl > 0 then
    local answer = '{"event_id":' .. cjson.encode(argv[6]) .. ',"patient_service_id":' ..
      cjson.encode(argv[7]) .. ',"queries":[' .. table.concat(answers, ',') .. ']}'
    redis.call('SET', keys[3], answer, 'EX', idem_ttl)
  end
  return {'ok', version, opted_out, scheduled}
end
