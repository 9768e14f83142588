-- reads.lua: wrk's closed loop of the read scenario's requests
-- (internal/tools/loadtest/wrk.go), one kind per round:
--
--   wrk -t T -c C -d D -s reads.lua URL -- KIND STUDENTS [TOKENFILE]
--
-- KIND is "compact" (GET /m/recommendations/STUDENT), "page" (POST
-- /recommendations, 20 items) or "bare" (GET /v, B1); STUDENTS has one
-- student id a line, each request's student drawn at random; TOKENFILE
-- holds the Authorization bearer (none when absent). done() writes
-- the totals and a thousand latency quantiles, as swipe.lua's does.

local made = 0

function setup(thread)
  thread:set("id", made)
  made = made + 1
end

function init(args)
  kind, students = args[1], {}
  for line in io.lines(args[2]) do
    if line ~= "" then
      students[#students + 1] = line
    end
  end
  math.randomseed(os.time() * 7919 + id * 104729)
  if args[3] then
    local f = io.open(args[3])
    wrk.headers["Authorization"] = "Bearer " .. f:read("*l")
    f:close()
  end
  if kind == "page" then
    wrk.headers["Content-Type"] = "application/json"
  end
end

function request()
  if kind == "bare" then
    return wrk.format("GET", "/v")
  end
  local s = students[math.random(#students)]
  if kind == "page" then
    return wrk.format("POST", "/recommendations", nil, string.format('{"student_id":"%s","limit":20}', s))
  end
  return wrk.format("GET", "/m/recommendations/" .. s)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("wrk-result requests=%d duration_us=%d status_errors=%d socket_errors=%d\n",
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout))
  local q = {}
  for k = 0, 999 do
    q[#q + 1] = string.format("%d", latency:percentile((k + 0.5) / 10))
  end
  io.write("wrk-latency-us " .. table.concat(q, " ") .. "\n")
end
