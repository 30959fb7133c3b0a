# frozen_string_literal: true

# Sidekiq side of ops/bench/same-work.sh: a chat job doing the work carbscan's does. One POST
# /v1/chat/completions to the slow model (the request of slow_provider.rb), then the answer stored once per job and
# its reservation charged, in one committed statement, through a pool of `pg` connections (ruby-pg, Debian's
# ruby-pg, over libpq like carbscan's client). carbscan charges the reservation later, in a batch (its queue's
# ledger); here the job settles its own, the way a Sidekiq app would.
#
#   sidekiq -r ./same_work.rb -c 1000 -q same        # a worker
#   ruby same_work.rb enqueue PREFIX                  # one job per reserved chat of the users named PREFIX*
#
# Env: SIDEKIQ_BENCH_REDIS_URL, SLOW_PROVIDER_URL, DATABASE_URL, SAME_WORK_PG_POOL (connections per process, 40: two
# processes stay well under the bench Postgres's max_connections of 200 beside carbscan's pools). Sidekiq's advice is
# a pool as large as the concurrency, which 2 × 1,000 threads cannot have here. Some runs go wrong: one process
# spins a core while few jobs end, and the threads waiting for a connection give up after ConnectionPool's 30 s
# (counted as failed; 850 of 5,000 in one run of three, 2026-11-27). Waiting up to 10 minutes instead (and a pool of
# 80) failed none but ran 33 and 63 chats/s in two runs of three; `sync_exec_params` did no better.

require_relative "slow_provider"
require "pg"
require "connection_pool"

module SameWorkBench
  QUEUE = "same"
  POOL = ConnectionPool.new(size: Integer(ENV.fetch("SAME_WORK_PG_POOL", "40")), timeout: 30) do
    PG.connect(ENV.fetch("DATABASE_URL"))
  end
  STORE = <<~SQL
    WITH inserted AS (
        INSERT INTO chat_messages (user_id, job_id, message, response, message_type, follow_up_questions)
        VALUES ($1, $2::uuid, $3, $4, $5, $6::jsonb)
        ON CONFLICT (job_id) DO NOTHING RETURNING id
    )
    UPDATE chat_reservations SET status = 'charged', settled_at = now()
    WHERE message_id = $7::uuid AND status = 'reserved'
  SQL
end

# A job that raised is counted too (bench:failed), so a run with failures ends and says so.
class FailedCounter
  def call(_worker, _job, _queue)
    yield
  rescue StandardError
    Sidekiq.redis { |c| c.incr("bench:failed") }
    raise
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add FailedCounter }
end

class SameWorkChatJob
  include Sidekiq::Job
  sidekiq_options queue: SameWorkBench::QUEUE, retry: false

  def perform(user_id, message_id, job_id, message)
    answer = SlowProviderBench.request(
      [{ "role" => "system", "content" => "You are CarbScan's nutrition assistant." }, { "role" => "user", "content" => message }],
      "chat_answer")
    response = answer["response"].to_s.strip
    raise "empty answer for #{user_id}/#{message_id}" if response.empty?
    SameWorkBench::POOL.with do |db|
      db.exec_params(SameWorkBench::STORE, [user_id, job_id, message, response, answer["messageType"].to_s,
                                            JSON.generate(Array(answer["followUpQuestions"]).first(3)), message_id])
    end
  end
end

if $PROGRAM_NAME == __FILE__ && ARGV[0] == "enqueue"
  db = PG.connect(ENV.fetch("DATABASE_URL"))
  rows = db.exec_params(
    "SELECT user_id, message_id::text FROM chat_reservations WHERE user_id LIKE $1 AND status = 'reserved' ORDER BY created_at",
    ["#{ARGV[1]}%"]).values
  args = rows.each_with_index.map { |(user, message), i| [user, message, SecureRandom.uuid, "How many carbs are in a medium apple? (#{i})"] }
  args.each_slice(1000) { |slice| Sidekiq::Client.push_bulk("class" => SameWorkChatJob, "args" => slice) }
  puts "enqueued #{args.size} chat jobs"
end
