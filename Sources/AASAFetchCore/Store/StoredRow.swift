import GRDB

extension Row {
    /// The value of the column at `index`, converted; a stored value that does not convert (a
    /// tampered or damaged SQLite file: text in a number column, a number past `Int`'s range) is
    /// ``StoredValueMismatch`` naming the column (`store-corrupt`), where GRDB's subscript would stop
    /// the process.
    func value<Value: DatabaseValueConvertible>(_ index: Int) throws(StoredValueMismatch) -> Value {
        do {
            return try decode(Value.self, atIndex: index)
        } catch {
            throw Self.mismatch(Value.self, column: columnName(at: index), value: self[index] as DatabaseValue)
        }
    }

    /// The same for the types SQLite reads directly (`Int`, `Double`, `String`, their optionals):
    /// GRDB's fast path, with the same check.
    func value<Value: DatabaseValueConvertible & StatementColumnConvertible>(_ index: Int) throws(StoredValueMismatch) -> Value {
        do {
            return try decode(Value.self, atIndex: index)
        } catch {
            throw Self.mismatch(Value.self, column: columnName(at: index), value: self[index] as DatabaseValue)
        }
    }

    /// The value of the column named `column`, converted; ``StoredValueMismatch`` when it does not convert.
    func value<Value: DatabaseValueConvertible>(_ column: String) throws(StoredValueMismatch) -> Value {
        do {
            return try decode(Value.self, forColumn: column)
        } catch {
            throw Self.mismatch(Value.self, column: column, value: self[column] as DatabaseValue? ?? .null)
        }
    }

    private func columnName(at index: Int) -> String {
        let names = Array(columnNames)
        return index < names.count ? names[index] : "#\(index)"
    }

    private static func mismatch(_ type: Any.Type, column: String, value: DatabaseValue) -> StoredValueMismatch {
        var expected = String(describing: type)
        if expected.hasPrefix("Optional<"), expected.hasSuffix(">") { expected = String(expected.dropFirst(9).dropLast()) }
        let shown: String = switch value.storage {
        case .null: "NULL"
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .string(let text): "'" + String(text.prefix(40)) + (text.count > 40 ? "…'" : "'")
        case .blob(let data): "a \(data.count)-byte blob"
        }
        return StoredValueMismatch(text: "the column \(column) holds \(shown) where \(expected) belongs (a damaged or edited file); restore the store from a backup or move it away")
    }
}

/// A stored value that does not convert to its column's type; the store names its file and
/// reports it as `store-corrupt` (``SQLiteAssociationStore/storeError(_:path:)``).
struct StoredValueMismatch: Error {
    /// What was found where.
    let text: String
}
