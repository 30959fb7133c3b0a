# frozen_string_literal: true

# Sidekiq reference benchmark: job classes and server middleware.
# Loaded by the worker processes (`sidekiq -r ./worker.rb -c 10 -q bench`)
# and required by bench.rb (the driver / producer).
#
# Redis: SIDEKIQ_BENCH_REDIS_URL (bench.rb always sets it; it points at a db
# that bench.rb flushes itself, db 15 by default).

require "sidekiq"
require "logger"

# Debian pairs sidekiq 6.4.1 with redis-rb 4.8, which prints a deprecation
# warning on every BRPOP/SADD Sidekiq issues (2 stderr lines per fetched job).
# That is pure noise and measurable overhead, so silence it.
Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)

module SidekiqBench
  REDIS_URL = ENV.fetch("SIDEKIQ_BENCH_REDIS_URL", "redis://127.0.0.1:56379/15")
  QUEUE = "bench"
  DONE_KEY = "bench:done"        # INCR'd once per finished job (see DoneCounter)
  LATENCY_KEY = "bench:latency"  # RPUSH'd pickup latencies, integer microseconds

  # Observation method for the "process" figure.
  #
  # Sidekiq 6.4 does NOT write `stat:processed` per job: each process keeps an
  # in-memory counter (Processor::PROCESSED) that the launcher flushes with
  # INCRBY only in its heartbeat, every 5 s (Launcher::BEAT_PAUSE), and at exit.
  # Polling `Sidekiq::Stats.new.processed` every 5 ms would therefore only see
  # steps of several thousand jobs, 5 s apart, which is useless for a run that
  # takes a few seconds. Instead this server middleware does one `INCR bench:done`
  # on the Sidekiq Redis after the job's perform has returned, and the driver
  # polls GET bench:done every 5 ms. The Swift side must do the same: one INCR
  # of a counter key per job, after the job body, in the worker.
  class DoneCounter
    def call(_worker, _job, _queue)
      yield
      Sidekiq.redis { |c| c.incr(DONE_KEY) }
    end
  end
end

# No-op job used for enqueue and process measurements.
class NoopJob
  include Sidekiq::Job
  sidekiq_options queue: SidekiqBench::QUEUE, retry: false

  def perform(*_args); end
end

# Pickup-latency job: arg is the wall-clock enqueue time (float seconds).
class LatencyJob
  include Sidekiq::Job
  sidekiq_options queue: SidekiqBench::QUEUE, retry: false

  def perform(stamp)
    us = ((Time.now.to_f - stamp.to_f) * 1_000_000).round
    Sidekiq.redis { |c| c.rpush(SidekiqBench::LATENCY_KEY, us) }
  end
end

Sidekiq.configure_client do |config|
  config.redis = { url: SidekiqBench::REDIS_URL }
end

Sidekiq.configure_server do |config|
  config.redis = { url: SidekiqBench::REDIS_URL }
  # Off for drain.rb, which watches the queue as a Sidekiq user does (the counter is an INCR per job).
  config.server_middleware { |chain| chain.add SidekiqBench::DoneCounter } unless ENV["SIDEKIQ_BENCH_COUNT_DONE"] == "0"
end

# Sidekiq logs two INFO lines per job ("start"/"done"); that is log I/O, not
# queue work, so the reference run uses WARN. Set SIDEKIQ_BENCH_LOG_LEVEL=info
# to measure with Sidekiq's default logging.
Sidekiq.logger.level = Logger.const_get(ENV.fetch("SIDEKIQ_BENCH_LOG_LEVEL", "warn").upcase)
