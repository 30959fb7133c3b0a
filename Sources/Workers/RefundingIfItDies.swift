import Queue

/// What a job whose effect holds something reserved for it (a scan, a chat) throws when its work failed with `error`,
/// after giving the reservation back, once, if the job dies: a permanent failure, or any failure on its last attempt.
/// A dependency outage gives nothing back (the engine postpones the job without spending the attempt), nor does a
/// cancellation (a timeout is retried, a shutdown hands the job back). `refund` is guarded by the reservation's
/// status, so a redelivery never refunds twice.
///
/// Called from the job's `catch` only: the work itself runs without another async frame around it (the frames of a
/// job waiting on the AI model are kept for as long as it waits).
func refundingIfItDies(_ error: any Error, _ context: JobContext, refund: () async throws -> Void) async throws -> any Error {
    switch error {
    case let failure as JobFailure where failure.kind == .permanent || context.attempt >= context.maxAttempts:
        try await refund()
        return JobFailure.permanent(failure.message)
    case is CancellationError:
        return error
    case let outage as any DependencyOutage where outage.isOutage:
        return outage
    default:
        if context.attempt >= context.maxAttempts { try await refund() }
        return error
    }
}
