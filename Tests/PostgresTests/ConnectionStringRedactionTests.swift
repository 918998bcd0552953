import Postgres
import Testing

/// Issue 43 item 11: a malformed `DATABASE_URL` had its password echoed, because libpq
/// words its parse errors by quoting the string (or a token of it), and a string that is
/// neither form was shown whole. Every message about a connection string now hides it.
@Suite struct ConnectionStringRedactionTests {
    /// Strings libpq refuses (or that are no connection string at all), each holding the
    /// a password with `PW-` in it, in both forms, as users mistype them.
    static let malformed = [
        "postgresql://courier:tok-PW-1@[::1/db",                       // unterminated IPv6 host: libpq quotes the URI
        "postgresql://courier:tok-PW-2@[]/db",                         // empty IPv6 host
        "postgresql://courier:tok%zzPW-3@host/db",                    // bad percent escape: libpq quotes the token
        "postgresql://courier:tok-PW-4@host:5432/db?x&y",             // a query parameter without =
        "postgresql://courier@host/db?password=tok-PW-5%zz",          // a bad escape in a query password
        "postgresql://courier@host/db?password=tok-PW-6=x",           // an extra = in a query password
        "postgresql://courier:tok-PW-7@host/db?nonsense=1",           // an unknown parameter
        "postgresql://courier:tok/PW-8@host/db",                      // an unescaped / in the password
        "host=h password tok-PW-9",                                   // key=value without =
        "host=h password='tok-PW-10",                                 // an unterminated quote
        "host=h password='tok\\'PW-11' port=x y",                     // an escaped quote, then a bad word
        "postgresq://u:tok-PW-12@h/db",                               // a mistyped scheme: shown by problem()
    ]

    @Test func libpqParseErrorsNeverShowThePassword() {
        for text in Self.malformed {
            let message: String
            do {
                _ = try PostgresConnectionString.parse(text)
                if let problem = PostgresConnectionString.problem(text) { message = problem } else { continue }
            } catch let error as PostgresError {
                message = error.description
                #expect(message.contains("invalid connection string"), "\(text): libpq's wording is kept: \(message)")
            } catch {
                Issue.record("\(text): \(error)")
                continue
            }
            #expect(!message.contains("PW-"), "\(text) shows its password: \(message)")
        }
        // The mistyped scheme is refused by problem(), which names the rest of the string.
        let problem = PostgresConnectionString.problem("postgresq://u:tok-PW-12@h/db")
        #expect(problem == "'postgresq://u:***@h/db' is neither a postgresql:// URI nor key=value conninfo (such as host=db.internal dbname=courier)")
    }

    @Test func connectingWithAMalformedStringNeverShowsThePassword() {
        // Only strings libpq refuses before it looks any host up: nothing leaves the machine.
        for text in Self.malformed.prefix(7) + Self.malformed[8...] {
            let error = #expect(throws: PostgresError.self) { try PostgresConnection.connect(PostgresConfiguration(connectionString: text)) }
            #expect(error.map { !$0.description.contains("PW-") } == true, "\(text): \(String(describing: error))")
        }
    }

    @Test func passwordsAreFoundInEveryForm() {
        func redacted(_ text: String) -> String { PostgresConnectionString.redactingPasswords(of: text, in: "said: " + text) }
        #expect(redacted("postgresql://u:s3cret@h/db") == "said: postgresql://u:***@h/db")
        #expect(redacted("postgresql://u:s%33cret@h/db") == "said: postgresql://u:***@h/db")
        #expect(PostgresConnectionString.redactingPasswords(of: "postgresql://u:s%33cret@h/db", in: "token \"s3cret\"") == "token \"***\"",
                "the decoded form too")
        #expect(redacted("postgresql://u:p@ss@h/db") == "said: postgresql://u:***@h/db", "an unescaped @ in the password")
        // An unescaped / makes libpq read "u:tok" as host and port, and "PW-8@h/db" as the database.
        #expect(PostgresConnectionString.redactingPasswords(of: "postgresql://u:tok/PW-8@h/db",
                                                            in: #"invalid integer value "tok" for connection option "port""#)
            == #"invalid integer value "***" for connection option "port""#)
        #expect(redacted("postgresql://h/db?sslmode=require&password=s3cret") == "said: postgresql://h/db?sslmode=require&password=***")
        #expect(redacted("host=h password=s3cret dbname=d") == "said: host=h password=*** dbname=d")
        #expect(redacted("host=h password = 'two words' dbname=d") == "said: host=h password = '***' dbname=d")
        #expect(redacted(#"host=h password='it\'s' dbname=d"#) == #"said: host=h password='***' dbname=d"#)
        #expect(PostgresConnectionString.redactingPasswords(of: #"password='it\'s'"#, in: "value it's") == "value ***", "unquoted too")
        // A short password goes only where it stands alone.
        #expect(PostgresConnectionString.redactingPasswords(of: "postgresql://u:p@h/db", in: "bad postgresql://u:p@h/db \"p\"")
            == "bad postgresql://u:***@h/db \"***\"")
        // No password: nothing changes, and a word merely containing "password" is no keyword.
        #expect(redacted("postgresql://u@h/db") == "said: postgresql://u@h/db")
        #expect(redacted("host=h mypassword=x") == "said: host=h mypassword=x")
    }
}
