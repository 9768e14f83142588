-- swipe.lua: wrk's closed loop of POST /swipe, as the load test's swipe
-- scenario sends them (internal/tools/loadtest/wrk.go): a random student
-- swipes the next card of the deck their last compact page dealt, else any
-- school, left or right at random, with a fresh swipe_id.
--
--   wrk -t T -c C -d D -s swipe.lua URL -- DECKS T [TOKENFILE]
--
-- DECKS has a line "STUDENT SCHOOL..." per student (the deck, top card
-- first) and a line "school SCHOOL" per school. Thread i of T swipes as the
-- students of the lines i, i+T, i+2T, ..., so each card is taken by one
-- thread only. TOKENFILE holds the Authorization bearer (none when
-- absent). wrk makes a first request in its first thread that it never
-- sends: the card that request took is skipped, as is one a request cut off
-- at the end of the round took. The cards taken are counted in "taken",
-- which done (wrkcommon.lua) writes out; setup and bearer are its too.

function init(args)
  local nthreads = tonumber(args[2])
  students, decks, schools, taken = {}, {}, {}, {}
  local n = 0
  for line in io.lines(args[1]) do
    if line:sub(1, 7) == "school " then
      schools[#schools + 1] = line:sub(8)
    elseif line ~= "" then
      -- Only this thread's lines are split: the threads start one after
      -- the other, and the first one's clock is already running.
      if n % nthreads == id then
        local fields = {}
        for f in line:gmatch("%S+") do
          fields[#fields + 1] = f
        end
        students[#students + 1] = fields[1]
        decks[fields[1]] = { unpack(fields, 2) }
      end
      n = n + 1
    end
  end
  math.randomseed(os.time() * 7919 + id * 104729)
  wrk.headers["Content-Type"] = "application/json"
  bearer(args[3])
end

local function uuid()
  return string.format("%08x-%04x-4%03x-%04x-%04x%08x", math.random(0, 0xffffffff), math.random(0, 0xffff),
    math.random(0, 0xfff), 0x8000 + math.random(0, 0x3fff), math.random(0, 0xffff), math.random(0, 0xffffffff))
end

function request()
  local s = students[math.random(#students)]
  local deck, i = decks[s], (taken[s] or 0) + 1
  local school
  if i <= #deck then
    school, taken[s] = deck[i], i
  else
    school = schools[math.random(#schools)]
  end
  local dir = "left"
  if math.random(2) == 1 then
    dir = "right"
  end
  local body = string.format('{"student_id":"%s","school_id":"%s","direction":"%s","swipe_id":"%s","time_spent":%.3f}',
    s, school, dir, uuid(), math.random(0, 19999) / 1000)
  return wrk.format("POST", "/swipe", nil, body)
end
