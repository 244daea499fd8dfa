-- GET <path prefix><id prefix><9 digits> on a random existing row, with a Bearer key.
--
--   wrk -t1 -c16 -d10s -s bench/lookup.lua http://127.0.0.1:8000 -- \
--       /tx/payment-status/ bref 100000 pr_test_...     # payment status, references bref000000000..
--   ... -- /momo/ M 100000 pr_test_...                  # momo status, ids M000000000..
--
-- bench/prefill.py stores exactly these ids. The baselines (L0, L1) get the same kind of request
-- under /bench/ (same reference shape, same Authorization header).
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or ""
dofile(here .. "report.lua")

local path_prefix, id_prefix, count, headers

function init(args)
  path_prefix = args[1]
  id_prefix = args[2]
  count = tonumber(args[3])
  headers = {}
  if args[4] and args[4] ~= "" and args[4] ~= "-" then
    headers["Authorization"] = "Bearer " .. args[4]
  end
  math.randomseed(os.time() * 1000 + (thread_number or 0))
end

function request()
  local id = id_prefix .. string.format("%09d", math.random(0, count - 1))
  return wrk.format("GET", path_prefix .. id, headers)
end
