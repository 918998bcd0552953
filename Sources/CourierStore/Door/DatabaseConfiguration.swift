import Postgres

/// Where and how the store connects: a libpq URI or key=value conninfo (or `""` for
/// the `PG*` variables), an application name, and the prepared-statement cache size.
/// Modules above the store name it by this name and never import the driver.
public typealias DatabaseConfiguration = PostgresConfiguration

/// TCP keepalives, `tcp_user_timeout` and `connect_timeout` for a connection (see
/// `PostgresConfiguration.Keepalive`), named here for the modules above the store.
public typealias DatabaseKeepalive = PostgresConfiguration.Keepalive
