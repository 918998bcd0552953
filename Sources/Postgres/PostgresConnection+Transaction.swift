extension PostgresConnection {
    /// Runs `body` in a transaction: BEGIN, then COMMIT when `body` returns, ROLLBACK when
    /// it throws (the body's error is rethrown; a failing ROLLBACK is ignored).
    ///
    /// Inside another transaction this uses a SAVEPOINT instead, so calls nest.
    /// Errors of BEGIN/COMMIT carry ``PostgresError/transactionStep``. If a statement
    /// failed inside `body` but `body` swallowed the error, COMMIT cannot succeed: the
    /// server rolls back and this throws `.transactionRolledBack` (step `.commit`).
    @discardableResult
    public func withTransaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let nested = transactionStatus == .inTransaction || transactionStatus == .inFailedTransaction
        let savepoint: String?
        if nested {
            savepointCounter += 1
            savepoint = "courier_savepoint_\(savepointCounter)"
        } else {
            savepoint = nil
        }
        try step(.begin) { try simpleQuery(savepoint.map { "SAVEPOINT \($0)" } ?? "BEGIN") }

        let value: T
        do {
            value = try body(self)
        } catch {
            if transactionStatus == .inTransaction || transactionStatus == .inFailedTransaction {
                try? simpleQuery(savepoint.map { "ROLLBACK TO SAVEPOINT \($0); RELEASE SAVEPOINT \($0)" } ?? "ROLLBACK")
            }
            throw error
        }

        if let savepoint {
            if transactionStatus == .inFailedTransaction {
                try step(.rollback) { try simpleQuery("ROLLBACK TO SAVEPOINT \(savepoint); RELEASE SAVEPOINT \(savepoint)") }
                throw PostgresError(kind: .transactionRolledBack, message: "savepoint rolled back: a statement inside it failed", transactionStep: .commit)
            }
            try step(.commit) { try simpleQuery("RELEASE SAVEPOINT \(savepoint)") }
        } else {
            let tag = try step(.commit) { try simpleQueryWithTag("COMMIT") }
            if tag == "ROLLBACK" {
                throw PostgresError(kind: .transactionRolledBack, message: "transaction rolled back: a statement inside it failed", transactionStep: .commit)
            }
        }
        return value
    }

    private func step<R>(_ step: PostgresError.TransactionStep, _ run: () throws -> R) throws -> R {
        do {
            return try run()
        } catch var error as PostgresError {
            error.transactionStep = step
            throw error
        }
    }
}
