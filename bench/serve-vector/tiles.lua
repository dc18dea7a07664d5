-- wrk script: cycles through every tile of a list in shuffled order (one list per run).
-- Usage: wrk ... -s tiles.lua <url> -- <tile-list-file> <path-prefix> [token]
local paths = {}
local counter = 0

function init(args)
  local list, prefix, token = args[1], args[2], args[3]
  for line in io.lines(list) do
    paths[#paths + 1] = prefix .. line
  end
  -- Each wrk thread starts at a different point of the (already shuffled) list.
  counter = math.random(#paths)
  wrk.headers["Accept-Encoding"] = "gzip"
  if token and token ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. token
  end
end

function request()
  counter = counter % #paths + 1
  return wrk.format("GET", paths[counter])
end

local errors = 0
function response(status, headers, body)
  if status ~= 200 and status ~= 204 then errors = errors + 1 end
end
