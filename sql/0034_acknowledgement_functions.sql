-- Courier 0034: the worker's writes about the jobs it holds are functions with one plan.
--
-- Every acknowledgement (success, retry, dead letter, hand-back) and the lease renewal
-- takes a list of (id, attempt) from the worker and joins it to courier.jobs. Until now
-- each was a prepared statement joining `unnest($ids, $attempts, ...)` to the table. After
-- five calls PostgreSQL may keep a generic plan, and it re-plans whenever courier.jobs is
-- analyzed. A queue table is often analyzed when it is nearly empty: in the 30-minute soak
-- (bench/notes.md, "The stall at full length") the first autovacuum ANALYZE saw one live
-- row. On those statistics the cheapest join looks like "walk the table once, compare each
-- row with the list", that is, walk the whole primary key (filtered on leased_by) as the
-- outer side of a nested loop. That plan took 330 ms to 1.9 s per success acknowledgement
-- and up to 4.1 s per lease renewal while the table held the soak's backlog. The queue
-- stalled for two minutes, until the next ANALYZE.
--
-- Each statement now reaches its rows by `j.id = any(p_ids)`, an index condition on
-- jobs_pkey that no statistics can remove. The fence (attempt; the per-row values) comes
-- from a hash join with the unnested lists. The functions force generic plans (each
-- statement is planned once per session) and turn off what could undo that shape:
--   * sequential and bitmap scans (a plan made while the table was small must not stay a
--     scan once it is big);
--   * nested loops and merge joins. The other nested loop, rows found outer and the list
--     rescanned for each, is quadratic: 220 ms for a batch of 1,000 on the same statistics.
-- With those off, a hash join is the only join left, so every statement is linear in the
-- batch whatever the statistics say: a batch of n ids costs n primary key probes and one
-- hash of n list entries.
--
-- The behaviour is the statements' own: the fence is id + attempt + leased_by, a success
-- is archived into courier.completed_jobs unless p_archive is false (--retention 0), and
-- the renewal skips rows locked by someone else (in practice this worker's own
-- acknowledgement of that job). A retry of a job whose cancellation was requested, and
-- every dead letter, is recorded in courier.dead_letters with the job's request. The
-- columns a dead letter keeps are the ones DeadLettersTable.keptJobColumns lists;
-- DeadLetterColumnsTests checks that every path keeps each of them.

create function courier.complete_jobs(p_ids bigint[], p_attempts int[], p_statuses int[], p_durations_ms int[],
                                      p_worker uuid, p_archive boolean)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    -- p_statuses: the HTTP status, -1 for none.
    return query
    with done as (
        delete from courier.jobs j
        using unnest(p_ids, p_attempts, p_statuses, p_durations_ms) as a(id, attempt, status, duration_ms)
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
        returning j.id, j.kind, j.queue, j.destination, j.method, j.url, j.attempt, nullif(a.status, -1) as status,
                  a.duration_ms, j.idempotency_key, j.errors, j.created_at, j.signing_secret
    ),
    archived as (
        insert into courier.completed_jobs (id, kind, queue, destination, method, url, attempt, status, duration_ms,
                                            idempotency_key, errors, worker, created_at, signing_secret)
        select id, kind, queue, destination, method, url, attempt, status, duration_ms, idempotency_key, errors,
               p_worker, created_at, signing_secret
        from done
        where p_archive
    )
    select done.id from done;
end
$$;

create function courier.renew_leases(p_ids bigint[], p_attempts int[], p_worker uuid, p_lease_ms int)
returns table (job_id bigint, job_attempt int, cancel_requested boolean)
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    return query
    with mine as (
        select j.id
        from courier.jobs j
        join unnest(p_ids, p_attempts) as w(id, attempt) on j.id = w.id and j.attempt = w.attempt
        where j.id = any(p_ids) and j.leased_by = p_worker
        order by j.id
        for update of j skip locked
    )
    update courier.jobs j
    set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
    where j.id = any(array(select mine.id from mine))
    returning j.id, j.attempt, j.cancel_requested_at is not null;
end
$$;

-- Leased jobs that never started go back without using their attempt, not to run
-- before now + p_not_before_ms.
create function courier.hand_back_jobs(p_ids bigint[], p_attempts int[], p_worker uuid, p_not_before_ms bigint)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    return query
    update courier.jobs j
    set state = 'available', attempt = j.attempt - 1, leased_by = null, lease_expires_at = null,
        run_at = greatest(j.run_at, now() + p_not_before_ms * interval '1 millisecond')
    from unnest(p_ids, p_attempts) as a(id, attempt)
    where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
    returning j.id;
end
$$;

-- Failed attempts wait p_delays_ms (from the database's clock), each appending its error
-- (JSON text) to the job's history. An attempt with p_uses_attempt false (a throttled
-- answer of a job with a deadline) gives the claim's increment back. A job an operator
-- cancelled while its attempt ran is not retried: it becomes a `cancelled` dead letter in
-- the same statement, whether or not the worker heard of the cancellation in time.
create function courier.retry_jobs(p_ids bigint[], p_attempts int[], p_delays_ms bigint[], p_errors text[],
                                   p_uses_attempt boolean[], p_worker uuid)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    return query
    with a as (
        select * from unnest(p_ids, p_attempts, p_delays_ms, p_errors, p_uses_attempt)
            as a(id, attempt, delay_ms, error, uses_attempt)
    ),
    retried as (
        update courier.jobs j
        set state = 'available', run_at = now() + a.delay_ms * interval '1 millisecond', last_delay_ms = a.delay_ms,
            leased_by = null, lease_expires_at = null, errors = j.errors || jsonb_build_array(a.error::jsonb),
            attempt = j.attempt - case when a.uses_attempt then 0 else 1 end,
            -- A destination whose breaker opened meanwhile: wait out of the runnable index.
            held_since = case when courier.breaker_holds(j.destination) then now() end
        from a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and j.cancel_requested_at is null
        returning j.id
    ),
    cancelled as (
        delete from courier.jobs j
        using a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and j.cancel_requested_at is not null
        returning j.*, a.error as dl_error, a.uses_attempt as dl_uses_attempt
    ),
    recorded as (
        insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret)
        select id, 'cancelled', attempt - case when dl_uses_attempt then 0 else 1 end,
            errors || jsonb_build_array(dl_error::jsonb), 'cancelled', null, leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret
        from cancelled
        returning job_id
    )
    select retried.id from retried
    union all
    select recorded.job_id from recorded;
end
$$;

-- Jobs that will not be retried automatically move into courier.dead_letters with their
-- request and history, in the statement that deletes them. p_errors '' and p_statuses -1
-- mean none; p_classes '' means none. A `deadline` dead letter without an error entry is
-- one whose attempt never ran: it records no attempt, and only when the database's clock
-- agrees the deadline has passed; otherwise (the worker's clock runs ahead) the job goes
-- back, unattempted, not to be claimed before its deadline.
create function courier.dead_letter_jobs(p_ids bigint[], p_attempts int[], p_reasons text[], p_errors text[],
                                         p_classes text[], p_statuses int[], p_worker uuid)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    return query
    with a as (
        select *, (reason = 'deadline' and error = '') as never_ran
        from unnest(p_ids, p_attempts, p_reasons, p_errors, p_classes, p_statuses)
            as a(id, attempt, reason, error, last_class, last_status)
    ),
    early as (
        update courier.jobs j
        set state = 'available', attempt = j.attempt - 1, leased_by = null, lease_expires_at = null,
            run_at = greatest(j.run_at, j.deadline)
        from a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and a.never_ran and coalesce(j.deadline > now(), false)
        returning j.id
    ),
    gone as (
        delete from courier.jobs j
        using a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and not (a.never_ran and coalesce(j.deadline > now(), false))
        returning j.*, a.reason as dl_reason, a.error as dl_error, a.last_class as dl_class, a.last_status as dl_status,
                  a.never_ran as dl_never_ran
    ),
    recorded as (
        insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret)
        select id, dl_reason, case when dl_never_ran then attempt - 1 else attempt end,
            case when dl_error = '' then errors else errors || jsonb_build_array(dl_error::jsonb) end,
            nullif(dl_class, ''), nullif(dl_status, -1), leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret
        from gone
        returning job_id
    )
    select recorded.job_id from recorded
    union all
    select early.id from early;
end
$$;

revoke execute on function courier.complete_jobs(bigint[], int[], int[], int[], uuid, boolean) from public;
grant execute on function courier.complete_jobs(bigint[], int[], int[], int[], uuid, boolean) to courier_worker, courier_admin;
revoke execute on function courier.renew_leases(bigint[], int[], uuid, int) from public;
grant execute on function courier.renew_leases(bigint[], int[], uuid, int) to courier_worker, courier_admin;
revoke execute on function courier.hand_back_jobs(bigint[], int[], uuid, bigint) from public;
grant execute on function courier.hand_back_jobs(bigint[], int[], uuid, bigint) to courier_worker, courier_admin;
revoke execute on function courier.retry_jobs(bigint[], int[], bigint[], text[], boolean[], uuid) from public;
grant execute on function courier.retry_jobs(bigint[], int[], bigint[], text[], boolean[], uuid) to courier_worker, courier_admin;
revoke execute on function courier.dead_letter_jobs(bigint[], int[], text[], text[], text[], int[], uuid) from public;
grant execute on function courier.dead_letter_jobs(bigint[], int[], text[], text[], text[], int[], uuid)
    to courier_worker, courier_admin;
