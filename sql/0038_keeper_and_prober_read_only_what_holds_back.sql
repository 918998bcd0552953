-- Courier 0038: the traffic keeper and the prober read only the breakers and destinations
-- that matter, not every row.
--
-- courier.breakers keeps a row for every destination that ever failed, courier.destinations
-- one for every destination with a signing secret or a policy: a webhook sender has one per
-- customer endpoint, 100,000 and more. Most are closed and plain. Yet every second every
-- worker's traffic keeper walked both tables whole: the hold step looked for breakers not
-- closed or paused by Retry-After, and the gate step for gated destinations, each `order by`
-- the name with sorts off, so the planner walked the primary key from end to end. With
-- 100,000 of each, one idle worker spent 69 ms a second in courier.traffic_maintain (43,490
-- buffers a call), 86 ms a second looking for due probes (21.6 ms four times a second) and
-- 31 ms a second reading the held-back destinations: about a fifth of a core of PostgreSQL
-- per idle worker.
--
-- Now:
-- * breakers_not_closed_idx holds the breakers that are not closed (a handful), and
--   breakers_not_before_idx the Retry-After pauses by their end, so `not_before > now()`
--   reads only those still in force;
-- * courier.breakers_holding_back() is courier.holds_back's rule as a set, read through
--   those two indexes (HousekeepingScanTests checks the two agree, row by row);
-- * the keeper's hold and gate steps take their destinations from it and from
--   destinations_gated_idx, in name order as before (sorted by the aggregate: sorts stay
--   off for the function, whose batches depend on it; see 0035). The rest of the function
--   is 0035's, restated whole as PL/pgSQL requires, with its settings.
-- The prober's and the held-back reads (CourierStore) name the same indexes' predicates.

create index breakers_not_closed_idx on courier.breakers (destination) where state <> 'closed';
create index breakers_not_before_idx on courier.breakers (not_before) where not_before is not null;

-- The destinations whose jobs courier.holds_back holds back now: breaker not closed, or a
-- Retry-After pause in force. Each branch reads one partial index. No SET clause, so the
-- planner inlines it into its callers (as courier.holds_back).
create function courier.breakers_holding_back() returns table (destination text)
language sql stable
as $$
    select b.destination from courier.breakers b where b.state <> 'closed'
    union
    select b.destination from courier.breakers b where b.not_before > now()
$$;

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

revoke execute on function courier.breakers_holding_back() from public;
grant execute on function courier.breakers_holding_back() to courier_worker, courier_admin;
