-- Courier 0018: scale and endurance (issue 12).

-- Pruning in bounded batches that concurrent workers do not share
-- (FOR UPDATE SKIP LOCKED, oldest first): breaker events get an index on their time, so
-- the prune reads only what it deletes; completed_jobs already has (finished_at) and
-- dead_letters (failed_at).
create index breaker_events_at_idx on courier.breaker_events (at);

-- Deletes one batch of breaker events older than p_older_than_ms; returns how many.
-- Runs as its owner: courier_worker may not write courier.breaker_events (0010).
create function courier.breaker_events_prune(p_older_than_ms bigint, p_batch int, p_now timestamptz default null)
returns int
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
    with doomed as (
        select id from courier.breaker_events
        where at < coalesce(p_now, now()) - p_older_than_ms * interval '1 millisecond'
        order by at
        limit p_batch
        for update skip locked
    ),
    gone as (
        delete from courier.breaker_events e using doomed where e.id = doomed.id returning 1
    )
    select count(*)::int from gone
$$;
revoke execute on function courier.breaker_events_prune(bigint, int, timestamptz) from public;
grant execute on function courier.breaker_events_prune(bigint, int, timestamptz) to courier_worker, courier_admin;

-- Replays walk only dead letters not replayed yet, in replay order, whatever how many
-- were replayed before (dead_letters_failed_at_idx made every chunk walk past them).
create index dead_letters_replayable_idx on courier.dead_letters (failed_at, id) where replayed_at is null;
