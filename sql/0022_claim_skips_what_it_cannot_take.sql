-- Courier 0022: a backlog of scheduled or paused jobs costs the claim nothing (issue 12, item 4).
--
-- The claim (JobsTable+Claim.swift) walks jobs_runnable_idx (queue, priority, run_at, id) one
-- priority at a time (a loose index scan), so each range stops at the first job not yet due:
-- jobs scheduled ahead (backoffs, --in, paced replays) are never visited. What remains in
-- that index and is due but cannot be taken is a destination's jobs held back by its
-- breaker: open, half-open, or paused by Retry-After (breakers.not_before). Open breakers'
-- jobs were already moved out by the keeper; now Retry-After pauses are too, and they come
-- back when the pause ends. Jobs that land behind an open breaker or a pause without being
-- held (hand-back, rescue, replay) are held by the keeper's next pass, in bounded batches.

-- Retried jobs of a destination paused by Retry-After wait out of the runnable index, like
-- those of an open breaker (JobsTable.retry sets held_since from this).
create or replace function courier.breaker_holds(p_destination text) returns boolean
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
    select exists (select 1 from courier.breakers
                   where destination = p_destination and (state <> 'closed' or not_before > now()))
$$;

-- As in 0014, and a destination paused by Retry-After is held like one whose breaker is not
-- closed: its waiting jobs leave the runnable index, in bounded batches, and are released
-- once its breaker is closed and the pause is over (within a keeper pass, about a second).
create or replace function courier.traffic_maintain(p_batch int default 2000)
returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
    v_left bigint := greatest(1, p_batch);
    v_n bigint;
    v_released bigint := 0;
    v_destination text;
begin
    if not pg_try_advisory_xact_lock(7166485043271492461) then
        return -1;
    end if;
    perform set_config('lock_timeout', '2000', true);
    -- Hold.
    for v_destination in select b.destination from courier.breakers b
                         where b.state <> 'closed' or b.not_before > now() order by b.destination loop
        exit when v_left <= 0;
        update courier.jobs j set held_since = now()
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is null
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
        update courier.jobs j set held_since = null
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is not null
                       limit v_left for update skip locked);
        get diagnostics v_n = row_count;
        v_left := v_left - v_n;
        v_released := v_released + v_n;
    end loop;
    -- Gate: running jobs first (one pass over the running ones), so they count against the cap.
    update courier.jobs j set gated = true
    from courier.destinations d
    where j.state = 'running' and not j.gated and d.destination = j.destination and d.gated;
    for v_destination in select d.destination from courier.destinations d where d.gated order by d.destination loop
        exit when v_left <= 0;
        update courier.jobs j set gated = true
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is null and not c.gated
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
