# frozen_string_literal: true

# Sidekiq side of ops/bench/slow-provider.sh: the same shape of job as carbscan's chat and analysis, each one
# POST /v1/chat/completions to the slow model with Net::HTTP (the standard library), the answer parsed as JSON.
# It reads nothing from Postgres and writes nothing back (carbscan's handlers do both): in Sidekiq's favour.
#
#   sidekiq -r ./slow_provider.rb -c 1000 -q slow        # a worker
#   ruby slow_provider.rb enqueue chat|analysis N         # N jobs, push_bulk in batches of 1,000
#
# Env: SIDEKIQ_BENCH_REDIS_URL (Sidekiq's Redis), SLOW_PROVIDER_URL (the model's base URL), SLOW_PROVIDER_PHOTO_BYTES.

require_relative "worker"
require "net/http"
require "json"
require "base64"
require "securerandom"

module SlowProviderBench
  QUEUE = "slow"
  URI_ = URI("#{ENV.fetch('SLOW_PROVIDER_URL', 'http://127.0.0.1:8090')}/v1/chat/completions")
  # carbscan's analysis sends the stored photo as a data URL: the same number of bytes here, read once per process.
  PHOTO = ("\xFF\xD8\xFF\xE0".b + SecureRandom.random_bytes([Integer(ENV.fetch("SLOW_PROVIDER_PHOTO_BYTES", "32768")) - 4, 0].max)).freeze
  SCHEMA = { "type" => "object" }.freeze

  def self.request(messages, schema_name)
    body = {
      "model" => "gpt-4o-mini", "max_tokens" => 1000, "messages" => messages,
      "response_format" => { "type" => "json_schema", "json_schema" => { "name" => schema_name, "strict" => true, "schema" => SCHEMA } },
    }
    response = Net::HTTP.post(URI_, JSON.generate(body), "Content-Type" => "application/json", "Accept" => "application/json")
    raise "AI provider answered #{response.code}" unless response.is_a?(Net::HTTPSuccess)
    JSON.parse(JSON.parse(response.body).dig("choices", 0, "message", "content"))
  end
end

class SlowChatJob
  include Sidekiq::Job
  sidekiq_options queue: SlowProviderBench::QUEUE, retry: false

  def perform(user_id, message_id, message)
    answer = SlowProviderBench.request(
      [{ "role" => "system", "content" => "You are CarbScan's nutrition assistant." }, { "role" => "user", "content" => message }],
      "chat_answer")
    raise "empty answer for #{user_id}/#{message_id}" if answer["response"].to_s.strip.empty?
  end
end

class SlowAnalysisJob
  include Sidekiq::Job
  sidekiq_options queue: SlowProviderBench::QUEUE, retry: false

  def perform(user_id, photo_id)
    image = "data:image/jpeg;base64," + Base64.strict_encode64(SlowProviderBench::PHOTO)
    estimate = SlowProviderBench.request(
      [
        { "role" => "system", "content" => "You estimate the carbohydrates in the food photo, in grams." },
        { "role" => "user", "content" => [
          { "type" => "text", "text" => "How many carbs are in this meal?" },
          { "type" => "image_url", "image_url" => { "url" => image, "detail" => "auto" } },
        ] },
      ],
      "carb_estimate")
    raise "no estimate for #{user_id}/#{photo_id}" unless estimate["carbEstimate"].is_a?(Numeric)
  end
end

if $PROGRAM_NAME == __FILE__ && ARGV[0] == "enqueue"
  kind = ARGV[1]
  n = Integer(ARGV[2])
  args = Array.new(n) do |i|
    kind == "chat" ? ["bench-user-#{i % 100}", SecureRandom.uuid, "How many carbs are in a medium apple? (#{i})"] : ["bench-user-#{i % 100}", i + 1]
  end
  klass = kind == "chat" ? SlowChatJob : SlowAnalysisJob
  args.each_slice(1000) { |slice| Sidekiq::Client.push_bulk("class" => klass, "args" => slice) }
  puts "enqueued #{n} #{kind} jobs"
end
