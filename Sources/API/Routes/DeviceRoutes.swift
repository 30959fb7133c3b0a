import Foundation
import Hummingbird
import Postgres
import Queue

/// `devices/register` and `devices/unregister` (seed 001): validated, then a `push-registration` job.
/// (Being written in issue 4: no routes registered yet.)
struct DeviceRoutes {
    let database: PostgresClient
    let queue: JobQueue
    let waiter: JobWaiter
    let authenticator: Authenticator

    func register(on api: RouteTable) {}
}
