-- Courier 0037: the claim looks for the queue's waiting priorities from one end, not both.
--
-- Jobs claimed since the last VACUUM leave dead entries at the head of jobs_runnable_idx
-- (their 'available' versions). Until VACUUM removes them (autovacuum visits at most every
-- autovacuum_naptime, and cannot while a long transaction holds the xmin horizon), every
-- index scan that starts at the head of the queue steps over them, page by page. 0036's
-- first statement looked up the lowest waiting priority from the head and the highest from
-- the tail. So after a burst an empty queue's poll walked the dead entries twice (from
-- either end, finding nothing), and the claim of a job enqueued behind them twice (once
-- to find its priority, once in the update). With 200,000 jobs drained and not yet
-- vacuumed: a claim of the one new job read 2,442 buffers, an empty queue's 2,416.
--
-- Now the highest waiting priority is looked up first, from the tail, and the lowest only
-- below it (`priority < last`): when every waiting job has one priority, that range holds
-- no entry and costs one descent. The same claim reads 1,236 buffers, the empty poll 1,209.
-- OFFSET 0 keeps the highest-priority lookup one subquery, evaluated once (without it
-- the planner copied it into every reference), and `last is not null` skips the second
-- lookup when nothing waits. In the usual case (a handful of dead entries) the claim costs
-- what 0036's did: a one-job claim under pgbench took 160-167 us on average (0036: 157-176).
--
-- Behaviour is 0036's, unchanged (see 0031 and 0036 for the rules). The function's settings
-- are restated because CREATE OR REPLACE resets them.

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
    -- No row when the queue is paused; v_last is null when nothing waits. The highest
    -- waiting priority first, then the lowest only below it: an empty queue, or one whose
    -- waiting jobs share one priority, is looked for once, not from both ends.
    select h.last,
           coalesce(p_after_priority,
                    (select c.priority from courier.jobs c
                     where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
                       and c.priority < h.last
                     order by c.queue, c.priority
                     limit 1),
                    h.last)
    into v_last, v_priority
    from (select (select c.priority from courier.jobs c
                  where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
                  order by c.queue desc, c.priority desc
                  limit 1) as last
          offset 0) h
    where h.last is not null
      and not exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused);
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
