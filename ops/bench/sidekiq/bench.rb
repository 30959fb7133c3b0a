# frozen_string_literal: true

# Sidekiq reference benchmark driver. Prints one JSON object on stdout, logs on stderr.
#
#   ruby bench.rb [--runs N]
#
# Redis: REDIS_URL (default redis://127.0.0.1:56379/0). Everything happens in
# SIDEKIQ_BENCH_REDIS_URL (default: REDIS_URL with db 15), which this script
# FLUSHDBs before starting the workers and after stopping them. Nothing else is
# flushed.
#
# Definitions (shared with the Swift side):
#   bulk_enqueue_per_s   20,000 no-op jobs, Sidekiq::Client.push_bulk, batches of 1,000.
#   single_enqueue_per_s 20,000 no-op jobs, Sidekiq::Client.push one by one.
#     Both enqueue figures push to queue "bench_enqueue", which no worker
#     listens on (the 2 workers are running but idle), then the queue is deleted.
#   process_per_s        2 idle workers x 10 threads; a forked producer process
#     bulk-enqueues 20,000 no-op jobs (batches of 1,000) to "bench"; the driver
#     polls GET bench:done every 5 ms (monotonic clock); t_first = first poll with
#     done > baseline, t_last = first poll with done >= baseline + 20,000;
#     rate = 20,000 / (t_last - t_first). bench:done is INCR'd by a server
#     middleware after each job (see worker.rb for why stat:processed is unusable).
#   pickup_*_ms          2,000 jobs one by one at 200/s (monotonic pacing), arg =
#     Time.now.to_f at enqueue; the job RPUSHes (now - stamp) in us to
#     bench:latency; nearest-rank p50 / p99, and max.
#   worker_cpu_us_per_job  sum over both workers of utime+stime (/proc/PID/stat,
#     / CLK_TCK) at t_last minus just before the process-phase enqueue, / 20,000.
#   redis_cpu_us_per_job_*  the Redis server's used_cpu_sys + used_cpu_user (INFO cpu)
#     over the bulk-enqueue phase, and over the process phase (the producer's
#     enqueue, the fetches, the acks and the done counter), / 20,000.
# With --runs N each figure is the median over the runs; per-run values in "runs".
# Workers are started once per invocation, checked ready (both in Sidekiq's
# process set), warmed up with 1,000 no-op jobs, and reused by every run.

require "json"
require "uri"
require "optparse"
require "etc"

DIR = File.expand_path(__dir__)

def log(msg)
  $stderr.puts("[sidekiq-bench #{Time.now.strftime('%H:%M:%S.%L')}] #{msg}")
  $stderr.flush
end

base_url = ENV.fetch("REDIS_URL", "redis://127.0.0.1:56379/0")
bench_url = ENV["SIDEKIQ_BENCH_REDIS_URL"].to_s
if bench_url.empty?
  u = URI.parse(base_url)
  u.path = "/15"
  bench_url = u.to_s
end
ENV["SIDEKIQ_BENCH_REDIS_URL"] = bench_url

require_relative "worker"
require "sidekiq/api"

N_JOBS = 20_000
BATCH = 1_000
WARMUP_JOBS = 1_000
LAT_JOBS = 2_000
LAT_RATE = 200.0
POLL = 0.005
WORKERS = 2
CONCURRENCY = 10
ENQ_QUEUE = "bench_enqueue"
CLK_TCK = Integer(`getconf CLK_TCK`.strip) rescue 100

opts = { runs: 3 }
OptionParser.new do |o|
  o.banner = "usage: bench.rb [--runs N]"
  o.on("--runs N", Integer, "number of runs (default 3); figures are medians") { |v| opts[:runs] = v }
end.parse!(ARGV)
abort("--runs must be >= 1") if opts[:runs] < 1

def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def redis(&blk) = Sidekiq.redis(&blk)

# Seconds of CPU the Redis server has used (main thread and background threads), from INFO cpu.
def redis_cpu
  info = redis { |c| c.info("cpu") }
  info["used_cpu_sys"].to_f + info["used_cpu_user"].to_f
end

def cpu_ticks(pid)
  fields = File.read("/proc/#{pid}/stat").split(") ", 2)[1].split
  # after "pid (comm) ": state=0 ... utime=11 stime=12 (fields 14 and 15 of stat)
  Integer(fields[11]) + Integer(fields[12])
end

def wait_until(what, timeout)
  deadline = mono + timeout
  until yield
    raise "timeout after #{timeout}s waiting for #{what}" if mono > deadline
    sleep 0.05
  end
end

def done_count = redis { |c| c.get(SidekiqBench::DONE_KEY) }.to_i

def noop_payloads(n) = Array.new(n) { [] }

# ---- worker processes -----------------------------------------------------

OWNER_PID = Process.pid
$workers = []

def start_workers
  env = { "REDIS_URL" => ENV["SIDEKIQ_BENCH_REDIS_URL"], "SIDEKIQ_BENCH_REDIS_URL" => ENV["SIDEKIQ_BENCH_REDIS_URL"] }
  WORKERS.times do
    pid = Process.spawn(env, "sidekiq", "-r", "./worker.rb", "-c", CONCURRENCY.to_s, "-q", SidekiqBench::QUEUE,
                        chdir: DIR, pgroup: true, in: File::NULL, out: $stderr, err: $stderr)
    $workers << pid
    log "started sidekiq pid #{pid}"
  end
end

def alive?(pid)
  Process.waitpid(pid, Process::WNOHANG).nil?
rescue Errno::ECHILD
  false
end

def stop_workers
  return if Process.pid != OWNER_PID || $workers.empty?
  pids = $workers.dup
  $workers.clear
  pids.each { |p| Process.kill("TERM", -p) rescue nil } # whole process group
  deadline = mono + 15
  pids.each do |p|
    sleep 0.05 while alive?(p) && mono < deadline
    if alive?(p)
      log "sidekiq #{p} still alive, KILL"
      Process.kill("KILL", -p) rescue nil
      Process.waitpid(p) rescue nil
    end
  end
  log "stopped sidekiq pids #{pids.join(' ')}"
end

at_exit { stop_workers }
%w[INT TERM HUP].each { |sig| trap(sig) { raise SignalException, sig } }

def workers_ready?
  pids = Sidekiq::ProcessSet.new.map { |p| p["pid"] }
  $workers.all? { |w| pids.include?(w) }
end

def check_workers_alive!
  $workers.each { |p| raise "sidekiq worker #{p} died" unless alive?(p) }
end

# ---- measurements ---------------------------------------------------------

def clear_enqueue_queue
  redis do |c|
    c.del("queue:#{ENQ_QUEUE}")
    c.srem("queues", ENQ_QUEUE)
  end
end

# Times `block` pushing N_JOBS jobs to the unworked enqueue queue; checks they all arrived; returns jobs/s.
def timed_enqueue(name)
  clear_enqueue_queue
  t0 = mono
  yield
  dt = mono - t0
  n = redis { |c| c.llen("queue:#{ENQ_QUEUE}") }
  raise "#{name}: expected #{N_JOBS} jobs, found #{n}" unless n == N_JOBS
  clear_enqueue_queue
  N_JOBS / dt
end

def bulk_enqueue
  payload = noop_payloads(BATCH)
  timed_enqueue("bulk enqueue") do
    (N_JOBS / BATCH).times do
      Sidekiq::Client.push_bulk("class" => NoopJob, "args" => payload, "queue" => ENQ_QUEUE)
    end
  end
end

def single_enqueue
  timed_enqueue("single enqueue") do
    N_JOBS.times { Sidekiq::Client.push("class" => NoopJob, "args" => [], "queue" => ENQ_QUEUE) }
  end
end

# Bulk-enqueue n jobs to the worker queue from a separate (forked) producer
# process, so the driver's 5 ms polling is not slowed by the producer's GVL use.
def fork_producer(n)
  fork do
    Sidekiq.redis = { url: SidekiqBench::REDIS_URL } # fresh pool, no inherited sockets
    payload = noop_payloads(BATCH)
    (n / BATCH).times { Sidekiq::Client.push_bulk("class" => NoopJob, "args" => payload) }
    exit!(0) # skip at_exit handlers (they belong to the driver)
  rescue Exception => e # rubocop:disable Lint/RescueException
    $stderr.puts("producer failed: #{e.class}: #{e.message}")
    exit!(1)
  end
end

def process_phase
  check_workers_alive!
  wait_until("idle worker queue", 30) { redis { |c| c.llen("queue:#{SidekiqBench::QUEUE}") }.zero? }
  poller = Redis.new(url: SidekiqBench::REDIS_URL)
  baseline = poller.get(SidekiqBench::DONE_KEY).to_i
  stat0 = poller.get("stat:processed").to_i
  stat_steps = [] # (for the log) how Sidekiq's own processed counter moves meanwhile
  target = baseline + N_JOBS
  cpu0 = $workers.sum { |p| cpu_ticks(p) }
  redis0 = redis_cpu
  producer = fork_producer(N_JOBS)
  t_first = t_last = nil
  deadline = mono + 300
  next_poll = mono
  loop do
    raw, stat = poller.mget(SidekiqBench::DONE_KEY, "stat:processed")
    now = mono
    v = raw.to_i
    stat = stat.to_i - stat0
    stat_steps << stat if stat != (stat_steps.last || 0)
    t_first ||= now if v > baseline
    if v >= target
      t_last = now
      break
    end
    raise "process phase: timeout (done #{v - baseline}/#{N_JOBS})" if now > deadline
    next_poll += POLL
    next_poll = now + POLL if next_poll < now # do not burst after a stall
    sleep(next_poll - now)
  end
  cpu1 = $workers.sum { |p| cpu_ticks(p) }
  redis1 = redis_cpu
  _, st = Process.waitpid2(producer)
  raise "producer exited with #{st.exitstatus}" unless st.success?
  poller.close
  {
    rate: N_JOBS / (t_last - t_first),
    cpu_us: (cpu1 - cpu0) * 1_000_000.0 / CLK_TCK / N_JOBS,
    redis_cpu_us: (redis1 - redis0) * 1_000_000.0 / N_JOBS,
    elapsed: t_last - t_first,
    stat_steps: stat_steps,
  }
end

def nearest_rank(sorted, q) = sorted[[(q * sorted.size).ceil - 1, 0].max]

def pickup_latency
  check_workers_alive!
  redis { |c| c.del(SidekiqBench::LATENCY_KEY) }
  t0 = mono
  LAT_JOBS.times do |i|
    target = t0 + i / LAT_RATE
    d = target - mono
    sleep(d) if d > 0
    Sidekiq::Client.push("class" => LatencyJob, "args" => [Time.now.to_f])
  end
  wait_until("#{LAT_JOBS} latency samples", 60) { redis { |c| c.llen(SidekiqBench::LATENCY_KEY) } >= LAT_JOBS }
  us = redis { |c| c.lrange(SidekiqBench::LATENCY_KEY, 0, -1) }.map(&:to_i).sort
  redis { |c| c.del(SidekiqBench::LATENCY_KEY) }
  { p50: nearest_rank(us, 0.50) / 1000.0, p99: nearest_rank(us, 0.99) / 1000.0, max: us.last / 1000.0 }
end

def median(xs)
  s = xs.sort
  s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0
end

# ---- main -----------------------------------------------------------------

system_name = "sidekiq #{Sidekiq::VERSION}"
started = mono
begin
  log "#{system_name}, ruby #{RUBY_VERSION}, redis-rb #{Redis::VERSION}; bench db #{SidekiqBench::REDIS_URL} (flushed)"
  redis { |c| c.flushdb }
  start_workers
  wait_until("#{WORKERS} sidekiq processes in the process set", 60) do
    check_workers_alive!
    workers_ready?
  end
  log "workers ready; warm-up #{WARMUP_JOBS} jobs"
  base = done_count
  Sidekiq::Client.push_bulk("class" => NoopJob, "args" => noop_payloads(WARMUP_JOBS))
  wait_until("warm-up", 60) { done_count >= base + WARMUP_JOBS }

  runs = []
  opts[:runs].times do |r|
    redis0 = redis_cpu
    bulk = bulk_enqueue
    bulk_redis_us = (redis_cpu - redis0) * 1_000_000.0 / N_JOBS
    log format("run %d: bulk enqueue %.0f jobs/s", r + 1, bulk)
    single = single_enqueue
    log format("run %d: single enqueue %.0f jobs/s", r + 1, single)
    pr = process_phase
    log format("run %d: process %.0f jobs/s (%.3f s), worker cpu %.1f us/job", r + 1, pr[:rate], pr[:elapsed], pr[:cpu_us])
    log "run #{r + 1}: meanwhile stat:processed moved only in heartbeat steps: #{pr[:stat_steps].inspect} (of #{N_JOBS})"
    lat = pickup_latency
    log format("run %d: pickup p50 %.3f ms, p99 %.3f ms, max %.3f ms", r + 1, lat[:p50], lat[:p99], lat[:max])
    runs << {
      "bulk_enqueue_per_s" => bulk.round(1),
      "single_enqueue_per_s" => single.round(1),
      "process_per_s" => pr[:rate].round(1),
      "pickup_p50_ms" => lat[:p50].round(3),
      "pickup_p99_ms" => lat[:p99].round(3),
      "pickup_max_ms" => lat[:max].round(3),
      "worker_cpu_us_per_job" => pr[:cpu_us].round(1),
      "redis_cpu_us_per_job_bulk_enqueue" => bulk_redis_us.round(1),
      "redis_cpu_us_per_job_process" => pr[:redis_cpu_us].round(1),
    }
  end

  result = { "system" => system_name }
  runs.first.each_key { |k| result[k] = median(runs.map { |x| x[k] }).round(3) }
  result["runs"] = runs
  $stdout.puts(JSON.generate(result))
  $stdout.flush
ensure
  stop_workers
  begin
    redis { |c| c.flushdb }
  rescue StandardError => e
    log "final flushdb failed: #{e.message}"
  end
  log format("total %.1f s", mono - started)
end
