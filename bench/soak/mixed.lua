-- wrk script for bench/soak: cycles through "<gzip|plain> <path>" lines of a list (vector and raster
-- tiles, with and without Accept-Encoding: gzip), each request with the bearer token.
-- Usage: wrk ... -s mixed.lua <url> -- <list-file> <token>
local requests = {}
local counter = 0

function init(args)
  local list, token = args[1], args[2]
  for line in io.lines(list) do
    local encoding, path = line:match("^(%S+) (.+)$")
    local headers = { ["Authorization"] = "Bearer " .. token }
    if encoding == "gzip" then headers["Accept-Encoding"] = "gzip" end
    requests[#requests + 1] = wrk.format("GET", path, headers)
  end
  counter = math.random(#requests)
end

function request()
  counter = counter % #requests + 1
  return requests[counter]
end
