import Foundation

/// A systemd unit file of `ops/deploy/systemd`, read the way systemd reads it, so a test can run a process as the
/// unit would: its `ExecStart` words, after `Environment=` and `EnvironmentFile=` and the instance specifiers.
struct SystemdUnit {
    /// Every `Key=value` of each section, in order (a key may repeat: `Environment=`, `EnvironmentFile=`).
    let sections: [String: [(key: String, value: String)]]

    init(contentsOf url: URL) throws {
        var sections: [String: [(key: String, value: String)]] = [:]
        var section = ""
        var pending = ""
        for raw in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            var line = pending + raw.trimmingCharacters(in: .whitespaces)
            pending = ""
            if line.hasSuffix("\\") {
                line.removeLast()
                pending = line + " "
                continue
            }
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[section, default: []].append((key, value))
        }
        self.sections = sections
    }

    /// The values of `key` in `[Service]`, in order.
    func service(_ key: String) -> [String] { sections["Service", default: []].filter { $0.key == key }.map(\.value) }

    /// The environment the unit's process gets: `Environment=` assignments first, then each `EnvironmentFile=`
    /// (later ones override earlier ones, as systemd does), the file paths mapped by `files` (a path the map does not
    /// know is an error; a `-` prefix makes a missing file fine).
    func environment(instance: String?, files: (String) -> URL?) throws -> [String: String] {
        var environment: [String: String] = [:]
        for line in service("Environment") {
            for word in try Self.words(specifiers(line, instance: instance)) {
                let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                environment[String(parts[0])] = parts.count == 2 ? String(parts[1]) : ""
            }
        }
        for line in service("EnvironmentFile") {
            let optional = line.hasPrefix("-")
            let path = specifiers(optional ? String(line.dropFirst()) : line, instance: instance)
            guard let url = files(path) else { throw UnitError("no stand-in for EnvironmentFile \(path)") }
            guard let text = try? String(contentsOf: url, encoding: .utf8) else {
                if optional { continue }
                throw UnitError("EnvironmentFile \(path) (\(url.path)) is missing")
            }
            for line in text.split(separator: "\n") where !line.hasPrefix("#") && line.contains("=") {
                let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                environment[parts[0].trimmingCharacters(in: .whitespaces)] = String(parts[1]).trimmingCharacters(in: .whitespaces)
            }
        }
        return environment
    }

    /// A command line (`ExecStart`, `ExecStartPre`) as the process's argv: words split as systemd splits them,
    /// `${NAME}` a single word (empty when unset), `$NAME` split at whitespace, `%i`/`%I` the instance.
    func command(_ line: String, instance: String?, environment: [String: String]) throws -> [String] {
        var text = specifiers(line, instance: instance)
        while let first = text.first, "-@:+!".contains(first) { text.removeFirst() }
        var argv: [String] = []
        for word in try Self.words(text) {
            if word.hasPrefix("$"), !word.hasPrefix("${"), word.dropFirst().allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                argv += (environment[String(word.dropFirst())] ?? "").split(whereSeparator: \.isWhitespace).map(String.init)
                continue
            }
            var expanded = ""
            var rest = Substring(word)
            while let start = rest.range(of: "${") {
                expanded += rest[..<start.lowerBound]
                guard let end = rest[start.upperBound...].firstIndex(of: "}") else { throw UnitError("unclosed ${ in \(line)") }
                expanded += environment[String(rest[start.upperBound..<end])] ?? ""
                rest = rest[rest.index(after: end)...]
            }
            argv.append(expanded + rest)
        }
        return argv
    }

    private func specifiers(_ text: String, instance: String?) -> String {
        text.replacingOccurrences(of: "%%", with: "\u{0}").replacingOccurrences(of: "%i", with: instance ?? "")
            .replacingOccurrences(of: "%I", with: instance ?? "").replacingOccurrences(of: "\u{0}", with: "%")
    }

    /// Whitespace-separated words; double or single quotes keep a word's spaces.
    private static func words(_ text: String) throws -> [String] {
        var words: [String] = []
        var word: String?
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { word!.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                word = word ?? ""
            } else if character.isWhitespace {
                if let done = word { words.append(done) }
                word = nil
            } else {
                word = (word ?? "") + String(character)
            }
        }
        guard quote == nil else { throw UnitError("unclosed quote in \(text)") }
        if let done = word { words.append(done) }
        return words
    }
}

struct UnitError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
