-- reads.lua: wrk's closed loop of the read scenario's requests
-- (internal/tools/loadtest/wrk.go), one kind per round:
--
--   wrk -t T -c C -d D -s reads.lua URL -- KIND STUDENTS [TOKENFILE]
--
-- KIND is "compact" (GET /m/recommendations/STUDENT), "page" (POST
-- /recommendations, 20 items) or "bare" (GET /v, B1); STUDENTS has one
-- student id a line, each request's student drawn at random; TOKENFILE
-- holds the Authorization bearer (none when absent). setup, bearer and
-- done are wrkcommon.lua's.

function init(args)
  kind, students = args[1], {}
  for line in io.lines(args[2]) do
    if line ~= "" then
      students[#students + 1] = line
    end
  end
  math.randomseed(os.time() * 7919 + id * 104729)
  bearer(args[3])
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
