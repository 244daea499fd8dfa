-- Shared by the bench scripts (loaded with dofile): when wrk finishes, print one machine-readable
-- line that bench/run.py parses. Latencies are in microseconds, as wrk measures them.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,'
      .. '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},'
      .. '"latency_us":{"min":%d,"mean":%.1f,"max":%d,"stdev":%.1f,'
      .. '"p50":%d,"p75":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.max, latency.stdev,
    latency:percentile(50), latency:percentile(75), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9)))
end

-- Number each wrk thread, so per-thread random seeds and generated references differ.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end
