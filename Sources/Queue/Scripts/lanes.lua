-- Fair lanes (`fair:` in a kind's file; Fairness.swift). Per queue, under its base `prefix:{queue}:`:
-- `lanes` the ring of lanes with jobs waiting, each once; `lane:<name>` a lane's job ids in order; `lanes:held` the
-- jobs past their lanes (on the stream, or held by a worker until they take their provider token or start), scored
-- by when they left their lane; `lanes:waiting` how many jobs wait in lanes (the queue's depth counts them);
-- `lanes:window` how many may be held at once (every fair enqueue sets it); `lanes:weights` the weight of each lane
-- whose last job's class has one above 1, and `lanes:turns` how many turns in a row such a lane has had this round.
-- Moves jobs from their lanes to the stream, one lane's turn at a time, while the window has room. When it is full,
-- its oldest job is let go if its record says it no longer waits or runs (an end no script reported).
local function feedLanes(base, stream, now)
  local ring, held = base .. 'lanes', base .. 'lanes:held'
  local weights, turns = base .. 'lanes:weights', base .. 'lanes:turns'
  local window = tonumber(redis.call('GET', base .. 'lanes:window') or '0')
  while true do
    if redis.call('ZCARD', held) >= window then
      local oldest = redis.call('ZRANGE', held, 0, 0)[1]
      if not oldest then return end
      local f = redis.call('HMGET', base .. 'job:' .. oldest, 'kind', 'status')
      if f[1] and (not f[2] or f[2] == 'queued' or f[2] == 'running') then return end
      redis.call('ZREM', held, oldest)
    else
      local lane = redis.call('LPOP', ring)
      if not lane then return end
      local key = base .. 'lane:' .. lane
      local id = redis.call('LPOP', key)
      -- A weighted lane stays first for `weight` turns, then goes to the back; its weight goes when it empties.
      local weight = tonumber(redis.call('HGET', weights, lane) or '1')
      if redis.call('LLEN', key) > 0 then
        if weight > 1 and redis.call('HINCRBY', turns, lane, 1) < weight then
          redis.call('LPUSH', ring, lane)
        else
          if weight > 1 then redis.call('HDEL', turns, lane) end
          redis.call('RPUSH', ring, lane)
        end
      elseif weight > 1 then
        redis.call('HDEL', weights, lane)
        redis.call('HDEL', turns, lane)
      end
      if id then
        redis.call('DECR', base .. 'lanes:waiting')
        redis.call('XADD', stream, '*', 'id', id)
        redis.call('ZADD', held, now, id)
      end
    end
  end
end
-- A job waits in its lane (its record is written); it moves up at once if the window has room.
local function joinLane(base, stream, id, lane, window, weight, now)
  local key = base .. 'lane:' .. lane
  if redis.call('RPUSH', key, id) == 1 then redis.call('RPUSH', base .. 'lanes', lane) end
  -- The lane's weight is its last job's class's (nil: the kind's lanes are not weighted).
  if weight and weight > 1 then
    redis.call('HSET', base .. 'lanes:weights', lane, weight)
  elseif weight and redis.call('HDEL', base .. 'lanes:weights', lane) == 1 then
    redis.call('HDEL', base .. 'lanes:turns', lane)
  end
  redis.call('INCR', base .. 'lanes:waiting')
  redis.call('SET', base .. 'lanes:window', window)
  feedLanes(base, stream, now)
end
-- Fair jobs that leave the window (took their token, started, or ended without running): the next lanes' jobs move up.
local function leaveLanes(base, stream, ids, now)
  if #ids == 0 then return end
  if redis.call('ZREM', base .. 'lanes:held', unpack(ids)) > 0 then feedLanes(base, stream, now) end
end
