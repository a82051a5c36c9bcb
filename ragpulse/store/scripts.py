"""Lua scripts the store runs atomically (each documents its KEYS and ARGV)."""

# Mark a chunk done; return 1 to exactly one caller when that completes the job's current attempt.
# KEYS: job hash, chunks-done set, chunk states, lease. ARGV: chunk, ttl, now.
COMPLETE_CHUNK = """
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], 'done')
redis.call('DEL', KEYS[4])
if redis.call('SCARD', KEYS[2]) < tonumber(redis.call('HGET', KEYS[1], 'n_chunks')) then return 0 end
local attempt = redis.call('HGET', KEYS[1], 'attempt') or '0'
return redis.call('HSETNX', KEYS[1], 'finalizing:' .. attempt, ARGV[3])
"""

# Claim a chunk whose worker died: started, lease gone, not done. KEYS: chunk states, lease. ARGV: chunk.
CLAIM_STALE = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= 'started' then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], 'requeued')
return 1
"""

# Take a chunk under a lease, unless it is done or a live worker holds it (started, lease alive); with ARGV[3] '1',
# only a chunk still queued for its first run: the next chunk a busy worker runs on (issue 28). A requeued chunk is
# left to the RQ job the janitor enqueued for it.
# KEYS: chunk states, lease. ARGV: chunk, lease seconds, only waiting ('1' or '0').
TAKE_CHUNK = """
local state = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[3] == '1' then
  if state ~= 'queued' then return 0 end
elseif state == 'done' or (state == 'started' and redis.call('EXISTS', KEYS[2]) == 1) then
  return 0
end
redis.call('SET', KEYS[2], '1', 'EX', ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], 'started')
return 1
"""

# queued -> running, and nothing else (a failed or finished job keeps its status). KEYS: job hash.
MARK_RUNNING = """
if redis.call('HGET', KEYS[1], 'status') == 'queued' then redis.call('HSET', KEYS[1], 'status', 'running') end
"""

# Lua source of a function packed(blob) -> list of commands, each a list of its arguments: the inverse of hiredis'
# pack_command over a run of commands (`*<argc>`, then `$<size>` and the bytes of each argument). Group writes travel
# as one such blob per group, so redis-py packs one argument per group, not one per word.
PACKED_COMMANDS = r"""
local function packed(blob)
  local find, sub, tonumber = string.find, string.sub, tonumber
  local commands, pos = {}, 1
  while pos <= #blob do
    local eol = find(blob, "\r\n", pos, true)
    local args = {}
    for a = 1, tonumber(sub(blob, pos + 1, eol - 1)) do
      pos = eol + 2
      eol = find(blob, "\r\n", pos, true)
      local size = tonumber(sub(blob, pos + 1, eol - 1))
      args[a] = sub(blob, eol + 2, eol + 1 + size)
      eol = eol + size + 2
    end
    pos = eol + 2
    commands[#commands + 1] = args
  end
  return commands
end
"""

# Store one trace's result and file its index under failed or skipped (or neither); only when the trace had no result
# yet, also apply the writes that count it (HINCRBYFLOAT / EXPIRE of metric hashes), in the same atomic step: run
# again after its reply was lost (a retried command), it neither loses nor doubles the count. Returns 1 when new.
# KEYS: results hash, failed set, skipped set, then every key the counting writes touch.
# ARGV: index, encoded result, ttl, bucket ('failed', 'skipped' or ''), then the counting writes packed into one blob
# (PACKED_COMMANDS): one argument, not the hundred words redis-py would pack one by one in Python.
RECORD_RESULT = PACKED_COMMANDS + """
local new = redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call(ARGV[4] == 'failed' and 'SADD' or 'SREM', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call(ARGV[4] == 'skipped' and 'SADD' or 'SREM', KEYS[3], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if new == 1 then
  for _, args in ipairs(packed(ARGV[5])) do redis.call(unpack(args)) end
end
return new
"""

# Store a group of results that finished together, as RECORD_RESULT would one after the other, when none of them has a
# result yet (the first attempt of each); then their counting writes, merged (atomic.MergedWrites: each metric field
# once), apply once for all. Returns 0 and writes nothing when any has a result already (a group sent again): the caller then
# records each with RECORD_RESULT, which counts only the new ones.
# KEYS: results hash, failed set, skipped set, then every key the counting writes touch.
# ARGV: ttl, the merged counting writes packed (PACKED_COMMANDS), then index, encoded result and bucket of each result.
RECORD_RESULTS = PACKED_COMMANDS + """
for i = 3, #ARGV, 3 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then return 0 end
end
for i = 3, #ARGV, 3 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call(ARGV[i + 2] == 'failed' and 'SADD' or 'SREM', KEYS[2], ARGV[i])
  redis.call(ARGV[i + 2] == 'skipped' and 'SADD' or 'SREM', KEYS[3], ARGV[i])
end
redis.call('EXPIRE', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
for _, args in ipairs(packed(ARGV[2])) do redis.call(unpack(args)) end
return 1
"""

# A token bucket in one hash, on Redis' clock (so API replicas on different machines agree). Lua source of a function
# take(key, n, rate, burst) -> 0 when the n tokens were taken, else the milliseconds until n tokens are there (then
# nothing is taken). The bucket starts full (burst tokens), refills at `rate` tokens a second up to `burst`, and
# expires once full again: a missing bucket is a full one. Used inside the group-commit script (store/atomic.py) and
# alone (TAKE_TOKENS).
TOKEN_BUCKET = """
local function take(key, n, rate, burst)
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tokens, at = tonumber(state[1]), tonumber(state[2])
  if tokens == nil or at == nil then tokens, at = burst, now end
  tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
  if tokens < n then return math.max(1, math.ceil((n - tokens) * 1000 / rate)) end
  tokens = tokens - n
  redis.call('HSET', key, 'tokens', string.format('%.6f', tokens), 'at', now)
  redis.call('PEXPIRE', key, math.ceil((burst - tokens) * 1000 / rate) + 1000)
  return 0
end
"""

# Take ARGV[2] tokens from the bucket ARGV[1] (rate ARGV[3] tokens/s, at most ARGV[4]): 0, or ms to wait. No KEYS:
# the key is an argument, as in the group-commit script, which is given no keys either.
TAKE_TOKENS = TOKEN_BUCKET + """
return take(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
"""

# Acknowledge processed posts of the online stream and apply what each counts, exactly once: a post's writes are
# applied only when this XACK is the one that acknowledged it (a post claimed by a second worker while the first
# still worked on it is counted by whichever finishes first; the other's XACK returns 0 and its writes are dropped).
# Acknowledged posts are deleted from the stream, which so holds only unprocessed posts; the call that deletes one
# also gives its tenant's place back in the backlog shares (BACKLOG_ROOM). The shared writes (judge request metrics,
# spend) count calls that were made, whichever post they served: applied once per acknowledgement, by the call that
# sets its marker (a reply lost to a dropped connection and sent again, by the client or the consumer, finds it set).
# KEYS: the stream, its backlog shares, the acknowledgement's marker (keys.online_ack). ARGV: group, shared writes (a
# packed blob, maybe empty), the marker's TTL in seconds, then triples of post id, its tenant ("" for a post that
# holds no share) and its packed writes.
# Returns one integer per post: 1 when this call counted it, 0 when it was already acknowledged.
ACK_POSTS = PACKED_COMMANDS + """
if #ARGV[2] > 0 and redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[3]) then
  for _, args in ipairs(packed(ARGV[2])) do redis.call(unpack(args)) end
end
local counted = {}
for i = 4, #ARGV, 3 do
  local id, tenant = ARGV[i], ARGV[i + 1]
  local fresh = redis.call('XACK', KEYS[1], ARGV[1], id)
  if fresh == 1 then
    for _, args in ipairs(packed(ARGV[i + 2])) do redis.call(unpack(args)) end
  end
  if redis.call('XDEL', KEYS[1], id) == 1 and tenant ~= '' then
    if redis.call('HINCRBY', KEYS[2], tenant, -1) <= 0 then redis.call('HDEL', KEYS[2], tenant) end
  end
  counted[#counted + 1] = fresh
end
return counted
"""

# The online stream's room for one more post of one tenant: the stream is divided equally among the tenants that
# hold posts in it, and one share more is kept free for a tenant that holds none yet (while some tenant of the
# deployment holds none), so one tenant's flood cannot refuse another tenant's first post; the stream's cap stays a
# hard bound. Lua source of a function room(stream, cap, shares, tenant, tenants) -> "" when the post fits, else
# "BACKLOG <posts in the stream>" (the cap) or "SHARE <posts the tenant holds> <its share>". `shares` is the hash
# tenant -> posts held (keys.online_backlog_shares), counted up with each post's XADD and down with its XDEL
# (ACK_POSTS); `tenants`, how many tenants the deployment serves. An empty stream resets the hash, so a count that
# drifted (the stream deleted by hand, the hash expired) heals by itself. share = floor(cap / min(holders + 1,
# tenants)), at least 1: a deployment's only tenant may fill the stream, each of two tenants half of it, and n
# holders among many tenants n/(n+1) of it at most.
BACKLOG_ROOM = """
local function room(stream, cap, shares, tenant, tenants)
  local posts = redis.call('XLEN', stream)
  if posts >= cap then return 'BACKLOG ' .. posts end
  if posts == 0 then redis.call('DEL', shares) end
  local mine = tonumber(redis.call('HGET', shares, tenant)) or 0
  local holders = redis.call('HLEN', shares)
  if mine == 0 then holders = holders + 1 end
  local share = math.max(1, math.floor(cap / math.min(holders + 1, tenants)))
  if mine >= share then return 'SHARE ' .. mine .. ' ' .. share end
  return ''
end
"""

# Room for one post (BACKLOG_ROOM) checked on its own, before a MULTI/EXEC that cannot run it. No KEYS, as in the
# group-commit script. ARGV: stream, cap, shares, tenant, tenants. Returns "" or the refusal.
ROOM_FOR_POST = BACKLOG_ROOM + """
return room(ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5]))
"""

# Delete the group's consumers with nothing pending that have been idle ARGV[2] ms, except ARGV[3] (the caller), in
# one atomic step: checked and deleted apart, a consumer that read a post in between would be deleted with it, and
# a deleted consumer's pending posts are never delivered again. KEYS: the stream. ARGV: group, idle ms, caller.
# Returns how many were deleted.
FORGET_GONE_CONSUMERS = """
local gone = 0
for _, row in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local c = {}
  for i = 1, #row, 2 do c[row[i]] = row[i + 1] end
  if c['pending'] == 0 and c['idle'] >= tonumber(ARGV[2]) and c['name'] ~= ARGV[3] then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], c['name'])
    gone = gone + 1
  end
end
return gone
"""


OTLP_ADD = """
-- KEYS: pending zset, spans list, meta hash, done marker. ARGV: now, settle, max_wait, ttl, member, max_spans,
-- has_root, max_bytes, spans...
-- Buffers an export's spans of one trace and sets when the trace is due: once its root span is in, `settle` seconds
-- after the latest export; never later than `max_wait` after its first span, nor before a lease on it ends. Returns
-- the spans refused: {over max_spans, over max_bytes, late (the trace was handed over already)}.
local now, settle, max_wait, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', KEYS[4]) == 1 then return {0, 0, #ARGV - 8} end
local max_spans, max_bytes = tonumber(ARGV[6]), tonumber(ARGV[8])
local count = redis.call('LLEN', KEYS[2])
local bytes = tonumber(redis.call('HGET', KEYS[3], 'bytes') or '0')
local too_many, too_large = 0, 0
for i = 9, #ARGV do
  if count >= max_spans then too_many = too_many + 1
  elseif bytes + #ARGV[i] > max_bytes then too_large = too_large + 1
  else
    redis.call('RPUSH', KEYS[2], ARGV[i])
    count, bytes = count + 1, bytes + #ARGV[i]
  end
end
if count == 0 then return {too_many, too_large, 0} end
redis.call('HSETNX', KEYS[3], 'first', ARGV[1])
redis.call('HSET', KEYS[3], 'bytes', bytes)
if ARGV[7] == '1' then redis.call('HSET', KEYS[3], 'root', '1') end
redis.call('EXPIRE', KEYS[3], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
local due = tonumber(redis.call('HGET', KEYS[3], 'first')) + max_wait
if redis.call('HEXISTS', KEYS[3], 'root') == 1 then due = math.min(due, now + settle) end
due = math.max(due, tonumber(redis.call('HGET', KEYS[3], 'lease') or '0'))
redis.call('ZADD', KEYS[1], due, ARGV[5])
return {too_many, too_large, 0}
"""
"""Buffer one export's spans of one OpenTelemetry trace (ragpulse.otlp.buffer)."""

OTLP_LEASE = """
-- KEYS: pending zset, spans list, meta hash. ARGV: now, lease, member.
-- Takes a due trace for `lease` seconds (its score moves past the lease, and the meta keeps when the lease ends so a
-- later export cannot make it due sooner: no other replica takes it meanwhile; a replica that dies leaves it due
-- again) and returns its spans; nil when it is not due or gone.
local score = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not score or tonumber(score) > tonumber(ARGV[1]) then return nil end
local until_ = tonumber(ARGV[1]) + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], until_, ARGV[3])
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('HSET', KEYS[3], 'lease', until_) end
return redis.call('LRANGE', KEYS[2], 0, -1)
"""
"""Lease a due OpenTelemetry trace for assembly; the hand-over removes it in the same atomic group as its writes."""

# A post's Idempotency-Key, checked before its writes and kept with them in the same script (store/atomic.py's ONCE
# and REMEMBER), so a post is committed and its key recorded together or not at all. Lua source of two functions:
# once(record, fingerprint) -> "" when the key is new, "ANSWERED <status> <body>" when a post with the same body was
# committed under it (its answer, to replay), "REUSED" when the key was used with another body;
# remember(record, fingerprint, status, body, ttl, index, most) stores the answer under the key for `ttl` seconds and
# files the key in the tenant's `index` (a sorted set scored by Redis-clock seconds), which keeps `most` keys at most:
# the oldest leave first, their answers deleted, and keys older than `ttl` leave it too.
IDEMPOTENCY = """
local function once(record, fingerprint)
  local kept = redis.call('HMGET', record, 'fp', 'status', 'body')
  if not kept[1] then return '' end
  if kept[1] ~= fingerprint then return 'REUSED' end
  return 'ANSWERED ' .. kept[2] .. ' ' .. kept[3]
end

local function index_key(record, ttl, index, most)
  local now = tonumber(redis.call('TIME')[1])
  redis.call('ZADD', index, now, record)
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now - ttl)
  local over = redis.call('ZCARD', index) - most
  if over > 0 then
    local oldest = redis.call('ZPOPMIN', index, over)
    for i = 1, #oldest, 2 do redis.call('DEL', oldest[i]) end
  end
  redis.call('EXPIRE', index, ttl)
end

local function remember(record, fingerprint, status, body, ttl, index, most)
  redis.call('HSET', record, 'fp', fingerprint, 'status', status, 'body', body)
  redis.call('EXPIRE', record, ttl)
  index_key(record, tonumber(ttl), index, tonumber(most))
end
"""

# once() on its own, before a MULTI/EXEC that cannot run it. No KEYS. ARGV: record, fingerprint.
ONCE_CHECK = IDEMPOTENCY + """
return once(ARGV[1], ARGV[2])
"""

# index_key() on its own, after a MULTI/EXEC that stored the answer with the post. No KEYS. ARGV: record, ttl, index,
# most.
INDEX_KEY = IDEMPOTENCY + """
index_key(ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]))
return 0
"""

# Apply a group of counting writes once. KEYS[1]: the marker naming this write; the other KEYS: the keys the group
# touches. ARGV[1]: the group, packed (atomic.pack_group); ARGV[2]: the marker's lifetime in seconds. A write sent
# again (its reply lost, or a paused Redis let the client time out and retry) finds its marker and applies nothing.
WRITE_ONCE = PACKED_COMMANDS + """
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then return 0 end
for _, args in ipairs(packed(ARGV[1])) do redis.call(unpack(args)) end
return 1
"""

# Reserve judge calls before they are sent, once. A chunk run (or an online consumer) numbers its reservations in
# order; one whose number is not above the last applied one (the same reservation sent again after its reply was lost,
# or one given up on that reaches Redis late, whose calls were never sent) applies nothing. No marker key per
# reservation: one number per run. KEYS[1]: the run's last applied number; KEYS[2..]: spend hashes (a job's, a
# tenant's day). ARGV: the number, the lifetime of KEYS[1] in seconds, then four per spend hash: calls, input tokens
# and USD to add, and the TTL to set on it (0: leave its TTL alone). Returns 1 when applied now, 0 when applied before.
RESERVE_SPEND = """
if tonumber(redis.call('GET', KEYS[1]) or '0') >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
for i = 2, #KEYS do
  local a = 4 * i - 5
  redis.call('HINCRBY', KEYS[i], 'judge_calls', ARGV[a])
  redis.call('HINCRBY', KEYS[i], 'input_tokens', ARGV[a + 1])
  redis.call('HINCRBYFLOAT', KEYS[i], 'cost_usd', ARGV[a + 2])
  if ARGV[a + 3] ~= '0' then redis.call('EXPIRE', KEYS[i], ARGV[a + 3]) end
end
return 1
"""

# Store a generation job's request unless the tenant's queued jobs are at their cap, in one atomic step: checked and
# written apart, posts arriving together would all pass the check. Each queued job's size is read from its request
# key (ARGV[6] .. job id .. ARGV[7]), and a job whose request is gone (read by a worker, expired) leaves the hash.
# KEYS[1]: the tenant's queued hash; KEYS[2]: the request key. ARGV: job id, request, TTL, most jobs, most bytes, the
# request key's prefix and suffix. Returns "" when stored, else "JOBS <queued>" or "BYTES <queued bytes>".
QUEUE_GENERATION = """
local jobs, held = 0, 0
for _, job in ipairs(redis.call('HKEYS', KEYS[1])) do
  local size = redis.call('STRLEN', ARGV[6] .. job .. ARGV[7])
  if size == 0 then redis.call('HDEL', KEYS[1], job) else jobs = jobs + 1; held = held + size end
end
if jobs >= tonumber(ARGV[4]) then return 'JOBS ' .. jobs end
if held + #ARGV[2] > tonumber(ARGV[5]) then return 'BYTES ' .. held end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], #ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return ''
"""

# Store an app's sampling policy unless the tenant already has its most apps with one, in one atomic step: checked and
# written apart, PUTs of new apps arriving together would all pass the check. KEYS[1]: the tenant's apps set;
# KEYS[2]: the policy key. ARGV: app, policy JSON, TTL, most apps. Returns -1 when stored, else the apps held.
PUT_POLICY = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then
  local held = redis.call('SCARD', KEYS[1])
  if held >= tonumber(ARGV[4]) then return held end
end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return -1
"""
