-- wrk script for topogangd's /filter: posts the body written by
--   filter_load --mode names|nodelist|cpu ... --dump-body FILE
-- with a new pod (name and UID) in every request, as kube-scheduler sends them.
--   wrk -t1 -c1 -d10s --latency -s bench/wrk/filter.lua http://127.0.0.1:8888/filter -- FILE
local parts = {}
local kinds = {}  -- the placeholder after parts[i]
local counter = 0
local prefix = "wrk"

-- Runs in the main Lua state once per thread: give each thread its own name space.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  local path = args[1] or "/tmp/filter-body.json"
  local f = assert(io.open(path, "rb"), "cannot open " .. path)
  local body = f:read("*all")
  f:close()
  -- Split at the placeholders WRKPOD (pod name/UID) and WRKGANG (gang name, gang mode).
  local start = 1
  while true do
    local s, e = string.find(body, "WRK[PG][OA][DN]G?", start)
    if not s then break end
    table.insert(parts, string.sub(body, start, s - 1))
    table.insert(kinds, string.sub(body, s, e))
    start = e + 1
  end
  table.insert(parts, string.sub(body, start))
  assert(#parts > 1, path .. " has no WRKPOD placeholder")
  -- Distinct names across wrk threads and runs.
  prefix = "wrk-" .. os.time() .. "-" .. (tid or 0) .. "-"
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local id = prefix .. counter
  local gang = prefix .. "g" .. math.floor(counter / 16)
  local pieces = {parts[1]}
  for i = 2, #parts do
    pieces[#pieces + 1] = kinds[i - 1] == "WRKGANG" and gang or id
    pieces[#pieces + 1] = parts[i]
  end
  return wrk.format(nil, nil, nil, table.concat(pieces))
end
