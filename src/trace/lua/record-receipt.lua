--[[
  Records the receipt of a message that stores nothing (refused, filtered, or answered unchanged
  without the commit script): its only write (docs/message-trace.md, includes/record-receipt.lua).

  Input:
    KEYS[1] the control id's receipts (list)
    KEYS[2] the patient's control ids (sorted set), or KEYS[1] when the patient is not known
    KEYS[3] the partition's recent control ids (sorted set)
    ARGV[1] the control id
    ARGV[2] the receipt, JSON
    ARGV[3] the retention, s
    ARGV[4] how many receipts a control id keeps
    ARGV[5] now, epoch ms
    ARGV[6] '1' when KEYS[2] is the patient's index, else '0'

  Output:
    1
]]
--- @include "includes/record-receipt"
local patient_key = ''
if ARGV[6] == '1' then patient_key = KEYS[2] end
recordReceipt(KEYS[1], patient_key, KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
return 1
