#!lua name=profiles
-- Profile search, a procedure over documents: the profiles whose first and last names
-- start with the prefixes given (case-insensitive with the indexes below), a page at a
-- time, in one round trip.
--
-- The namespace (SQL; the composite index lets the planner seek each first name's last
-- names instead of scanning):
--   CREATE TABLE profiles (id INT PRIMARY KEY, first_name TEXT COLLATE utf8_ci,
--                          last_name TEXT COLLATE utf8_ci, city TEXT)
--   CREATE INDEX profiles_names ON profiles (first_name, last_name)
--
-- Load and call it (the page, a Lua table, is answered as a JSON object: DOC.CALL, HTTP
-- and Python all answer it the same way; FCALL would flatten it by Redis' rules):
--   redis-cli -x FUNCTION LOAD REPLACE < examples/procedures/profiles.lua
--   redis-cli DOC.CALL search_profiles an sm 0 20
--     -> {"total": 2, "items": [{"id": 7, "first_name": "Anna", ...}, ...]}
--   curl -X POST localhost:7380/api/v1/functions/search_profiles -d '["an", "sm", 0, 20]'
--   db.call("search_profiles", "an", "sm", 0, 20)      (Python)
-- Arguments: first-name prefix, last-name prefix (either may be empty), offset, limit.

local LIMIT_MAX = 100

-- A prefix as a LIKE pattern: its own `%`, `_` and `\` match themselves.
local function starting_with(prefix)
  return (prefix:gsub('[%%_\\]', '\\%0')) .. '%'
end

local function search_profiles(keys, args)
  local first, last = args[1] or '', args[2] or ''
  local offset = math.max(tonumber(args[3]) or 0, 0)
  local limit = math.min(math.max(tonumber(args[4]) or 20, 1), LIMIT_MAX)
  local filter = {}
  if first ~= '' then
    filter[#filter + 1] = {field = 'first_name', op = 'like', value = starting_with(first)}
  end
  if last ~= '' then
    filter[#filter + 1] = {field = 'last_name', op = 'like', value = starting_with(last)}
  end
  local query = {sort = {'first_name', 'last_name', 'id'}, offset = offset, limit = limit, total = true}
  if #filter > 0 then query.filter = filter end
  local page = hotset.query('profiles', query)
  return {total = page.total, items = hotset.array(page.items)}
end

redis.register_function{
  function_name = 'search_profiles',
  callback = search_profiles,
  flags = {'no-writes'},
  description = 'profiles by first and last name prefix, paged: first, last, offset, limit',
}
