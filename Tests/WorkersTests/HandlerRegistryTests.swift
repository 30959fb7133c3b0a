import Testing
import Workers

@Suite struct HandlerRegistryTests {
    /// Every kind of `jobs/` has a handler in this build, and nothing else is registered.
    @Test func everyCatalogKindHasAHandler() async throws {
        try await WorkerTestEnvironment.run { env in
            let registry = Handlers.registry(services: env.services(WorkerSettings()))
            #expect(registry.kinds == env.queue.catalog.kinds.keys.sorted())
        }
    }
}
