# frozen_string_literal: true

# One drain as a Sidekiq user runs it (ops/bench/user-drain.sh): N no-op jobs pushed in bulk, then 2 `sidekiq`
# processes at their defaults (concurrency 10, INFO logging to a file), and the queue's size read every 0.5 s
# (Sidekiq::Queue, as its Web UI shows it) until it is empty. Prints one JSON object.
#
#   ruby drain.rb --jobs N --log FILE
#
# Uses and FLUSHES SIDEKIQ_BENCH_REDIS_URL (default: REDIS_URL with db 15), like bench.rb.

require "json"
require "uri"
require "optparse"

base_url = ENV.fetch("REDIS_URL", "redis://127.0.0.1:56379/0")
if ENV["SIDEKIQ_BENCH_REDIS_URL"].to_s.empty?
  u = URI.parse(base_url)
  u.path = "/15"
  ENV["SIDEKIQ_BENCH_REDIS_URL"] = u.to_s
end
ENV["SIDEKIQ_BENCH_COUNT_DONE"] = "0"
require_relative "worker"
require "sidekiq/api"

opts = { jobs: 300_000, log: "/dev/null" }
OptionParser.new do |o|
  o.on("--jobs N", Integer) { |v| opts[:jobs] = v }
  o.on("--log FILE") { |v| opts[:log] = v }
end.parse!(ARGV)

def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)
CLK_TCK = Integer(`getconf CLK_TCK`.strip) rescue 100
def cpu_seconds(pid)
  fields = File.read("/proc/#{pid}/stat").rpartition(")").last.split
  (fields[11].to_i + fields[12].to_i).to_f / CLK_TCK
end

Sidekiq.redis(&:flushdb)
started = mono
(opts[:jobs] / 1000.0).ceil.times do |i|
  count = [1000, opts[:jobs] - i * 1000].min
  Sidekiq::Client.push_bulk("class" => NoopJob, "args" => Array.new(count) { [] })
end
enqueue_s = mono - started

env = { "SIDEKIQ_BENCH_REDIS_URL" => ENV["SIDEKIQ_BENCH_REDIS_URL"], "SIDEKIQ_BENCH_COUNT_DONE" => "0",
        "SIDEKIQ_BENCH_LOG_LEVEL" => ENV.fetch("SIDEKIQ_BENCH_LOG_LEVEL", "info") }
log = File.open(opts[:log], "a")
redis_pid = Integer(Sidekiq.redis(&:info)["process_id"])
redis_before = cpu_seconds(redis_pid)
spawned = mono
pids = Array.new(2) do
  Process.spawn(env, "sidekiq", "-r", "./worker.rb", "-q", SidekiqBench::QUEUE, chdir: __dir__, pgroup: true,
                in: File::NULL, out: log, err: log)
end
first = nil
done = nil
queue = Sidekiq::Queue.new(SidekiqBench::QUEUE)
deadline = spawned + 900
while done.nil? && mono < deadline
  sleep 0.5
  left = queue.size
  first ||= mono if left < opts[:jobs]
  # Sidekiq's busy count is refreshed by its heartbeat every 5 s: the queue empty is when its last jobs were taken.
  done = mono if left.zero?
end
cpu = pids.sum { |p| cpu_seconds(p) rescue 0 }
redis_cpu = cpu_seconds(redis_pid) - redis_before
pids.each { |p| Process.kill("TERM", -p) rescue nil }
pids.each { |p| Process.waitpid(p) rescue nil }
Sidekiq.redis(&:flushdb)
abort("the drain did not finish") if done.nil?
puts JSON.generate(
  "enqueue_s" => enqueue_s.round(3),
  "from_start_per_s" => (opts[:jobs] / (done - spawned)).round(1),
  "from_first_progress_per_s" => first && done > first ? (opts[:jobs] / (done - first)).round(1) : nil,
  "worker_cpu_us_per_job" => (cpu * 1e6 / opts[:jobs]).round(1),
  "redis_cpu_us_per_job" => (redis_cpu * 1e6 / opts[:jobs]).round(1)
)
