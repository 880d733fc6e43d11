-- One round trip of a node with the shared frontier (mpcrawler.frontier.redis.frontier).
--
-- KEYS[1] is the crawl's `seq` key: it routes the call to the crawl's hash
-- slot in a cluster; every key used here is under the same `mpc:{CRAWL}:`
-- prefix, so all of them live in that one slot.
--
-- The Python side of this protocol is mpcrawler/frontier/redis/protocol.py:
-- each op below is a named type there (A Ack, R Release, D Drop, G GiveUp,
-- GA GiveUpAll, L Leave, S Schedule, X Expedite, B Block, U Unblock, M
-- MarkSeen, PT TakePermits, PS SpendPermits, PR ReturnPermits), and each
-- has a handler in the table `ops` here.
--
-- ARGV: prefix, node, epoch, crawl id, new id, force, then five sections,
-- each starting with its count:
--   ops     n, then per op:  A seq host member wait_ms error nseen (bucket tail)*
--                            R seq          (give a lease back)
--                            D seq host wait_ms (drop a lease: excluded, never fetched,
--                                           not counted done)
--                            G host wait_ms (give up an idle host)
--                            GA             (give up every idle host held)
--                            L              (leave: no longer alive)
--                            S host url depth priority kind due_ms fetched_ms state
--                                           (schedule a revisit: `rv` and `due`)
--                            X url since_ms (due now if fetched before since_ms)
--                            B host         (the node may not lease from host now: blocked
--                                           or being shed; it says so once, not each call)
--                            U host         (it may again)
--                            M n (bucket tail)*  (mark URLs seen: a redirect's hops
--                                           whose page was acked in another partition)
--                            PT n max_pages (partition 0 of a partitioned crawl: grant
--                                           this node up to n page permits)
--                            PS k           (k of them were spent: pages done)
--                            PR k           (k are given back unused)
--   admits  n budget (0: none), then per URL: bucket tail host url depth priority kind lastmod
--   checks  n, then per URL: bucket tail
--   lease   want per_host max_pages(-1: none) lag_ms('': no revisits)
--           before_ms(-1: none) others kept (a partitioned crawl: hosts in the other
--           partitions, and how many of them the node keeps; else 0 0)
--   beat    0 | 1 timeout_ms node_info_json all_held(1: list them)
-- Returns {admitted flags (1 queued, 0 seen before, 2 over the host budget),
--          leased members, seen flags,
--          {queued, leased, done, errors, seen, late, scheduled, next due ms (-1: none),
--           URLs queued ever (seq)},
--          beat reply {reaped, hosts, alive nodes, hosts held (a count, or all of
--          them if asked)}, {epoch, crawl id}, each leased member's revisit
--          entry ('' if none), {hosts this call made the node's, hosts it gave up},
--          {permits granted by this call, pages spent, permits out}}.
--
-- Page permits.  A crawl split over partitions (partitions.py) caps its
-- pages with permits kept in partition 0: `permits` (HASH node -> permits
-- it holds: its leases and those not used yet), `permits_out` (their sum)
-- and `spent` (pages done, crawl-wide).  A grant never takes spent plus out
-- past max_pages; a dead node's permits go back when it is reaped.  A crawl
-- of one partition caps its pages with its own counts (the lease section).
--
-- Ready and blocked hosts.  A node's hosts with URLs queued are in one of two
-- indexes by their best score: `own:NODE` (it may lease from them) and
-- `ownb:NODE` (those in `blk:NODE`, the hosts it said it may not lease from
-- now: ops B and U).  A lease takes the head of `own:NODE`, with no walk past
-- blocked hosts (a walk cost 7 us a blocked host a call, and Redis runs one
-- call at a time).  The node learns which hosts it holds from what each call
-- claimed and gave up, not from the whole set at each heartbeat.
--
-- Revisits.  `rv` maps a URL to its entry (host, depth, priority, kind,
-- fetched_ms, state: see rv_fields); `due` holds the URLs waiting for their due time (ms,
-- the score).  With a lag_ms, the URLs due by now - lag_ms (and before
-- before_ms) are queued (a new seq each) before leasing, and a lease returns
-- its URL's entry.
--
-- Fencing.  Epoch '0' registers the node: it gets a new epoch (a fencing
-- token) and, when the crawl is new, creates its id.  Every other call
-- carries the node's epoch and the crawl's id and is refused, before
-- anything is written, with an error reply:
--   FENCED  the node's epoch is not its current one: it was declared dead
--           (its heartbeat ran out and its work went back) or another
--           process registered with its id since;
--   LOST    the crawl's id is gone (Redis lost its data) or is another
--           crawl's: a tombstone `lost` says why, for every node and status;
--   TAKEN   (registering) a live node has this id: age of its last
--           heartbeat in ms, then its figures.

local P, node, epoch, crawl_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local SCALE = 8589934592 -- score = -priority * 2^33 + seq
-- Embeds (mpcrawler.frontier.base: EMBED_FLOOR = 2^18 - 16 is their band's
-- lowest priority, a page's is below it) score below EMBEDS_BELOW.  They
-- count against no page budget: `equeued`, `eleased` and `edone` count them
-- apart, and once the pages are spent a lease takes embeds only.
local EMBEDS_BELOW = -(262128 - 1) * SCALE
local function is_embed(member)
  return string.find(member, ',"embed",', 1, true) ~= nil
end

local function score_of(member)
  local item = cjson.decode(member)
  return -item[4] * SCALE + item[1]
end

-- The index a host's head is kept in: its owner's (ready or blocked), or the free hosts'.
local function index_key(host)
  local owner = redis.call('HGET', P .. 'owner', host)
  if owner then
    if redis.call('SISMEMBER', P .. 'blk:' .. owner, host) == 1 then return P .. 'ownb:' .. owner end
    return P .. 'own:' .. owner
  end
  return P .. 'hosts'
end

-- Move host's entry from one index to another (if it has one).
local function move(host, from, to)
  local score = redis.call('ZSCORE', from, host)
  if score then
    redis.call('ZREM', from, host)
    redis.call('ZADD', to, score, host)
  end
end

local claimed, released = {}, {} -- this node's hosts, as this call changed them

local function fix_index(host)
  local head = redis.call('ZRANGE', P .. 'q:' .. host, 0, 0, 'WITHSCORES')
  local idx = index_key(host)
  if #head == 0 then redis.call('ZREM', idx, host) else redis.call('ZADD', idx, head[2], host) end
end

local function requeue(host, member)
  local score = score_of(member)
  redis.call('ZADD', P .. 'q:' .. host, score, member)
  redis.call('ZADD', index_key(host), 'LT', score, host)
  redis.call('INCR', P .. 'queued')
  if is_embed(member) then redis.call('INCR', P .. 'equeued') end
end

local function end_lease(seq, host, member)
  if is_embed(member) then redis.call('DECR', P .. 'eleased') end
  redis.call('HDEL', P .. 'leased', seq)
  if redis.call('HINCRBY', P .. 'inflight', host, -1) <= 0 then
    redis.call('HDEL', P .. 'inflight', host)
  end
end

-- Ownership ends; no other node may start on the host before free_at (Redis
-- ms): the last owner's politeness goes with the host.  (The last owner
-- itself, coming back, starts afresh, as a reopened local frontier does.)
local function unown(host, owner, free_at)
  redis.call('HDEL', P .. 'owner', host)
  redis.call('SREM', P .. 'held:' .. owner, host)
  move(host, P .. 'own:' .. owner, P .. 'hosts')
  move(host, P .. 'ownb:' .. owner, P .. 'hosts')
  if owner == node then released[#released + 1] = host end
  if free_at > now then
    redis.call('HSET', P .. 'free_at', host, free_at .. '|' .. owner)
  else
    redis.call('HDEL', P .. 'free_at', host)
  end
end

local function owned_idle(host)
  return redis.call('HGET', P .. 'owner', host) == node
    and redis.call('HEXISTS', P .. 'inflight', host) == 0
end

-- A revisit entry: host, depth, priority, kind, fetched_ms and the state,
-- TAB-separated (JSON never holds a raw TAB, so the state may come last as is).
local function rv_fields(entry)
  return string.match(entry, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t')
end

-- A node's page permits go back (it is dead, or starts a new session).
local function drop_permits(who)
  local held = tonumber(redis.call('HGET', P .. 'permits', who) or '0')
  if held > 0 then redis.call('DECRBY', P .. 'permits_out', held) end
  redis.call('HDEL', P .. 'permits', who)
end

-- Up to k of this node's permits end (spent or given back); how many it held of them.
local function end_permits(k)
  local held = tonumber(redis.call('HGET', P .. 'permits', node) or '0')
  if k > held then k = held end
  if k > 0 then
    redis.call('HINCRBY', P .. 'permits', node, -k)
    redis.call('DECRBY', P .. 'permits_out', k)
  end
end

local function mark_seen(bucket, tail)
  return redis.call('HSETNX', P .. 'seen:' .. bucket, tail, '')
end

-- Mark the n URLs (bucket tail)* from ARGV[i] on seen, counting the new
-- ones; the index past them.
local function mark_all(i, n)
  local added = 0
  for _ = 1, n do
    added = added + mark_seen(ARGV[i], ARGV[i + 1])
    i = i + 2
  end
  if added > 0 then redis.call('INCRBY', P .. 'seen', added) end
  return i
end

-- Give back the leases and hosts of every node whose heartbeat deadline has
-- passed, and end their epochs (their later calls are refused); how many leases.
local function reap()
  local dead = redis.call('ZRANGEBYSCORE', P .. 'alive', '-inf', '(' .. now)
  if #dead == 0 then return 0 end
  local reaped = 0
  local gone = {}
  for _, d in ipairs(dead) do
    gone[d] = true
    redis.call('ZREM', P .. 'alive', d)
    redis.call('HDEL', P .. 'epoch', d)
    drop_permits(d)
  end
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', P .. 'leased', cursor, 'COUNT', 1000)
    cursor = page[1]
    local fields = page[2]
    for k = 1, #fields, 2 do
      local e = cjson.decode(fields[k + 1])
      if gone[e[3]] then
        requeue(e[1], e[2])
        end_lease(fields[k], e[1], e[2])
        reaped = reaped + 1
      end
    end
  until cursor == '0'
  for d in pairs(gone) do
    for _, host in ipairs(redis.call('SMEMBERS', P .. 'held:' .. d)) do
      unown(host, d, now)
    end
    redis.call('DEL', P .. 'held:' .. d, P .. 'own:' .. d, P .. 'ownb:' .. d, P .. 'blk:' .. d)
  end
  return reaped
end

local function lost(why)
  redis.call('SET', P .. 'lost', why)
  return redis.error_reply('LOST ' .. why)
end

-- fencing --------------------------------------------------------------
local tomb = redis.call('GET', P .. 'lost')
if tomb then return redis.error_reply('LOST ' .. tomb) end
local id = redis.call('GET', P .. 'id')
local reaped = 0
if epoch == '0' then
  if not id and crawl_id ~= '' then
    return lost('its keys were gone when node ' .. node .. ' came back (crawl id '
      .. crawl_id .. '): Redis lost its data, or they were deleted')
  end
  if id and crawl_id ~= '' and id ~= crawl_id then
    return redis.error_reply('LOST the name now holds another crawl (id ' .. id
      .. ', not ' .. crawl_id .. ')')
  end
  if not id then
    id = ARGV[5]
    redis.call('SET', P .. 'id', id)
  end
  local deadline = redis.call('ZSCORE', P .. 'alive', node)
  if deadline and tonumber(deadline) >= now then
    if ARGV[6] ~= '1' then
      local beat = tonumber(redis.call('HGET', P .. 'beats', node) or now)
      return redis.error_reply('TAKEN ' .. (now - beat) .. ' '
        .. (redis.call('HGET', P .. 'nodes', node) or '{}'))
    end
    redis.call('ZADD', P .. 'alive', 0, node) -- taken over: the old session is dead now
  end
  reaped = reap()
  -- A new session says its blocks afresh: the last one's (a clean leave
  -- keeps its hosts' entries) are forgotten.
  local ownb = P .. 'ownb:' .. node
  local blocked = redis.call('ZRANGE', ownb, 0, -1, 'WITHSCORES')
  for k = 1, #blocked, 2 do redis.call('ZADD', P .. 'own:' .. node, blocked[k + 1], blocked[k]) end
  redis.call('DEL', ownb, P .. 'blk:' .. node)
  drop_permits(node) -- the last session's leases went back (or will, unacked)
  epoch = tostring(redis.call('INCR', P .. 'epochs'))
  redis.call('HSET', P .. 'epoch', node, epoch) -- registering always beats: alive below
elseif id ~= crawl_id then
  if not id then
    return lost('its keys were gone while node ' .. node .. ' was crawling (crawl id '
      .. crawl_id .. '): Redis lost its data, or they were deleted')
  end
  return redis.error_reply('LOST the name now holds another crawl (id ' .. id .. ')')
elseif redis.call('HGET', P .. 'epoch', node) ~= epoch then
  return redis.error_reply('FENCED node ' .. node .. ' was declared dead or replaced '
    .. '(epoch ' .. epoch .. ' is over)')
end

-- ops ------------------------------------------------------------------
-- One handler per operation (mpcrawler/frontier/redis/protocol.py names
-- them): each reads its fields from ARGV[a], ARGV[a + 1]... and returns the
-- index after them.
local granted = 0 -- page permits (op PT)
local ops = {}

ops.A = function(a) -- Ack: seq host member wait_ms error nseen (bucket tail)*
  local seq, host, member = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local wait, err, nseen = tonumber(ARGV[a + 3]), ARGV[a + 4], tonumber(ARGV[a + 5])
  local entry = redis.call('HGET', P .. 'leased', seq)
  local counted = true
  if entry and cjson.decode(entry)[3] == node then
    end_lease(seq, host, member)
  elseif not entry and redis.call('ZREM', P .. 'q:' .. host, member) == 1 then
    redis.call('DECR', P .. 'queued') -- given back (its node was presumed dead), done now
    if is_embed(member) then redis.call('DECR', P .. 'equeued') end
    fix_index(host)
  else -- leased by another node, or done by one: this record was written twice
    counted = false
    redis.call('INCR', P .. 'late')
  end
  local after = mark_all(a + 6, nseen)
  if counted then
    redis.call('INCR', P .. 'done')
    if is_embed(member) then redis.call('INCR', P .. 'edone') end
    if err == '1' then redis.call('INCR', P .. 'errors') end
  end
  if string.sub(member, -5) == ',"R"]' then -- a revisit's copy: still scheduled?
    local url = cjson.decode(member)[2]
    if not redis.call('ZSCORE', P .. 'due', url) and redis.call('HEXISTS', P .. 'rv', url) == 1 then
      redis.call('ZADD', P .. 'due', 0, url) -- not scheduled again (revisits off): due at once
    end
  end
  if owned_idle(host) and redis.call('EXISTS', P .. 'q:' .. host) == 0 then
    unown(host, node, now + wait)
  end
  return after
end

ops.R = function(a) -- Release: seq
  local seq = ARGV[a]
  local entry = redis.call('HGET', P .. 'leased', seq)
  if entry then
    local e = cjson.decode(entry)
    if e[3] == node then
      requeue(e[1], e[2])
      end_lease(seq, e[1], e[2])
    end
  end
  return a + 1
end

ops.D = function(a) -- Drop: seq host wait_ms
  local seq, host, wait = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  local entry = redis.call('HGET', P .. 'leased', seq)
  if entry then
    local e = cjson.decode(entry)
    if e[3] == node then end_lease(seq, host, e[2]) end
  end
  if owned_idle(host) and redis.call('EXISTS', P .. 'q:' .. host) == 0 then
    unown(host, node, now + wait)
  end
  return a + 3
end

ops.G = function(a) -- GiveUp: host wait_ms
  local host, wait = ARGV[a], tonumber(ARGV[a + 1])
  if owned_idle(host) then unown(host, node, now + wait) end
  return a + 2
end

ops.GA = function(a) -- GiveUpAll
  for _, host in ipairs(redis.call('SMEMBERS', P .. 'held:' .. node)) do
    if owned_idle(host) then unown(host, node, now) end
  end
  return a
end

ops.L = function(a) -- Leave
  redis.call('ZREM', P .. 'alive', node)
  redis.call('HDEL', P .. 'epoch', node)
  drop_permits(node)
  return a
end

ops.S = function(a) -- Schedule: host url depth priority kind due_ms fetched_ms state
  local url = ARGV[a + 1]
  redis.call('HSET', P .. 'rv', url, table.concat({ARGV[a], ARGV[a + 2], ARGV[a + 3],
    ARGV[a + 4], ARGV[a + 6], ARGV[a + 7]}, '\t'))
  redis.call('ZADD', P .. 'due', tonumber(ARGV[a + 5]), url)
  return a + 8
end

ops.X = function(a) -- Expedite: url since_ms
  local url, since = ARGV[a], tonumber(ARGV[a + 1])
  local entry = redis.call('HGET', P .. 'rv', url)
  if entry and redis.call('ZSCORE', P .. 'due', url)
      and tonumber(select(5, rv_fields(entry))) < since then
    redis.call('ZADD', P .. 'due', 0, url)
  end
  return a + 2
end

local function set_blocked(host, blocked)
  local ready, held_back = P .. 'own:' .. node, P .. 'ownb:' .. node
  local changed = redis.call(blocked and 'SADD' or 'SREM', P .. 'blk:' .. node, host)
  if changed == 1 and redis.call('HGET', P .. 'owner', host) == node then
    if blocked then move(host, ready, held_back) else move(host, held_back, ready) end
  end
end

ops.B = function(a) -- Block: host
  set_blocked(ARGV[a], true)
  return a + 1
end

ops.U = function(a) -- Unblock: host
  set_blocked(ARGV[a], false)
  return a + 1
end

ops.M = function(a) -- MarkSeen: n (bucket tail)*
  return mark_all(a + 1, tonumber(ARGV[a]))
end

ops.PT = function(a) -- TakePermits: n max_pages
  local want, max = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local room = max - tonumber(redis.call('GET', P .. 'spent') or '0')
    - tonumber(redis.call('GET', P .. 'permits_out') or '0')
  if want > room then want = room end
  if want > 0 then
    redis.call('HINCRBY', P .. 'permits', node, want)
    redis.call('INCRBY', P .. 'permits_out', want)
    granted = granted + want
  end
  return a + 2
end

ops.PS = function(a) -- SpendPermits: k
  local k = tonumber(ARGV[a])
  end_permits(k)
  redis.call('INCRBY', P .. 'spent', k)
  return a + 1
end

ops.PR = function(a) -- ReturnPermits: k
  end_permits(tonumber(ARGV[a]))
  return a + 1
end

local i = 7
local n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do
  local handler = ops[ARGV[i]]
  if not handler then return redis.error_reply('unknown op ' .. tostring(ARGV[i])) end
  i = handler(i + 1)
end

-- admits ---------------------------------------------------------------
local admitted = {}
n = tonumber(ARGV[i])
local budget = tonumber(ARGV[i + 1])
i = i + 2
local new_seen = 0
for k = 1, n do
  local new
  local host = ARGV[i + 2]
  local budgeted = budget > 0 and ARGV[i + 6] ~= 'embed' -- an embed counts against none
  if budgeted and redis.call('HEXISTS', P .. 'seen:' .. ARGV[i], ARGV[i + 1]) == 0
      and tonumber(redis.call('HGET', P .. 'hostpages', host) or '0') >= budget then
    new = 2 -- over the host's budget: not queued, not marked seen
  else
    new = mark_seen(ARGV[i], ARGV[i + 1])
  end
  if new == 1 then
    if budgeted then redis.call('HINCRBY', P .. 'hostpages', host, 1) end
    new_seen = new_seen + 1
    local seq = redis.call('INCR', P .. 'seq') - 1
    local member = cjson.encode({seq, ARGV[i + 3], tonumber(ARGV[i + 4]),
      tonumber(ARGV[i + 5]), ARGV[i + 6], ARGV[i + 7]})
    requeue(host, member)
  end
  admitted[k] = new
  i = i + 8
end
if new_seen > 0 then redis.call('INCRBY', P .. 'seen', new_seen) end

-- checks ---------------------------------------------------------------
local checked = {}
n = tonumber(ARGV[i]); i = i + 1
for k = 1, n do
  checked[k] = redis.call('HEXISTS', P .. 'seen:' .. ARGV[i], ARGV[i + 1])
  i = i + 2
end

-- lease ----------------------------------------------------------------
local want, per_host, max_pages = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
local lag, before = tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
local others, kept = tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6])
i = i + 7
if lag then -- revisits due by now are queued again, a batch a call
  local cutoff = '' .. (now - lag)
  if before >= 0 and before <= now - lag then cutoff = '(' .. before end
  for _, url in ipairs(redis.call('ZRANGEBYSCORE', P .. 'due', '-inf', cutoff,
      'LIMIT', 0, 256)) do
    local host, depth, priority, kind = rv_fields(redis.call('HGET', P .. 'rv', url))
    local seq = redis.call('INCR', P .. 'seq') - 1
    requeue(host, cjson.encode({seq, url, tonumber(depth), tonumber(priority), kind, '', 'R'}))
    redis.call('ZREM', P .. 'due', url)
  end
end
local leased = {}
local entries = {}
local room = nil -- pages that may still be leased (nil: no budget)
if want > 0 and max_pages >= 0 then
  room = max_pages - tonumber(redis.call('GET', P .. 'done') or '0')
    + tonumber(redis.call('GET', P .. 'edone') or '0')
    - redis.call('HLEN', P .. 'leased') + tonumber(redis.call('GET', P .. 'eleased') or '0')
  if room < want and tonumber(redis.call('GET', P .. 'equeued') or '0') <= 0 then
    want = room
  end
end
if want > 0 then
  local own = P .. 'own:' .. node
  local alive = redis.call('ZCOUNT', P .. 'alive', now, '+inf')
  if alive < 1 then alive = 1 end
  -- A partitioned crawl's share is crawl-wide: the other partitions' hosts
  -- count, and the node's hosts kept there are taken off.
  local here = redis.call('HLEN', P .. 'owner') + redis.call('ZCARD', P .. 'hosts')
  local share = math.ceil((here + others) / alive) - kept
  local held = redis.call('SCARD', P .. 'held:' .. node)
  local taken = {}
  local full = 0 -- hosts at per_host in this call: the ready index's first ones, at most
  local blk = P .. 'blk:' .. node
  local function usable(host) return (taken[host] or 0) < per_host end
  local function best_owned()
    local page = redis.call('ZRANGE', own, 0, full, 'WITHSCORES')
    for k = 1, #page, 2 do
      if usable(page[k]) then return page[k], tonumber(page[k + 1]) end
    end
    return nil
  end
  local function best_free()
    local page = redis.call('ZRANGE', P .. 'hosts', 0, 63, 'WITHSCORES')
    for k = 1, #page, 2 do
      local free_at = redis.call('HGET', P .. 'free_at', page[k])
      local ready = true
      if free_at then
        local at, by = string.match(free_at, '^(%d+)|(.*)$')
        ready = by == node or tonumber(at) <= now
      end
      if ready and usable(page[k]) and redis.call('SISMEMBER', blk, page[k]) == 0 then
        return page[k], tonumber(page[k + 1])
      end
    end
    return nil
  end
  while #leased < want do
    local host, score = best_owned()
    if held < share then
      local free, free_score = best_free()
      if free and (not host or free_score < score) then
        redis.call('HSET', P .. 'owner', free, node)
        redis.call('SADD', P .. 'held:' .. node, free)
        redis.call('ZREM', P .. 'hosts', free)
        redis.call('ZADD', own, free_score, free)
        redis.call('HDEL', P .. 'free_at', free)
        held = held + 1
        host, score = free, free_score
        claimed[#claimed + 1] = free
      end
    end
    if not host then break end
    if room and room <= 0 and score >= EMBEDS_BELOW then break end -- no embed is ready
    local head = redis.call('ZPOPMIN', P .. 'q:' .. host)
    fix_index(host)
    if #head > 0 then
      local seq = cjson.decode(head[1])[1]
      redis.call('HSET', P .. 'leased', seq, cjson.encode({host, head[1], node}))
      redis.call('HINCRBY', P .. 'inflight', host, 1)
      redis.call('DECR', P .. 'queued')
      if is_embed(head[1]) then
        redis.call('DECR', P .. 'equeued')
        redis.call('INCR', P .. 'eleased')
      elseif room then
        room = room - 1
      end
      taken[host] = (taken[host] or 0) + 1
      if taken[host] == per_host then full = full + 1 end
      leased[#leased + 1] = head[1]
      if lag then
        entries[#entries + 1] = redis.call('HGET', P .. 'rv', cjson.decode(head[1])[2]) or ''
      else
        entries[#entries + 1] = ''
      end
    end
  end
end

-- heartbeat ------------------------------------------------------------
local beat = {}
if ARGV[i] == '1' then
  local timeout, info, all_held = tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  redis.call('ZADD', P .. 'alive', now + timeout, node)
  redis.call('HSET', P .. 'nodes', node, info)
  redis.call('HSET', P .. 'beats', node, now)
  redis.call('SETNX', P .. 'started', now)
  reaped = reaped + reap()
  local hosts = redis.call('HLEN', P .. 'owner') + redis.call('ZCARD', P .. 'hosts')
  local alive = redis.call('ZCOUNT', P .. 'alive', now, '+inf')
  local held = P .. 'held:' .. node
  beat = {reaped, hosts, alive, all_held == '1' and redis.call('SMEMBERS', held)
    or redis.call('SCARD', held)}
end

local counts = {
  tonumber(redis.call('GET', P .. 'queued') or '0'),
  redis.call('HLEN', P .. 'leased'),
  tonumber(redis.call('GET', P .. 'done') or '0'),
  tonumber(redis.call('GET', P .. 'errors') or '0'),
  tonumber(redis.call('GET', P .. 'seen') or '0'),
  tonumber(redis.call('GET', P .. 'late') or '0'),
  redis.call('ZCARD', P .. 'due'),
  -1,
  tonumber(redis.call('GET', P .. 'seq') or '0'),
  tonumber(redis.call('GET', P .. 'equeued') or '0'),
  tonumber(redis.call('GET', P .. 'eleased') or '0'),
  tonumber(redis.call('GET', P .. 'edone') or '0'),
}
local first = redis.call('ZRANGE', P .. 'due', 0, 0, 'WITHSCORES')
if #first > 0 then counts[8] = tonumber(first[2]) end
local permits = {granted, tonumber(redis.call('GET', P .. 'spent') or '0'),
  tonumber(redis.call('GET', P .. 'permits_out') or '0')}
return {admitted, leased, checked, counts, beat, {epoch, id}, entries, {claimed, released},
  permits}
