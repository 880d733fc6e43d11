-- Look up and add the text fingerprints of pages (mpcrawler.frontier.redis.content).
--
-- KEYS[1] is the crawl's `seq` key (the crawl's hash slot).  ARGV: prefix,
-- how many entries a piece keeps, then per page: url, digest (32 hex),
-- host, simhash (16 hex), its 4 pieces of 16 bits (4 hex each) and its URL
-- less the host (its path); a page without a simhash ('' and its pieces
-- '': near duplicates not looked for) is in no piece.  Keys:
--   dig:XXXX   HASH digest (its last 28 hex) -> the first URL whose page had
--              it; 65,536 buckets by the digest's first 4 hex, as the seen set
--   near:HOST  HASH piece 'K:hhhh' -> entries 'SIMHASH PATH', newest last,
--              joined by a newline: the newest `keep` of them
-- Returns, per page, the first URL that had its digest ('' if none: the page
-- is added, and its pieces) and the entries of its pieces ('' if none).

local P, keep = ARGV[1], tonumber(ARGV[2])
local out = {}
local a = 3
while a <= #ARGV do
  local url, digest, host, sim = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local bucket, tail = P .. 'dig:' .. string.sub(digest, 1, 4), string.sub(digest, 5)
  local first = redis.call('HGET', bucket, tail)
  if first then
    out[#out + 1] = first
    out[#out + 1] = ''
  else
    redis.call('HSET', bucket, tail, url)
    local found = {}
    if sim ~= '' then  -- (no simhash: near duplicates not looked for, in no piece)
      local near, entry = P .. 'near:' .. host, sim .. ' ' .. ARGV[a + 8]
      for k = 0, 3 do
        local piece = k .. ':' .. ARGV[a + 4 + k]
        local list = redis.call('HGET', near, piece)
        if list then
          found[#found + 1] = list
          local _, breaks = string.gsub(list, '\n', '')
          if breaks + 1 >= keep then
            list = string.sub(list, string.find(list, '\n', 1, true) + 1)
          end
          list = list .. '\n' .. entry
        else
          list = entry
        end
        redis.call('HSET', near, piece, list)
      end
    end
    out[#out + 1] = ''
    out[#out + 1] = table.concat(found, '\n')
  end
  a = a + 9
end
return out
