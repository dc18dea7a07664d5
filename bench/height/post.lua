-- wrk script: POST the JSON body in $BODY_FILE to /height with a bearer token from $TOKEN.
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d seconds=%.3f p50_ms=%.3f p99_ms=%.3f errors=%d\n",
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
