--[[
  Everything one message changes, in one script, so that Redis holds all of it or none of it: the
  crosswalk entry of a new patient, the record (a JSON record replaced, or a clinical record
  written only if its version is still the one it was computed from), a merge's prior patient, the
  problem-list presets, one open query per preset category (and its place in the due set), and the
  sender's event id. An acknowledged update therefore always has its queries written down (see
  includes/commit-one.lua).

  Input:
    KEYS[1] the patient's record (hash: version, record or clinical, content, q_version, ...)
    KEYS[2] the patient's presets (hash: category -> {source, created_at})
    KEYS[3] the sender's event id and its answer (idempotency), or KEYS[1] when not remembered
    KEYS[4] the due set of new queries of the partition (qdue)
    KEYS[5] the patient's opt-out flag
    KEYS[6] the local id's lookup entry (hash: psid, local) of a new patient or to verify,
      else the record's key
    KEYS[7] the local id of a new patient, by its service id, else KEYS[1]
    KEYS[8] the presets of a merge's prior patient, else KEYS[2]
    KEYS[9] the record of a merge's prior patient, else KEYS[1]
    KEYS[10] the retired key of a merge's prior patient (names the survivor), else KEYS[1]
    KEYS[11] the patient's retired key, to verify, else KEYS[1]
    KEYS[12] the message's receipts (trace list of its control id), else KEYS[1]
    KEYS[13] the patient's control ids (trace index), else KEYS[1]
    KEYS[14] the partition's recent control ids (trace index), else KEYS[1]
    ARGV[1] how the record changes: 'put' (a JSON record), 'clinical' or 'keep'
    ARGV[2] the version a clinical record was computed from (0 else)
    ARGV[3] the sealed record ('' for keep)
    ARGV[4] now, ISO 8601
    ARGV[5] when a newly opened query becomes due (now plus the debounce), epoch ms
    ARGV[6] the event id of the update
    ARGV[7] the patient service id
    ARGV[8] the query-state key of the patient without its category (qs:<psid>:)
    ARGV[9] how many event ids a query remembers
    ARGV[10] '1' when the presets follow the problem list of ARGV[11], else '0'
    ARGV[11] the problem-list categories of the record, JSON array
    ARGV[12] the categories run besides the presets (rules, explicit), JSON array
    ARGV[13] the record retention, s (0 keeps records until purged)
    ARGV[14] how long the answer to the event id is remembered, s (0: not remembered)
    ARGV[15] '1' to create the crosswalk entry of a new patient, else '0'
    ARGV[16] the sealed local id of a new patient ('' else)
    ARGV[17] '1' for a merge whose prior patient is in the same partition, else '0'
    ARGV[18] the version of the prior patient's record the merge read (0 else)
    ARGV[19] the prefix of the patient's query job ids
    ARGV[20] the content HMAC of a JSON record ('' else)
    ARGV[21] '1' to open queries only if the stored version's are stale, else '0'
    ARGV[22] '1' to retire the merge's prior patient, else '0'
    ARGV[23] the presets of a prior patient in another partition, read before (JSON [field,
      value, ...]), or ''
    ARGV[24] '1' to verify that KEYS[6] still names ARGV[7] and KEYS[11] is unset, else '0'
    ARGV[25] the message's receipt without state, psid, version and queries (JSON object), or ''
      for none (trace off): then nothing of the trace is written (includes/commit-receipt.lua)
    ARGV[26] the message's control id
    ARGV[27] the message's feed
    ARGV[28] the trace retention, s
    ARGV[29] how many receipts a control id keeps
    ARGV[30] now, epoch ms
    ARGV[31] the partition's prefix (of the query trace keys)
    ARGV[32] the traceparent of the message's ingest span, kept by the queries it opens ('' for
      none: tracing off, or the trace not sampled)

  Output:
    {'stale'} or {'retired'} (ARGV[24]: the lookup entry moved), {'duplicate', answer},
    {'conflict'} (the caller re-reads and retries), {'missing'} (no record to run on),
    {'unchanged', version} (the same record, its queries already opened), or
    {'ok', version, opted_out, {category, seq, coalesced, ...}}
]]
--- @include "includes/commit-one"
--- @include "includes/commit-receipt"
local result = commit_one(
  {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]},
  {ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12],
    ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17], ARGV[18], ARGV[19], ARGV[20], ARGV[21], ARGV[22], ARGV[23], ARGV[24]})
commitReceipt(result, {KEYS[12], KEYS[13], KEYS[14]},
  {ARGV[25], ARGV[26], ARGV[27], ARGV[28], ARGV[29], ARGV[30], ARGV[31], ARGV[32]}, ARGV[7])
return result
