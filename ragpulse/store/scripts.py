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

# queued -> running, and nothing else (a failed or finished job keeps its status). KEYS: job hash.
MARK_RUNNING = """
if redis.call('HGET', KEYS[1], 'status') == 'queued' then redis.call('HSET', KEYS[1], 'status', 'running') end
"""
