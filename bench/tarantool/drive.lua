-- The client of bench/tarantool/profiles.lua: calls `search_profiles` over net.box, the
-- way a Tarantool application would, from fibers of one process (net.box multiplexes a
-- fiber's calls over its connection without blocking the others).
--
-- usage: tarantool drive.lua drive ADDR PAIRS.json CONNECTIONS SECONDS WARMUP
--          CONNECTIONS fibers, each on its own connection, call one pair after another
--          (pipelining 1), starting at different pairs; prints one JSON line: requests,
--          seconds, requests_s, mean_us, p50_us, p99_us.
--        tarantool drive.lua check ADDR PAIRS.json
--          prints one JSON line: per pair, [total, ids of the first page of 20].
-- PAIRS.json: [[first, last], ...]. A failed call stops the client with its error.

local netbox = require('net.box')
local fiber = require('fiber')
local clock = require('clock')
local json = require('json')

local mode, addr, pairs_file = arg[1], arg[2], arg[3]
local file = assert(io.open(pairs_file))
local prefix_pairs = json.decode(file:read('*a'))
file:close()

local function connect()
  local connection = netbox.connect(addr, {wait_connected = true})
  assert(connection:is_connected(), 'cannot connect to ' .. addr)
  return connection
end

local function check()
  local connection = connect()
  local answers = {}
  for i, pair in ipairs(prefix_pairs) do
    local total, page = connection:call('search_profiles', {pair[1], pair[2], 0, 20})
    local ids = {}
    for j, profile in ipairs(page) do ids[j] = profile[1] end
    answers[i] = {total, setmetatable(ids, json.array_mt)}
  end
  print(json.encode(answers))
end

-- One fiber's loop: counts the calls sent at or after `timed_from`, stops at `deadline`.
local function run(connection, start, timed_from, deadline, latencies)
  local i = start
  while true do
    local sent = clock.monotonic64()
    if sent >= deadline then return end
    local pair = prefix_pairs[i % #prefix_pairs + 1]
    local ok, total = pcall(connection.call, connection, 'search_profiles', {pair[1], pair[2], 0, 20})
    if not ok or type(total) ~= 'number' then
      io.stderr:write(string.format('search_profiles(%s, %s): %s\n', pair[1], pair[2], tostring(total)))
      os.exit(1)
    end
    if sent >= timed_from then
      latencies[#latencies + 1] = tonumber(clock.monotonic64() - sent)
    end
    i = i + 1
  end
end

local function drive(connections, seconds, warmup)
  local clients = {}
  for c = 1, connections do clients[c] = connect() end
  local timed_from = clock.monotonic64() + math.floor(warmup * 1e9)
  local deadline = timed_from + math.floor(seconds * 1e9)
  local finished = fiber.channel(connections)
  for c = 1, connections do
    fiber.create(function()
      local latencies = {}
      run(clients[c], math.floor((c - 1) * #prefix_pairs / connections), timed_from, deadline, latencies)
      finished:put(latencies)
    end)
  end
  local all = {}
  for _ = 1, connections do
    for _, ns in ipairs(finished:get()) do all[#all + 1] = ns end
  end
  assert(#all > 0, 'no call finished in the timed window')
  table.sort(all)
  local sum = 0
  for _, ns in ipairs(all) do sum = sum + ns end
  local function quantile_us(q) return all[math.floor((#all - 1) * q + 0.5) + 1] / 1000 end
  print(json.encode({requests = #all, seconds = seconds, requests_s = #all / seconds,
                     mean_us = sum / #all / 1000, p50_us = quantile_us(0.5), p99_us = quantile_us(0.99)}))
end

if mode == 'check' then
  check()
elseif mode == 'drive' then
  drive(tonumber(arg[4]), tonumber(arg[5]), tonumber(arg[6]))
else
  error('usage: tarantool drive.lua drive|check ADDR PAIRS.json ...')
end
os.exit(0)
