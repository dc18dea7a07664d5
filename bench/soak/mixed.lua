-- wrk script for bench/soak and bench/static-map: cycles through the lines of a list, each request with
-- the bearer token: "<gzip|plain> <path>" (GET, with or without Accept-Encoding: gzip) or
-- "post <path>\t<body>" (POST of a GeoJSON body).
-- Usage: wrk ... -s mixed.lua <url> -- <list-file> <token>
local requests = {}
local counter = 0

function init(args)
  local list, token = args[1], args[2]
  for line in io.lines(list) do
    local kind, rest = line:match("^(%S+) (.+)$")
    local headers = { ["Authorization"] = "Bearer " .. token }
    if kind == "post" then
      local tab = rest:find("\t", 1, true)
      headers["Content-Type"] = "application/geo+json"
      requests[#requests + 1] = wrk.format("POST", rest:sub(1, tab - 1), headers, rest:sub(tab + 1))
    else
      if kind == "gzip" then headers["Accept-Encoding"] = "gzip" end
      requests[#requests + 1] = wrk.format("GET", rest, headers)
    end
  end
  counter = math.random(#requests)
end

function request()
  counter = counter % #requests + 1
  return requests[counter]
end
