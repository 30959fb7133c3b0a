-- Deletes a dead job. KEYS: dead. ARGV: prefix, id. Returns 1 when it was there.
if redis.call('ZREM', KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('DEL', ARGV[1] .. 'job:' .. ARGV[2])
return 1
