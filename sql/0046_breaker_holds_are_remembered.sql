-- Courier 0046: a job remembers how long its destination's breaker held it back, so the span of
-- its next attempt can say so (issue 44: breaker holds as span events).
--
--   * courier.jobs.held_ms: the milliseconds the job was due while held back (held_since set)
--     since its last attempt, added up by the keeper as it releases the job
--     (courier.traffic_maintain). Time held before run_at is not counted: a retry scheduled an
--     hour ahead that was held for ten minutes of that hour waited for nothing.
--   * courier.retry_jobs (the lease-fenced one) clears it with the attempt that ends; a hand-back
--     or a refusal is no attempt and keeps it. The claim reads it with the job (one more column).
-- Adding the column writes no row (nullable, no default).

alter table courier.jobs add column held_ms bigint;

create or replace function courier.traffic_maintain(p_batch integer DEFAULT 2000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
declare
    v_left bigint := greatest(1, p_batch);
    v_n bigint;
    v_released bigint := 0;
    v_destination text;
    v_names text[];
begin
    if not pg_try_advisory_xact_lock(7166485043271492461) then
        return -1;
    end if;
    perform set_config('lock_timeout', '2000', true);
    -- Hold.
    -- In name order, the order every statement that locks several breakers rows takes.
    -- The names are sorted by the aggregate, not by a Sort node: sorts are off here, and
    -- with them off the planner would walk breakers_pkey whole to get the order.
    select array_agg(h.destination order by h.destination) into v_names from courier.breakers_holding_back() h;
    foreach v_destination in array coalesce(v_names, '{}') loop
        exit when v_left <= 0;
        update courier.jobs j set held_since = now()
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is null
                       order by c.destination, c.held_since
                       limit v_left for update skip locked);
        get diagnostics v_n = row_count;
        if v_n > 0 then
            update courier.breakers set deferred_jobs = deferred_jobs + v_n where destination = v_destination;
            v_left := v_left - v_n;
        end if;
    end loop;
    -- Release: every destination with held jobs (a loose index scan, one probe each).
    for v_destination in
        with recursive held(destination) as (
            (select j.destination from courier.jobs j where j.held_since is not null order by j.destination limit 1)
            union all
            select (select j.destination from courier.jobs j
                    where j.held_since is not null and j.destination > held.destination
                    order by j.destination limit 1)
            from held where held.destination is not null
        )
        select h.destination from held h
        where h.destination is not null
          and not exists (select 1 from courier.breakers b
                          where b.destination = h.destination and (b.state <> 'closed' or b.not_before > now()))
    loop
        exit when v_left <= 0;
        -- What the hold cost the job: the time it was due while held, kept until its next
        -- attempt's end for that attempt's span (courier.breaker_held).
        update courier.jobs j
        set held_since = null,
            held_ms = coalesce(j.held_ms, 0)
                      + greatest(0, (extract(epoch from now() - greatest(j.held_since, j.run_at)) * 1000)::bigint)
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is not null
                       order by c.destination
                       limit v_left for update skip locked);
        get diagnostics v_n = row_count;
        v_left := v_left - v_n;
        v_released := v_released + v_n;
    end loop;
    -- Gate: running jobs first (one pass over the running ones), so they count against the cap.
    update courier.jobs j set gated = true
    from courier.destinations d
    where j.state = 'running' and not j.gated and d.destination = j.destination and d.gated;
    select array_agg(d.destination order by d.destination) into v_names from courier.destinations d where d.gated;
    foreach v_destination in array coalesce(v_names, '{}') loop
        exit when v_left <= 0;
        update courier.jobs j set gated = true
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is null and not c.gated
                       order by c.destination, c.held_since, c.gated
                       limit v_left for update skip locked);
        get diagnostics v_n = row_count;
        v_left := v_left - v_n;
    end loop;
    -- Ungate: every destination with gated waiting jobs whose row is gone or no longer gated.
    for v_destination in
        with recursive g(destination) as (
            (select j.destination from courier.jobs j
             where j.state = 'available' and j.held_since is null and j.gated order by j.destination limit 1)
            union all
            select (select j.destination from courier.jobs j
                    where j.state = 'available' and j.held_since is null and j.gated and j.destination > g.destination
                    order by j.destination limit 1)
            from g where g.destination is not null
        )
        select g.destination from g
        where g.destination is not null
          and not exists (select 1 from courier.destinations d where d.destination = g.destination and d.gated)
    loop
        exit when v_left <= 0;
        update courier.jobs j set gated = false
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is null and c.gated
                       order by c.destination
                       limit v_left for update skip locked);
        get diagnostics v_n = row_count;
        v_left := v_left - v_n;
        v_released := v_released + v_n;
    end loop;
    if v_released > 0 then
        perform pg_notify('courier_jobs', '');
    end if;
    return greatest(1, p_batch) - v_left;
end
$$;

create or replace function courier.retry_jobs(p_ids bigint[], p_leases bigint[], p_delays_ms bigint[], p_errors text[], p_uses_attempt boolean[], p_worker uuid) RETURNS SETOF bigint
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    return query
    with a as (
        select * from unnest(p_ids, p_leases, p_delays_ms, p_errors, p_uses_attempt)
            as a(id, lease, delay_ms, error, uses_attempt)
    ),
    retried as (
        update courier.jobs j
        set state = 'available', run_at = now() + a.delay_ms * interval '1 millisecond', last_delay_ms = a.delay_ms,
            leased_by = null, lease_expires_at = null, errors = j.errors || jsonb_build_array(a.error::jsonb),
            attempt = j.attempt - case when a.uses_attempt then 0 else 1 end,
            held_since = case when courier.breaker_holds(j.destination) then now() end, held_ms = null
        from a
        where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
          and j.cancel_requested_at is null
        returning j.id
    ),
    cancelled as (
        delete from courier.jobs j
        using a
        where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
          and j.cancel_requested_at is not null
        returning j.*, a.error as dl_error, a.uses_attempt as dl_uses_attempt
    ),
    recorded as (
        insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate, fairness_key)
        select id, 'cancelled', attempt - case when dl_uses_attempt then 0 else 1 end,
            errors || jsonb_build_array(dl_error::jsonb), 'cancelled', null, leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate, fairness_key
        from cancelled
        returning job_id
    )
    select retried.id from retried
    union all
    select recorded.job_id from recorded;
end
$$;
