import Foundation
import Postgres

/// One numbered schema migration from `sql/`, carried inside the binary.
public struct Migration: Sendable, Equatable {
    /// The number the file starts with; migrations apply in this order.
    public let version: Int
    /// The file name in `sql/`, e.g. `0001_core_schema.sql`.
    public let name: String
    /// The SQL text, applied in one transaction.
    public let sql: String
}

extension Migration {
    /// Every migration, oldest first. A test checks this list against the files in `sql/`.
    public static let all: [Migration] = [
        Migration(version: 1, name: "0001_core_schema.sql", bytes: PackageResources._001_core_schema_sql),
        Migration(version: 2, name: "0002_worker_runtime.sql", bytes: PackageResources._002_worker_runtime_sql),
        Migration(version: 3, name: "0003_breakers.sql", bytes: PackageResources._003_breakers_sql),
        Migration(version: 4, name: "0004_dead_letters.sql", bytes: PackageResources._004_dead_letters_sql),
        Migration(version: 5, name: "0005_retry_metrics.sql", bytes: PackageResources._005_retry_metrics_sql),
        Migration(version: 6, name: "0006_roles.sql", bytes: PackageResources._006_roles_sql),
        Migration(version: 7, name: "0007_cheaper_value_checks.sql", bytes: PackageResources._007_cheaper_value_checks_sql),
        Migration(version: 8, name: "0008_signed_webhooks.sql", bytes: PackageResources._008_signed_webhooks_sql),
        Migration(version: 9, name: "0009_schedules.sql", bytes: PackageResources._009_schedules_sql),
        Migration(version: 10, name: "0010_security_hardening.sql", bytes: PackageResources._010_security_hardening_sql),
        Migration(version: 13, name: "0013_probe_lease_and_retry_after.sql", bytes: PackageResources._013_probe_lease_and_retry_after_sql),
        Migration(version: 14, name: "0014_destination_traffic.sql", bytes: PackageResources._014_destination_traffic_sql),
        Migration(version: 15, name: "0015_retry_defaults_and_enqueuer_destinations.sql",
                  bytes: PackageResources._015_retry_defaults_and_enqueuer_destinations_sql),
        Migration(version: 16, name: "0016_dashboard_indexes.sql", bytes: PackageResources._016_dashboard_indexes_sql),
        Migration(version: 18, name: "0018_scale_endurance.sql", bytes: PackageResources._018_scale_endurance_sql),
        Migration(version: 19, name: "0019_hot_heartbeats.sql", bytes: PackageResources._019_hot_heartbeats_sql),
        Migration(version: 20, name: "0020_breaker_nominal_cooldown.sql", bytes: PackageResources._020_breaker_nominal_cooldown_sql),
        Migration(version: 21, name: "0021_unique_key_per_role.sql", bytes: PackageResources._021_unique_key_per_role_sql),
        Migration(version: 22, name: "0022_claim_skips_what_it_cannot_take.sql", bytes: PackageResources._022_claim_skips_what_it_cannot_take_sql),
        Migration(version: 23, name: "0023_enqueue_notifies_once_at_a_time.sql", bytes: PackageResources._023_enqueue_notifies_once_at_a_time_sql),
        Migration(version: 24, name: "0024_fair_claiming.sql", bytes: PackageResources._024_fair_claiming_sql),
        Migration(version: 28, name: "0028_breaker_transition_totals.sql", bytes: PackageResources._028_breaker_transition_totals_sql),
        Migration(version: 29, name: "0029_cheaper_header_check.sql", bytes: PackageResources._029_cheaper_header_check_sql),
        Migration(version: 30, name: "0030_spread_claim_jumps_excluded.sql", bytes: PackageResources._030_spread_claim_jumps_excluded_sql),
        Migration(version: 31, name: "0031_claim_function.sql", bytes: PackageResources._031_claim_function_sql),
        Migration(version: 32, name: "0032_keeper_walks_indexes.sql", bytes: PackageResources._032_keeper_walks_indexes_sql),
        Migration(version: 33, name: "0033_destination_claims_skip_scheduled.sql",
                  bytes: PackageResources._033_destination_claims_skip_scheduled_sql),
        Migration(version: 34, name: "0034_acknowledgement_functions.sql", bytes: PackageResources._034_acknowledgement_functions_sql),
        Migration(version: 35, name: "0035_keeper_batches_walk_destination_index.sql",
                  bytes: PackageResources._035_keeper_batches_walk_destination_index_sql),
        Migration(version: 36, name: "0036_claim_fewer_statements.sql", bytes: PackageResources._036_claim_fewer_statements_sql),
        Migration(version: 37, name: "0037_claim_looks_for_priorities_from_one_end.sql",
                  bytes: PackageResources._037_claim_looks_for_priorities_from_one_end_sql),
        Migration(version: 38, name: "0038_keeper_and_prober_read_only_what_holds_back.sql",
                  bytes: PackageResources._038_keeper_and_prober_read_only_what_holds_back_sql),
        Migration(version: 39, name: "0039_fence_tokens_and_gated_doors.sql",
                  bytes: PackageResources._039_fence_tokens_and_gated_doors_sql),
        Migration(version: 40, name: "0040_token_refill_and_slow_start_without_cap.sql",
                  bytes: PackageResources._040_token_refill_and_slow_start_without_cap_sql),
        Migration(version: 41, name: "0041_refusals_are_counted_and_bounded.sql",
                  bytes: PackageResources._041_refusals_are_counted_and_bounded_sql),
        Migration(version: 42, name: "0042_one_canonical_destination_at_every_door.sql",
                  bytes: PackageResources._042_one_canonical_destination_at_every_door_sql),
        Migration(version: 43, name: "0043_an_origins_limits_cover_its_sub_keys.sql",
                  bytes: PackageResources._043_an_origins_limits_cover_its_sub_keys_sql),
        Migration(version: 44, name: "0044_trace_context.sql", bytes: PackageResources._044_trace_context_sql),
        Migration(version: 45, name: "0045_fairness_keys.sql", bytes: PackageResources._045_fairness_keys_sql),
        Migration(version: 46, name: "0046_breaker_holds_are_remembered.sql",
                  bytes: PackageResources._046_breaker_holds_are_remembered_sql),
        Migration(version: 47, name: "0047_bounded_waiting_in_a_key_and_a_gate.sql",
                  bytes: PackageResources._047_bounded_waiting_in_a_key_and_a_gate_sql),
        Migration(version: 48, name: "0048_storage_that_a_held_snapshot_cannot_bloat.sql",
                  bytes: PackageResources._048_storage_that_a_held_snapshot_cannot_bloat_sql),
    ]

    init(version: Int, name: String, bytes: [UInt8]) {
        self.init(version: version, name: name, sql: String(decoding: bytes, as: UTF8.self))
    }
}
