-- Courier 0031: the plain claim is a function whose statements keep one plan per session.
--
-- Until now the worker sent the claim (JobsTable+Claim.swift, 0022's loose index scan) as
-- one prepared statement. PostgreSQL gave it a custom plan on every call: its generic plan
-- was costed higher (an unknown LIMIT is assumed to take a tenth of the rows), so the
-- plan cache never switched to it. pg_stat_statements in the no-op drain showed 1,202 plans
-- for 1,201 claims and 0.74 ms of planning per claim against 0.87 ms of execution.
--
-- A custom plan also follows the statistics of the moment. In the 30-minute soak the first
-- autovacuum ANALYZE of courier.jobs, taken mid-burst with ~800k dead versions, turned the
-- claim's update into a nested loop over the whole primary key: 300 ms to 1.3 s per claim,
-- for the minute until the next ANALYZE.
--
-- Now the claim is courier.claim, written as a few plain statements that each have exactly
-- one good plan whatever the parameters and the statistics:
--   * the next waiting priority: one descent of jobs_runnable_idx;
--   * one priority's due jobs from a position, in the index's order, locked as read;
--   * the update of those ids through `id = any(array(...))`: primary key probes, no join.
-- The function forces generic plans (each statement is planned once per session, then
-- cached) and turns sequential scans, bitmap scans and sorts off: every statement here is
-- an index walk in the index's order by design. Statistics that say courier.jobs is empty
-- (an ANALYZE between bursts) made the planner sort a bitmap scan of every waiting job
-- (206k buffers for a claim of 10), and a plan cached while the table was small must not
-- stay a sequential scan once it is big. JIT is off too (a pooled session may have it on;
-- a compiled claim took seconds).
--
-- Behaviour is 0022's: jobs of p_queue in (priority, run_at, id) order, due ones only,
-- skipping rows other workers hold (FOR UPDATE SKIP LOCKED) and destinations held back
-- (breaker not closed, Retry-After in force; checked row by row, so a just-opened breaker
-- over many jobs cannot fill the window); nothing from a paused queue; a job whose
-- destination became gated before the keeper moved it is locked but not taken. Started
-- after a position (p_after_priority, p_after_run_at_us, p_after_id; all NULL: from the
-- start), only jobs later in that order are taken.

-- When a breaker row holds its destination's jobs back: not closed, or a Retry-After pause
-- in force. The one statement of that rule for the claim and for the worker's list of held
-- destinations (BreakersTable.heldBack). A single expression, so it is inlined where used.
create function courier.holds_back(b courier.breakers) returns boolean
language sql stable as $$
    select b.state <> 'closed' or b.not_before > now()
$$;

create function courier.claim(p_queue text, p_limit int, p_worker uuid, p_lease_ms int,
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
    v_priority int := p_after_priority;
    v_after    timestamptz := timestamptz 'epoch' + p_after_run_at_us * interval '1 microsecond';
    v_got      int;
    v_ids      bigint[];
begin
    if p_limit <= 0 or exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused) then
        return;
    end if;
    if v_priority is null then
        -- From the start: the lowest waiting priority, from its first job.
        select c.priority into v_priority from courier.jobs c
        where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
        order by c.queue, c.priority
        limit 1;
        if not found then
            return;
        end if;
        v_after := '-infinity';
        p_after_id := 0;
    end if;
    loop
        -- One priority's due jobs from the position, in the index's order, locked as read.
        -- The index's own order: with the parameters unknown to the planner (the plan is
        -- generic), only this ORDER BY keeps it walking jobs_runnable_idx.
        v_ids := array(
            select c.id from courier.jobs c
            where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
              and c.priority = v_priority and (c.run_at, c.id) > (v_after, p_after_id) and c.run_at <= now()
              and (select courier.holds_back(b) from courier.breakers b
                   where b.destination = c.destination) is not true
            order by c.queue, c.priority, c.run_at, c.id
            limit v_left
            for update skip locked);
        if cardinality(v_ids) > 0 then
            -- Primary key probes: no statistics can turn this into a scan of the jobs.
            return query
            update courier.jobs j
            set state = 'running', attempt = j.attempt + 1, leased_by = p_worker,
                lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
            where j.id = any(v_ids)
              and not exists (select 1 from courier.destinations d where d.destination = j.destination and d.gated)
            returning j.*;
            get diagnostics v_got = row_count;
            v_left := v_left - v_got;
            exit when v_left <= 0;
        end if;
        -- The next waiting priority, from its first job.
        select c.priority into v_priority from courier.jobs c
        where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
          and c.priority > v_priority
        order by c.queue, c.priority
        limit 1;
        exit when not found;
        v_after := '-infinity';
        p_after_id := 0;
    end loop;
end
$$;
revoke execute on function courier.holds_back(courier.breakers) from public;
grant execute on function courier.holds_back(courier.breakers) to courier_worker, courier_admin;
revoke execute on function courier.claim(text, int, uuid, int, int, bigint, bigint) from public;
grant execute on function courier.claim(text, int, uuid, int, int, bigint, bigint) to courier_worker, courier_admin;
