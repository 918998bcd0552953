import CourierControl
import Foundation

// jobctl: everything happens in CourierControl, so tests run the same code in-process.
exit(Jobctl.run(Array(CommandLine.arguments.dropFirst()), io: .process))
