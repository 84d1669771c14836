-- The Tarantool side of bench/procedure_search.py: a throwaway instance holding the user
-- profiles, and the profile search as a stored Lua function, written as a Tarantool user
-- would (a seek on the composite index per first name, not a scan).
--
-- usage: tarantool profiles.lua LISTEN WORK_DIR USERS.tsv MEMTX_MB
-- Loads the TSV (id, first_name, last_name, age, city, interests), then prints one line,
-- `ready ROWS LOAD_SECONDS`, once it serves LISTEN. Never writes outside WORK_DIR.
--
-- wal_mode = 'none': the benchmark only reads, so the log would cost the load and nothing
-- else; no checkpoint is taken either (checkpoint_interval = 0).

local clock = require('clock')

local listen, work_dir, tsv, memtx_mb = arg[1], arg[2], arg[3], tonumber(arg[4])
assert(listen and work_dir and tsv and memtx_mb, 'usage: tarantool profiles.lua LISTEN WORK_DIR USERS.tsv MEMTX_MB')

box.cfg{
  work_dir = work_dir,
  memtx_memory = memtx_mb * 1024 * 1024,
  wal_mode = 'none',
  checkpoint_interval = 0,
  log = work_dir .. '/tarantool.log',
}

local users = box.schema.space.create('users', {format = {
  {name = 'id', type = 'unsigned'}, {name = 'first_name', type = 'string'},
  {name = 'last_name', type = 'string'}, {name = 'age', type = 'unsigned'},
  {name = 'city', type = 'string'}, {name = 'interests', type = 'string'},
}})
users:create_index('primary', {type = 'TREE', parts = {{field = 'id', type = 'unsigned'}}})
-- A non-unique TREE index is ordered by its parts and then the primary key: (first_name,
-- last_name, id), the order the search pages in.
users:create_index('names', {type = 'TREE', unique = false, parts = {
  {field = 'first_name', type = 'string', collation = 'unicode_ci'},
  {field = 'last_name', type = 'string', collation = 'unicode_ci'},
}})

local BATCH_ROWS = 10000
local started = clock.monotonic()
local rows = 0
box.begin()
for line in io.lines(tsv) do
  local id, first, last, age, city, interests = line:match('^(%d+)\t([^\t]*)\t([^\t]*)\t(%d+)\t([^\t]*)\t(.*)$')
  assert(id, 'not a profile line: ' .. line)
  users:insert{tonumber(id), first, last, tonumber(age), city, interests}
  rows = rows + 1
  if rows % BATCH_ROWS == 0 then
    box.commit()
    box.begin()
  end
end
box.commit()
local load_seconds = clock.monotonic() - started

-- Whether `name` starts with `prefix` (given in lower case), ignoring case as unicode_ci
-- does for these ASCII names.
local function starts_with(name, prefix)
  return name:sub(1, #prefix):lower() == prefix
end

-- The profiles whose first and last names start with the prefixes, ordered by (first_name,
-- last_name, id): the page at offset/limit and the number of matches. For each distinct
-- first name in the prefix's range it seeks (name, last prefix) and reads while the last
-- name matches, then jumps past that first name.
function search_profiles(first, last, offset, limit)
  first, last = first:lower(), last:lower()
  local names = box.space.users.index.names
  local total, page = 0, {}
  local next_name = names:select({first}, {iterator = 'GE', limit = 1})[1]
  while next_name ~= nil and starts_with(next_name[2], first) do
    local name = next_name[2]
    for _, profile in names:pairs({name, last}, {iterator = 'GE'}) do
      if profile[2]:lower() ~= name:lower() or not starts_with(profile[3], last) then
        break
      end
      total = total + 1
      if total > offset and #page < limit then
        page[#page + 1] = profile
      end
    end
    next_name = names:select({name}, {iterator = 'GT', limit = 1})[1]
  end
  return total, page
end

box.schema.user.grant('guest', 'super')
box.cfg{listen = listen}
print(string.format('ready %d %.3f', rows, load_seconds))
io.stdout:flush()
