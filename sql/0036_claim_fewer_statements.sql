-- Courier 0036: the plain claim runs two statements where it ran five.
--
-- Issue 11's pickup latency: an idle worker's claim of the one job a NOTIFY announced
-- took 0.62-0.64 ms from the claimer's wake-up to the rows in hand, against 0.55-0.57 ms
-- for the single claim statement of eb987d3 (median of 1,000 single-job pickups each,
-- same run). 0031's courier.claim ran, for that one job, five statements one after the
-- other: whether the queue is paused, the lowest waiting priority, that priority's due
-- ids, the update of those ids, and the next waiting priority (none). Each is a cached
-- plan, but each is a trip through the executor.
--
-- Now, for the usual queue (one priority waiting, fewer jobs than the limit):
--   * one statement asks whether the queue is paused and finds its lowest and its highest
--     waiting priorities (two descents of jobs_runnable_idx, one from each end);
--   * one statement takes a priority's due jobs: the update of `id = any(array(select ...
--     for update skip locked))`, the form claim_take already uses (0033): the ids are
--     found in the index's order and locked as read, then updated through jobs_pkey;
--   * the next priority is looked up only while the claim is short and a higher priority
--     than the one just taken is still waiting (as the first statement saw it: a job of a
--     higher priority committed after that is left to the next claim, as one committed
--     after the whole claim would be).
--
-- Behaviour is 0031's, unchanged: jobs of p_queue in (priority, run_at, id) order, due
-- ones only, skipping rows other workers hold and destinations held back (row by row);
-- nothing from a paused queue; a job whose destination became gated before the keeper
-- moved it is locked but not taken; from a position, only jobs later in that order. The
-- function's settings are restated because CREATE OR REPLACE resets them.

create or replace function courier.claim(p_queue text, p_limit int, p_worker uuid, p_lease_ms int,
                                         p_after_priority int, p_after_run_at_us bigint, p_after_id bigint)
returns setof courier.jobs
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_sort = off
set jit = off
as $$
declare
    v_left     int := p_limit;
    v_priority int;
    -- The highest waiting priority: once it is taken, no later priority needs a look.
    v_last     int;
    v_after    timestamptz := timestamptz 'epoch' + p_after_run_at_us * interval '1 microsecond';
    v_after_id bigint := p_after_id;
    v_got      int;
begin
    if p_limit <= 0 then
        return;
    end if;
    -- No row when the queue is paused; v_last is null when nothing waits.
    select coalesce(p_after_priority,
                    (select c.priority from courier.jobs c
                     where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
                     order by c.queue, c.priority
                     limit 1)),
           (select c.priority from courier.jobs c
            where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
            order by c.queue desc, c.priority desc
            limit 1)
    into v_priority, v_last
    where not exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused);
    if v_last is null or v_priority > v_last then
        return;
    end if;
    if p_after_priority is null then
        -- From the start: the lowest waiting priority, from its first job.
        v_after := '-infinity';
        v_after_id := 0;
    end if;
    loop
        -- One priority's due jobs from the position, in the index's order, locked as read,
        -- then updated through the primary key (no statistics can turn that into a scan).
        -- The index's own order: with the parameters unknown to the planner (the plan is
        -- generic), only this ORDER BY keeps it walking jobs_runnable_idx.
        return query
        update courier.jobs j
        set state = 'running', attempt = j.attempt + 1, leased_by = p_worker,
            lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
        where j.id = any(array(
                select c.id from courier.jobs c
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
                  and c.priority = v_priority and (c.run_at, c.id) > (v_after, v_after_id) and c.run_at <= now()
                  and (select courier.holds_back(b) from courier.breakers b
                       where b.destination = c.destination) is not true
                order by c.queue, c.priority, c.run_at, c.id
                limit v_left
                for update skip locked))
          and not exists (select 1 from courier.destinations d where d.destination = j.destination and d.gated)
        returning j.*;
        get diagnostics v_got = row_count;
        v_left := v_left - v_got;
        exit when v_left <= 0 or v_priority >= v_last;
        -- The next waiting priority, from its first job.
        select c.priority into v_priority from courier.jobs c
        where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
          and c.priority > v_priority
        order by c.queue, c.priority
        limit 1;
        exit when not found;
        v_after := '-infinity';
        v_after_id := 0;
    end loop;
end
$$;
