-- Courier 0004: replaying dead letters, paced.
-- A replay creates a new job per dead letter, with the original request and the
-- original idempotency key (so receivers can deduplicate) and fresh attempts, and
-- marks the dead letter replayed. Pacing spreads the new jobs' run_at, so the whole
-- fleet delivers them at the given rate, and replayed jobs still wait while their
-- destination's breaker is open.
--
-- Deadline rule: a job that had a deadline keeps it if it is still ahead of the new
-- run_at; otherwise it gets a new one, as long after the new run_at as the original
-- deadline was after the original enqueue.
-- unique_key is not carried over: a replay is an operator's explicit decision.
--
-- A dead letter is replayed once: rows with replayed_at set are skipped unless
-- force is true. A forced replay done in chunks passes replayed_before (the time the
-- whole replay started) so that each chunk skips the rows earlier chunks replayed.

create index dead_letters_job_id_idx on courier.dead_letters (job_id);

create function courier.replay_dead_letters(
    ids             bigint[]    default null,
    reasons         text[]      default null,
    destinations    text[]      default null,
    queues          text[]      default null,
    classes         text[]      default null,
    statuses        int[]       default null,
    since           timestamptz default null,
    until           timestamptz default null,
    rate_per_second float8      default null,
    start_at        timestamptz default now(),
    start_index     bigint      default 0,
    max_rows        int         default null,
    force           boolean     default false,
    dry_run         boolean     default false,
    replayed_before timestamptz default null
) returns table (dead_letter_id bigint, new_job_id bigint, destination text, run_at timestamptz)
language plpgsql volatile as $$
#variable_conflict use_column
begin
    if rate_per_second is not null and rate_per_second <= 0 then
        raise exception 'courier.replay_dead_letters: rate_per_second must be positive'
            using errcode = '22023', column = 'rate_per_second';
    end if;
    if max_rows is not null and max_rows < 1 then
        raise exception 'courier.replay_dead_letters: max_rows must be at least 1' using errcode = '22023', column = 'max_rows';
    end if;
    if reasons is not null and exists (select 1 from unnest(reasons) r
            where r not in ('permanent', 'invalid_response', 'exhausted', 'deadline', 'ambiguous', 'cancelled')) then
        raise exception 'courier.replay_dead_letters: reasons must be among permanent, invalid_response, exhausted, deadline, ambiguous, cancelled'
            using errcode = '22023', column = 'reasons';
    end if;
    return query
    with locked as (
        select d.id
        from courier.dead_letters d
        where (replay_dead_letters.ids is null or d.id = any(replay_dead_letters.ids))
          and (replay_dead_letters.reasons is null or d.reason = any(replay_dead_letters.reasons))
          and (replay_dead_letters.destinations is null or d.destination = any(replay_dead_letters.destinations))
          and (replay_dead_letters.queues is null or d.queue = any(replay_dead_letters.queues))
          and (replay_dead_letters.classes is null or d.last_class = any(replay_dead_letters.classes))
          and (replay_dead_letters.statuses is null or d.last_status = any(replay_dead_letters.statuses))
          and (replay_dead_letters.since is null or d.failed_at >= replay_dead_letters.since)
          and (replay_dead_letters.until is null or d.failed_at < replay_dead_letters.until)
          and (d.replayed_at is null
               or (replay_dead_letters.force
                   and (replay_dead_letters.replayed_before is null or d.replayed_at < replay_dead_letters.replayed_before)))
        order by d.failed_at, d.id
        limit replay_dead_letters.max_rows
        for update skip locked
    ),
    picked as (
        select d.*, row_number() over (order by d.failed_at, d.id) - 1 + replay_dead_letters.start_index as n
        from courier.dead_letters d join locked l on l.id = d.id
    ),
    planned as (
        select p.*,
               case when replay_dead_letters.rate_per_second is null then replay_dead_letters.start_at
                    else replay_dead_letters.start_at + (p.n / replay_dead_letters.rate_per_second) * interval '1 second'
               end as new_run_at,
               case when replay_dead_letters.dry_run then null
                    else nextval(pg_get_serial_sequence('courier.jobs', 'id')) end as new_id
        from picked p
    ),
    inserted as (
        insert into courier.jobs (id, kind, queue, priority, run_at, max_attempts, deadline, destination, method, url,
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, args)
        overriding system value
        select pl.new_id, pl.kind, pl.queue, pl.priority, pl.new_run_at, pl.max_attempts,
               case when pl.deadline is null then null
                    when pl.deadline > pl.new_run_at then pl.deadline
                    else pl.new_run_at + (pl.deadline - pl.created_at) end,
               pl.destination, pl.method, pl.url, pl.headers, pl.body, pl.timeout_ms, pl.expect_content_type,
               pl.idempotency_key, pl.args
        from planned pl
        where not replay_dead_letters.dry_run
        returning id
    ),
    marked as (
        update courier.dead_letters d
        set replayed_at = now(), replay_job_id = pl.new_id
        from planned pl
        where d.id = pl.id and not replay_dead_letters.dry_run
        returning d.id
    )
    select pl.id, pl.new_id, pl.destination, pl.new_run_at
    from planned pl
    where replay_dead_letters.dry_run or pl.new_id in (select id from inserted)
    order by pl.n;
    if not dry_run then
        perform pg_notify('courier_jobs', '');
    end if;
end
$$;
