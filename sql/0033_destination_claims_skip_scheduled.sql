-- Courier 0033: a destination's scheduled-ahead jobs cost its claims nothing.
--
-- courier.claim_take (0024) is the lease-taking statement of the spread claim and of the
-- gated claim. It walked jobs_destination_idx (destination, held_since, gated, queue,
-- priority, run_at, id) from the destination's first waiting job, with `run_at <= now()`
-- only a filter: the index orders by priority before run_at, so the walk could not stop at
-- the first job not yet due. When fewer than the limit were due, it read every job of the
-- destination scheduled ahead (backoffs, --in, --run-at, paced replays). claim_gated's
-- probes for a due job (0014) walked jobs_gated_idx the same way. Measured on this
-- machine with 200k jobs of one destination scheduled a day ahead: 3,275 buffers and 35 ms
-- per spread claim that visited it, 2,439 buffers and 21 ms per gated claim; both grow
-- with the backlog. The plain claim (courier.claim, 0031) has walked one priority at a
-- time since 0022; now these do too:
--   * courier.has_due_job: whether a destination has a due job of a queue, one priority at
--     a time (one descent for the next waiting priority, one bounded range for its due
--     jobs), so a priority whose jobs are all ahead costs one probe;
--   * courier.claim_take takes the due jobs the same way, priority by priority, in the
--     claim's order, with the same signature and the same rules;
--   * courier.claim_gated asks courier.has_due_job instead of its three inline probes;
--     otherwise it is 0014's function, whole, as a migration must redefine it.
-- Like courier.claim, the two new bodies plan each statement once per session (generic
-- plans) with sequential scans, bitmap scans, sorts and JIT off: each is an index walk in
-- the index's order by design, and a plan must not follow the statistics of the moment.

-- Whether p_destination has a due, unheld job of p_queue, gated as p_gated says: any
-- (p_retries null), a retry (true: an attempt behind it) or a first attempt (false).
create function courier.has_due_job(p_destination text, p_queue text, p_gated boolean, p_retries boolean)
returns boolean
language plpgsql stable
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_sort = off
set jit = off
as $$
declare
    v_priority int;
begin
    loop
        -- The next waiting priority (the lowest, the first time round): one descent of
        -- jobs_destination_idx. -32769 is below every priority jobs_priority_check allows.
        select c.priority into v_priority from courier.jobs c
        where c.destination = p_destination and c.held_since is null and c.gated = p_gated and c.queue = p_queue
          and c.state = 'available' and c.priority > coalesce(v_priority, -32769)
        order by c.destination, c.held_since, c.gated, c.queue, c.priority
        limit 1;
        exit when not found;
        -- Priority fixed, run_at bounds the range: the walk ends at the first job not due.
        if exists (select 1 from courier.jobs c
                   where c.destination = p_destination and c.held_since is null and c.gated = p_gated
                     and c.queue = p_queue and c.state = 'available'
                     and c.priority = v_priority and c.run_at <= now()
                     and (p_retries is null or (c.attempt > 0) = p_retries)) then
            return true;
        end if;
    end loop;
    return false;
end
$$;
revoke execute on function courier.has_due_job(text, text, boolean, boolean) from public;

-- Leases up to p_limit runnable jobs of one destination and queue (not held, gated as
-- p_gated says, due) in the claim's order, skipping rows others hold; any of them
-- (p_retries null), only retries (true) or only first attempts (false). As 0024, one
-- priority at a time.
create or replace function courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid,
                                              p_lease_ms int, p_limit int, p_retries boolean)
returns setof courier.jobs
language plpgsql volatile rows 10
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
    v_ids      bigint[];
    v_got      int;
begin
    if p_limit <= 0 then
        return;
    end if;
    loop
        -- The next waiting priority, as in courier.has_due_job.
        select c.priority into v_priority from courier.jobs c
        where c.destination = p_destination and c.held_since is null and c.gated = p_gated and c.queue = p_queue
          and c.state = 'available' and c.priority > coalesce(v_priority, -32769)
        order by c.destination, c.held_since, c.gated, c.queue, c.priority
        limit 1;
        exit when not found;
        -- One priority's due jobs, in the index's order (with the parameters unknown to
        -- the planner, only this ORDER BY keeps it walking the index), locked as read.
        v_ids := array(
            select c.id from courier.jobs c
            where c.destination = p_destination and c.held_since is null and c.gated = p_gated
              and c.queue = p_queue and c.state = 'available'
              and c.priority = v_priority and c.run_at <= now()
              and (p_retries is null or (c.attempt > 0) = p_retries)
            order by c.destination, c.held_since, c.gated, c.queue, c.priority, c.run_at, c.id
            limit v_left
            for update skip locked);
        if cardinality(v_ids) > 0 then
            -- Primary key probes per id.
            return query
            update courier.jobs j
            set state = 'running', attempt = j.attempt + 1, leased_by = p_worker,
                lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
            where j.id = any(v_ids)
            returning j.*;
            get diagnostics v_got = row_count;
            v_left := v_left - v_got;
            exit when v_left <= 0;
        end if;
    end loop;
end
$$;

-- The gated claim (0014), its probes for a due job now courier.has_due_job.
create or replace function courier.claim_gated(p_queue text, p_limit int, p_worker uuid, p_lease_ms int)
returns setof courier.jobs
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
    v_left      int := p_limit;
    c           record;
    s           courier.destinations;
    v_clock     timestamptz;
    v_cap       int;
    v_running   int;
    v_allow     int;
    v_tokens    float8;
    v_retries   int;
    v_got       int;
    v_got_retries int;
    v_limited   boolean;
    v_deferred  boolean;
begin
    if exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused) then
        return;
    end if;
    for c in
        select d.destination, d.max_in_flight, d.slow_start_ms, d.ramp_started_at, d.rate, d.burst, d.tokens, d.tokens_at,
               d.limited_at,
               case when d.max_in_flight is null then 0 else
                   (select count(*) from courier.jobs j
                    where j.destination = d.destination and j.state = 'running' and j.gated) end as running
        from courier.destinations d
        where d.gated and not d.paused
          and not exists (select 1 from courier.breakers b
                          where b.destination = d.destination and (b.state <> 'closed' or b.not_before > now()))
        order by d.last_claim_at nulls first, d.destination
    loop
        exit when v_left <= 0;
        v_clock := clock_timestamp();
        -- At its limit in this snapshot: pass over it unlocked, noting it (at most once a
        -- second, and only when jobs of this queue wait).
        if c.running >= coalesce(courier.traffic_cap(c.max_in_flight, c.slow_start_ms, c.ramp_started_at, v_clock), c.running + 1)
           or floor(coalesce(courier.traffic_tokens(c.rate, c.burst, c.tokens, c.tokens_at, v_clock), 1)) < 1 then
            if (c.limited_at is null or c.limited_at < v_clock - interval '1 second')
               and courier.has_due_job(c.destination, p_queue, true, null) then
                perform 1 from courier.destinations d where d.destination = c.destination for update skip locked;
                if found then
                    update courier.destinations d
                    set limited_at = v_clock,
                        slot_waits = d.slot_waits
                            + (c.running >= coalesce(courier.traffic_cap(c.max_in_flight, c.slow_start_ms, c.ramp_started_at, v_clock),
                                                     c.running + 1))::int,
                        token_waits = d.token_waits
                            + (floor(coalesce(courier.traffic_tokens(c.rate, c.burst, c.tokens, c.tokens_at, v_clock), 1)) < 1)::int
                    where d.destination = c.destination;
                end if;
            end if;
            continue;
        end if;
        -- Nothing of this queue waiting: nothing to do.
        continue when not courier.has_due_job(c.destination, p_queue, true, null);
        -- Room, by the snapshot: lock the row and count again, now exactly (a new snapshot,
        -- in which every earlier claim of this destination has committed).
        select * into s from courier.destinations d where d.destination = c.destination and d.gated and not d.paused
        for update skip locked;
        continue when not found;
        v_clock := clock_timestamp();
        v_allow := v_left;
        v_limited := false;
        v_deferred := false;
        v_cap := courier.traffic_cap(s.max_in_flight, s.slow_start_ms, s.ramp_started_at, v_clock);
        if v_cap is not null then
            select count(*) into v_running from courier.jobs j
            where j.destination = s.destination and j.state = 'running' and j.gated;
            if v_cap - v_running <= v_allow then
                v_allow := greatest(0, v_cap - v_running);
                v_limited := true;
            end if;
        end if;
        -- The token bucket: at most burst + rate x T requests start in any T seconds.
        v_tokens := courier.traffic_tokens(s.rate, s.burst, s.tokens, s.tokens_at, v_clock);
        if v_tokens is not null and floor(v_tokens) <= v_allow then
            v_allow := greatest(0, floor(v_tokens)::int);
            v_limited := true;
        end if;
        -- The retry budget over a one-minute window: retries (jobs with an attempt behind
        -- them) at most retry_budget_pct of the window's requests, and at least 3.
        if s.retry_budget_pct is not null then
            if s.budget_window_at is null or s.budget_window_at < v_clock - interval '1 minute' then
                s.budget_window_at := v_clock;
                s.budget_requests := 0;
                s.budget_retries := 0;
            end if;
            v_retries := greatest(0, greatest(3, floor(s.retry_budget_pct / 100 * s.budget_requests)::int) - s.budget_retries::int);
        else
            v_retries := v_allow;
        end if;
        v_got := 0;
        v_got_retries := 0;
        if v_allow > 0 then
            if v_retries >= v_allow then
                -- No budget in the way: one pick in the usual order.
                return query select * from courier.claim_gated_take(s.destination, p_queue, p_worker, p_lease_ms, v_allow, null);
                get diagnostics v_got = row_count;
                if s.retry_budget_pct is not null and v_got > 0 then
                    select count(*) into v_got_retries from courier.jobs j
                    where j.destination = s.destination and j.state = 'running' and j.gated
                      and j.leased_by = p_worker and j.attempt > 1 and j.attempted_at = now();
                end if;
            else
                -- Retries within the budget first, then first attempts.
                if v_retries > 0 then
                    return query select * from courier.claim_gated_take(s.destination, p_queue, p_worker, p_lease_ms, v_retries, true);
                    get diagnostics v_got_retries = row_count;
                end if;
                return query select * from courier.claim_gated_take(s.destination, p_queue, p_worker, p_lease_ms,
                                                                    v_allow - v_got_retries, false);
                get diagnostics v_got = row_count;
                v_got := v_got + v_got_retries;
                -- Retries left waiting for the budget are deferred (no attempt used).
                v_deferred := courier.has_due_job(s.destination, p_queue, true, true);
            end if;
        end if;
        v_left := v_left - v_got;
        if v_got > 0 or v_deferred or v_allow = 0 then
            update courier.destinations d
            set tokens = case when s.rate is null then null else v_tokens - v_got end,
                tokens_at = case when s.rate is null then null else v_clock end,
                last_claim_at = case when v_got > 0 then v_clock else d.last_claim_at end,
                limited_at = case when v_allow = 0 or v_deferred then v_clock else d.limited_at end,
                claimed_total = d.claimed_total + v_got,
                slot_waits = d.slot_waits + (v_allow = 0 and v_cap is not null and v_cap <= v_running)::int,
                token_waits = d.token_waits + (v_allow = 0 and v_tokens is not null and floor(v_tokens) < 1)::int,
                retries_deferred = d.retries_deferred + v_deferred::int,
                budget_window_at = s.budget_window_at,
                budget_requests = case when s.retry_budget_pct is null then 0 else s.budget_requests + v_got end,
                budget_retries = case when s.retry_budget_pct is null then 0 else s.budget_retries + v_got_retries end
            where d.destination = s.destination;
        end if;
    end loop;
end
$$;
