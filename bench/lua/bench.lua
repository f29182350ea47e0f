-- One wrk script for every benchmark scenario; bench/wrk.py drives it.
--
--   wrk -t T -c C -d D -s bench/lua/bench.lua http://127.0.0.1:PORT -- mode=<mode> key=value ...
--
-- Modes
--   get     GET the paths listed in `paths` (a file, one path per line), round-robin; `tokens` optional;
--           `inm` (optional) is sent as If-None-Match (the conditional read: 304 while the tag is current).
--   token   POST /v1/auth/token with the credentials in `creds` (file: one "client_id<TAB>secret" per line).
--   quote   POST /v1/quotes with the JSON bodies in `bodies`; quote ids of 201 answers are kept (as
--           "thread:quote_id") and returned by done() so that the `order` mode can consume them.
--   order   POST /v1/orders (multipart) once per quote id listed in `quotes`.
--   flow    the partner flow: POST /v1/quotes, then POST /v1/orders with the quote it returned.
--
-- With count=1 (the counting pass) every response's X-Bench-Queries, X-Bench-Transactions and X-Bench-Redis
-- headers (bench/counting.py) are summed and reported by done() as "counted".
--
-- Every thread picks its bearer token from `tokens` (file, one per line) by thread id, so the load is
-- spread over several partners. done() prints one line "BENCHJSON {...}" that bench/wrk.py parses.

local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

local function read_lines(path)
  local lines = {}
  if path == nil then return lines end
  local f = assert(io.open(path, "r"))
  for line in f:lines() do
    if line ~= "" then table.insert(lines, line) end
  end
  f:close()
  return lines
end

local function parse_args(args)
  local opts = {}
  for _, arg in ipairs(args) do
    local k, v = arg:match("^([%w_]+)=(.*)$")
    if k then opts[k] = v end
  end
  return opts
end

local BOUNDARY = "----benchboundary7MA4YWxkTrZu0gW"

local function multipart(fields)
  local parts = {}
  for _, kv in ipairs(fields) do
    table.insert(parts, "--" .. BOUNDARY .. "\r\nContent-Disposition: form-data; name=\"" .. kv[1] ..
      "\"\r\n\r\n" .. kv[2] .. "\r\n")
  end
  table.insert(parts, "--" .. BOUNDARY .. "--\r\n")
  return table.concat(parts)
end

-- Per-thread state (each thread has its own Lua state).
local mode, opts, items, cursor, auth, pending
statuses, codes, quote_ids, orders_created, quotes_created = {}, {}, {}, 0, 0
counted = { responses = 0, queries = 0, transactions = 0, redis = 0 }
local order_headers, json_headers
local make_request, on_response

-- Defined at load time so that wrk sees a dynamic script; init() picks the handlers for the mode.
function request()
  return make_request()
end

function response(status, headers, body)
  on_response(status, headers, body)
end

local function count_status(status, body)
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
  if status >= 400 then
    local code = body:match('"code"%s*:%s*"([%u_]+)"') or "?"
    codes[code] = (codes[code] or 0) + 1
  end
end

local COUNT_HEADERS = { ["x-bench-queries"] = "queries", ["x-bench-transactions"] = "transactions",
  ["x-bench-redis"] = "redis" }

local function count_round_trips(headers)
  local seen = false
  for name, value in pairs(headers) do
    local field = COUNT_HEADERS[name:lower()]
    if field then
      counted[field] = counted[field] + (tonumber(value) or 0)
      seen = true
    end
  end
  if seen then counted.responses = counted.responses + 1 end
end

local function order_request(quote_id)
  local body = multipart({
    { "quote_id", quote_id },
    { "delivery_type", "mobile_transfer" },
    { "is_ready_to_deliver", "true" },
  })
  return wrk.format("POST", "/v1/orders", order_headers, body)
end

local function quote_request()
  cursor = cursor % #items + 1
  return wrk.format("POST", "/v1/quotes", json_headers, items[cursor])
end

function init(args)
  opts = parse_args(args)
  mode = opts.mode or "get"
  cursor = id  -- threads start at different items
  pending = {}
  local tokens = read_lines(opts.tokens)
  if #tokens > 0 then auth = "Bearer " .. tokens[(id % #tokens) + 1] end
  json_headers = { ["Content-Type"] = "application/json", ["Accept"] = "application/json" }
  order_headers = { ["Content-Type"] = "multipart/form-data; boundary=" .. BOUNDARY, ["Accept"] = "application/json" }
  if auth then
    json_headers["Authorization"] = auth
    order_headers["Authorization"] = auth
  end

  if mode == "get" then
    local paths = read_lines(opts.paths)
    items = {}
    local headers = { ["Accept"] = "application/json" }
    if auth then headers["Authorization"] = auth end
    if opts.inm then headers["If-None-Match"] = opts.inm end
    for i, p in ipairs(paths) do items[i] = wrk.format("GET", p, headers, nil) end
    make_request = function()
      cursor = cursor % #items + 1
      return items[cursor]
    end
    response = nil  -- wrk skips parsing; status >= 400 still shows up in summary.errors.status
  elseif mode == "token" then
    items = {}
    for i, line in ipairs(read_lines(opts.creds)) do
      local cid, secret = line:match("^([^\t]+)\t(.+)$")
      local body = '{"client_id":"' .. cid .. '","client_secret":"' .. secret ..
        '","grant_type":"client_credentials"}'
      items[i] = wrk.format("POST", "/v1/auth/token", { ["Content-Type"] = "application/json" }, body)
    end
    make_request = function()
      cursor = cursor % #items + 1
      return items[cursor]
    end
    on_response = count_status
  elseif mode == "quote" then
    items = read_lines(opts.bodies)
    make_request = quote_request
    on_response = function(status, headers, body)
      count_status(status, body)
      if status == 201 then
        quotes_created = quotes_created + 1
        local qid = body:match('"quote_id"%s*:%s*"([^"]+)"')
        -- Tagged with the thread: its token's partner owns the quote, and only that partner may order it.
        if qid then table.insert(quote_ids, id .. ":" .. qid) end
      end
    end
  elseif mode == "order" then
    -- Each thread orders the quotes its own thread of the quote run made (same thread id, same token), so
    -- no two threads send the same quote and no partner orders another's. Untagged ids: thread k of n takes
    -- ids k, k+n, k+2n ...
    items = {}
    local nthreads = tonumber(opts.threads or "1")
    for i, line in ipairs(read_lines(opts.quotes)) do
      local tid, q = line:match("^(%d+):(.+)$")
      if tid then
        if tonumber(tid) == id then table.insert(items, q) end
      elseif (i - 1) % nthreads == id then
        table.insert(items, line)
      end
    end
    if #items == 0 then items = { "none" } end  -- a thread whose quote run made none: 4xx, reported
    cursor = 0
    make_request = function()
      cursor = cursor + 1
      -- Past the end the last quote is resent: the 422s it gets show up in the report, never hidden.
      return order_request(items[math.min(cursor, #items)])
    end
    on_response = function(status, headers, body)
      count_status(status, body)
      if status == 201 then orders_created = orders_created + 1 end
    end
  elseif mode == "flow" then
    items = read_lines(opts.bodies)
    make_request = function()
      local qid = table.remove(pending)
      if qid then return order_request(qid) end
      return quote_request()
    end
    on_response = function(status, headers, body)
      count_status(status, body)
      if status == 201 then
        if body:find('"order_id"', 1, true) then
          orders_created = orders_created + 1
        else
          local qid = body:match('"quote_id"%s*:%s*"([^"]+)"')
          if qid then
            quotes_created = quotes_created + 1
            table.insert(pending, qid)
          end
        end
      end
    end
  else
    error("unknown mode " .. mode)
  end
  if opts.count == "1" then
    local handler = on_response
    response = function(status, headers, body)
      count_round_trips(headers)
      if handler then handler(status, headers, body) end
    end
  end
end

local function json_string(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
end

local function json_map(t)
  local parts = {}
  for k, v in pairs(t) do table.insert(parts, json_string(k) .. ":" .. tostring(v)) end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function merge(into, t)
  for k, v in pairs(t or {}) do into[k] = (into[k] or 0) + v end
end

function done(summary, latency, requests)
  local all_statuses, all_codes, orders, quotes, ids = {}, {}, 0, 0, {}
  local all_counted = {}
  for _, thread in ipairs(threads) do
    merge(all_counted, thread:get("counted"))
    merge(all_statuses, thread:get("statuses"))
    merge(all_codes, thread:get("codes"))
    orders = orders + (thread:get("orders_created") or 0)
    quotes = quotes + (thread:get("quotes_created") or 0)
    for _, q in ipairs(thread:get("quote_ids") or {}) do table.insert(ids, json_string(q)) end
  end
  local e = summary.errors
  local out = {
    '"duration_us":' .. summary.duration,
    '"requests":' .. summary.requests,
    '"bytes":' .. summary.bytes,
    '"errors":{"connect":' .. e.connect .. ',"read":' .. e.read .. ',"write":' .. e.write ..
      ',"status":' .. e.status .. ',"timeout":' .. e.timeout .. '}',
    '"latency_us":{"min":' .. latency.min .. ',"mean":' .. latency.mean .. ',"max":' .. latency.max ..
      ',"p50":' .. latency:percentile(50) .. ',"p90":' .. latency:percentile(90) ..
      ',"p99":' .. latency:percentile(99) .. ',"p999":' .. latency:percentile(99.9) .. '}',
    '"statuses":' .. json_map(all_statuses),
    '"codes":' .. json_map(all_codes),
    '"orders_created":' .. orders,
    '"quotes_created":' .. quotes,
    '"quote_ids":[' .. table.concat(ids, ",") .. ']',
    '"counted":' .. json_map(all_counted),
  }
  io.write("BENCHJSON {" .. table.concat(out, ",") .. "}\n")
end
