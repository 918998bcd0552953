public let probe = PackageResources.self
