-- wrkcommon.lua: what every wrk script of the load test shares; wrk.go
-- puts it before the script itself (swipe.lua, reads.lua), which defines
-- init and request.
--
-- setup numbers wrk's threads (the global id in each, from 0) and keeps
-- them for done. bearer sets the Authorization header from a file (a
-- command line is anyone's to read). done writes what the Go side reads
-- back (parseWrk): the totals, a thousand latency quantiles (0.05 % to
-- 99.95 %, µs) and, when a thread kept a table "taken", how many cards of
-- each student's deck it took.

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function bearer(path)
  if path then
    local f = io.open(path)
    wrk.headers["Authorization"] = "Bearer " .. f:read("*l")
    f:close()
  end
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
  for _, t in ipairs(threads) do
    for s, n in pairs(t:get("taken") or {}) do
      io.write(string.format("wrk-taken %s %d\n", s, n))
    end
  end
end
