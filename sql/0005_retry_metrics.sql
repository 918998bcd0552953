-- Courier 0005: fleet-wide retry metrics and per-queue retry defaults.

-- Attempt outcomes per minute, queue, destination and class ('success' or an error
-- class). Workers add their in-memory counts every few seconds, so the figures cover
-- the whole fleet; rows older than two days are pruned.
create table courier.attempt_stats (
    bucket                timestamptz not null,
    queue                 text        not null,
    destination           text        not null,
    class                 text        not null,
    attempts              bigint      not null default 0,
    retries               bigint      not null default 0,
    succeeded_after_retry bigint      not null default 0,
    -- Retry delays: counts with delay <= 1s, 5s, 15s, 60s, 300s, 900s, 3600s, and above.
    delay_buckets         bigint[]    not null default '{0,0,0,0,0,0,0,0}',
    delay_ms_sum          bigint      not null default 0,
    primary key (bucket, queue, destination, class)
);

-- Adds counts from one worker; arrays are parallel, one element per (queue, destination, class).
create function courier.attempt_stats_add(
    p_queues text[], p_destinations text[], p_classes text[], p_attempts bigint[], p_retries bigint[],
    p_succeeded_after_retry bigint[], p_delay_buckets text[], p_delay_ms_sum bigint[]
) returns void
language sql volatile as $$
    insert into courier.attempt_stats as s (bucket, queue, destination, class, attempts, retries, succeeded_after_retry,
                                            delay_buckets, delay_ms_sum)
    select date_trunc('minute', now()), q, d, c, a, r, sar, db::bigint[], dms
    from unnest(p_queues, p_destinations, p_classes, p_attempts, p_retries, p_succeeded_after_retry, p_delay_buckets,
                p_delay_ms_sum) as t(q, d, c, a, r, sar, db, dms)
    on conflict (bucket, queue, destination, class) do update
    set attempts = s.attempts + excluded.attempts,
        retries = s.retries + excluded.retries,
        succeeded_after_retry = s.succeeded_after_retry + excluded.succeeded_after_retry,
        delay_buckets = array(select x + y from unnest(s.delay_buckets, excluded.delay_buckets) as u(x, y)),
        delay_ms_sum = s.delay_ms_sum + excluded.delay_ms_sum
$$;

-- Retry defaults per queue, so the whole fleet agrees; a worker uses its flags for
-- queues without a row, and for the columns left NULL.
create table courier.queue_settings (
    queue              text primary key,
    backoff            text,
    backoff_base_ms    bigint,
    backoff_cap_ms     bigint,
    backoff_multiplier float8,
    jitter             text,
    retry_after_cap_ms bigint,
    updated_at         timestamptz not null default now(),
    constraint queue_settings_queue_check check (queue ~ '^[A-Za-z0-9_.:-]{1,64}$'),
    constraint queue_settings_backoff_check check (backoff is null or backoff in ('exponential', 'linear', 'constant')),
    constraint queue_settings_jitter_check check (jitter is null or jitter in ('full', 'equal', 'decorrelated', 'none')),
    constraint queue_settings_backoff_base_ms_check check (backoff_base_ms is null or backoff_base_ms between 1 and 86400000),
    constraint queue_settings_backoff_cap_ms_check check (backoff_cap_ms is null or backoff_cap_ms between 1 and 604800000),
    constraint queue_settings_backoff_multiplier_check
        check (backoff_multiplier is null or backoff_multiplier between 1 and 100),
    constraint queue_settings_retry_after_cap_ms_check
        check (retry_after_cap_ms is null or retry_after_cap_ms between 0 and 604800000)
);
