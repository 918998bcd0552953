-- Courier 0035: the traffic keeper's batches walk the destination's own index.
--
-- Each step of courier.traffic_maintain (hold, release, gate, ungate) takes a batch of one
-- destination's waiting jobs: `where c.destination = $1 and c.state = 'available' and
-- c.held_since ... limit $2 for update skip locked`. When the statistics say a destination
-- matches many rows (a generic plan, which cannot know the destination, when one destination
-- has nearly all the waiting jobs; or statistics taken while the gated destinations held
-- them), the LIMIT makes the cheapest-looking path a walk of jobs_runnable_idx (whose
-- predicate matches the other conditions) with the destination as a heap filter. For a destination with no such jobs, that walk reads the whole runnable index
-- and a heap row per entry. The 30-minute soak of 2026-12-02T17:55Z ran on a database
-- whose 100 destinations were gated (left by the traffic benchmark) while all its traffic
-- went to one other destination. The gate step walked the runnable index once per gated
-- destination. A single call ran for at least 16 minutes in one transaction, held back
-- vacuum's horizon (25M dead versions in courier.jobs by minute 27) and made claims take seconds,
-- until the database stopped answering.
--
-- Now each batch orders by the leading columns of the index made for it: jobs_destination_idx
-- (destination, held_since, gated, ...) for hold and gate, jobs_held_idx (destination) for
-- release, and jobs_gated_idx (destination, ...) for ungate. Sorts are off for the function,
-- so no other index can serve that order. The destination is then an index condition, and a
-- destination without such jobs costs one descent. The statements and their semantics are
-- 0022's. The function is redefined whole, as PL/pgSQL requires. 0032's settings (seqscan,
-- bitmapscan and JIT off) are restated, because CREATE OR REPLACE resets them.
-- ClaimScanTests: a pass over 50 gated destinations whose jobs are gone, with 50k jobs of
-- another destination, read 114k buffers before this and ~3k after.

create or replace function courier.traffic_maintain(p_batch int default 2000)
returns bigint
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
set enable_bitmapscan = off
set enable_sort = off
set jit = off
as $$
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
        update courier.jobs j set held_since = null
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
    for v_destination in select d.destination from courier.destinations d where d.gated order by d.destination loop
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
