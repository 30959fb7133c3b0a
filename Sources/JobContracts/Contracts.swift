import Queue

/// The job kinds' contracts: `<Kind>Contract` for each file `jobs/<kind>.yml`, its `Parameters` and `Result` (and
/// their nested types) generated at build time from the file's `payload:` and `result:` schemas by
/// `Plugins/JobContractsPlugin`, so that the job file is the one place a kind's shapes are declared. The rules that
/// turn a schema into Swift are `ContractBuilder`'s (`Sources/JobCodegen`).
package enum Contracts {}
