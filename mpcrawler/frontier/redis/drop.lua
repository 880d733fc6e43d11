-- Drop queued URLs of one host (mpcrawler.frontier.redis.frontier: `exclude`).
--
-- KEYS[1] is the crawl's `seq` key (the crawl's hash slot).  ARGV: prefix,
-- host, then the queue members to drop.  Members another node leased
-- meanwhile are gone from the queue already and are not counted.  The
-- host's entry in its index follows its new head (a host left with nothing
-- queued stays its owner's, as after its last lease: the owner gives it up
-- with its politeness wait).  Returns how many were dropped.

local P, host = ARGV[1], ARGV[2]
local q = P .. 'q:' .. host
local dropped, embeds = 0, 0
for k = 3, #ARGV do
  local gone = redis.call('ZREM', q, ARGV[k])
  dropped = dropped + gone
  if gone == 1 and string.find(ARGV[k], ',"embed",', 1, true) then embeds = embeds + 1 end
end
if dropped == 0 then return 0 end
redis.call('DECRBY', P .. 'queued', dropped)
if embeds > 0 then redis.call('DECRBY', P .. 'equeued', embeds) end
local owner = redis.call('HGET', P .. 'owner', host)
local index = P .. 'hosts'
if owner then
  index = P .. 'own:' .. owner
  if redis.call('SISMEMBER', P .. 'blk:' .. owner, host) == 1 then index = P .. 'ownb:' .. owner end
end
local head = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
if #head > 0 then
  redis.call('ZADD', index, head[2], host)
else
  redis.call('ZREM', index, host)
end
return dropped
