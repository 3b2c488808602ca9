--[[
  Reads a member of a due set (of new queries, of polls) written under a partition's prefix: a
  query as `<patient_service_id>|<ccsr_category>|<seq>`. Answers its patient_service_id, its
  category, its seq and the key of its coalescing hash (`<prefix>:qs:<psid>:<category>`, same
  hash tag as the due set). A member of another shape is an error (as it never is written).
]]
local function parseDueMember(prefix, member)
  local psid, cat, seq = string.match(member, '^(.*)|([^|]*)|(%d+)$')
  local qs = prefix .. ':qs:' .. psid .. ':' .. cat
  return psid, cat, seq, qs
end
