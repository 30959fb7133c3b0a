import Queue

/// Runs a job whose effect holds something reserved for it (a scan, a chat), and gives that back, once, when the job
/// dies: a permanent failure, or any failure on its last attempt. A dependency outage gives nothing back (the engine
/// postpones the job without spending the attempt), nor does a cancellation (a timeout is retried, a shutdown hands
/// the job back). `refund` is guarded by the reservation's status, so a redelivery never refunds twice.
func refundingIfItDies<T>(
    _ context: JobContext, refund: () async throws -> Void, _ body: () async throws -> T
) async throws -> T {
    do {
        return try await body()
    } catch let failure as JobFailure where failure.kind == .permanent || context.attempt >= context.maxAttempts {
        try await refund()
        throw JobFailure.permanent(failure.message)
    } catch is CancellationError {
        throw CancellationError()
    } catch let outage as any DependencyOutage where outage.isOutage {
        throw outage
    } catch {
        if context.attempt >= context.maxAttempts { try await refund() }
        throw error
    }
}
