import Postgres
import Queue

/// A job that fails because Postgres is down, restarting or failing over waits for it instead of spending its
/// attempts (the engine's `DependencyOutage`): 199 accepted device registrations used to die in a 30 s outage.
extension PostgresError: DependencyOutage {}
