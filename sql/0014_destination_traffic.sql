-- Courier 0014: destination traffic control (concurrency caps, rate limits with burst,
-- slow start, retry budgets, pause) and queue pause; holding and releasing in bounded
-- batches off the lease and acknowledgement paths; a claim index without the jobs it
-- cannot take.
--
-- The shape:
--   * A destination with a traffic policy (max_in_flight, rate, retry_budget_pct or
--     paused) is "gated". Its jobs carry jobs.gated = true and live in their own index
--     (jobs_gated_idx, by destination), not in the runnable index the plain claim walks:
--     a capped, rate-limited or paused backlog costs other destinations' claims nothing.
--   * courier.claim_gated takes gated jobs destination by destination, least recently
--     served first (fair), under the destination row's lock (FOR UPDATE SKIP LOCKED, so
--     claimers of one destination serialize and never wait on each other). With the lock
--     held it counts the destination's running gated jobs in a statement of its own, so
--     every earlier claim has committed and is counted: the cap is exact fleet-wide. The
--     rate is a token bucket in the same row, refilled on the database's clock.
--   * Destinations without a policy pay nothing: their jobs stay ungated, the plain claim
--     is the claim of 0001 with "not gated" in its index predicate, and workers call
--     claim_gated only while some destination is gated.
--   * courier.traffic_maintain, run by every worker's keeper service (one at a time, by
--     advisory lock), moves jobs between the indexes in bounded batches: gating and
--     ungating when policies change, and holding and releasing for breakers (which used
--     to hold or release a destination's whole backlog in one statement, under the
--     breaker row's lock, on the threads that renew leases and acknowledge jobs).

-- Policies. NULL is "no policy"; checks name the column (22023 from destination_set first).
alter table courier.destinations
    add column max_in_flight    int,
    add column rate             float8,   -- requests per second
    add column burst            int,      -- the bucket's size; default ceil(rate / 10), at least 1
    add column slow_start_ms    bigint,   -- ramp after a breaker closes or a pause ends; default 5000
    add column retry_budget_pct float8,   -- retries at most this share of the last minute's requests
    add column paused           boolean not null default false,
    -- Runtime state, written by courier.claim_gated (as its owner).
    add column tokens           float8,
    add column tokens_at        timestamptz,
    add column ramp_started_at  timestamptz,
    add column budget_window_at timestamptz,
    add column budget_requests  bigint not null default 0,
    add column budget_retries   bigint not null default 0,
    add column last_claim_at    timestamptz,
    add column limited_at       timestamptz,   -- the last claim that found it at a limit and took nothing
    add column claimed_total    bigint not null default 0,
    add column slot_waits       bigint not null default 0,
    add column token_waits      bigint not null default 0,
    add column retries_deferred bigint not null default 0,
    add column gated boolean generated always as
        (max_in_flight is not null or rate is not null or retry_budget_pct is not null or paused) stored,
    add constraint destinations_max_in_flight_check check (max_in_flight is null or max_in_flight between 1 and 100000),
    add constraint destinations_rate_check check (rate is null or (rate > 0 and rate <= 1000000)),
    add constraint destinations_burst_check check (burst is null or burst between 1 and 1000000),
    add constraint destinations_slow_start_ms_check check (slow_start_ms is null or slow_start_ms between 0 and 86400000),
    add constraint destinations_retry_budget_pct_check
        check (retry_budget_pct is null or retry_budget_pct between 0 and 100);
create index destinations_gated_idx on courier.destinations (last_claim_at nulls first) where gated;

alter table courier.queue_settings add column paused boolean not null default false;

-- Gated jobs: in the gated index, never in the runnable one.
alter table courier.jobs add column gated boolean not null default false;

drop index courier.jobs_runnable_idx;
create index jobs_runnable_idx on courier.jobs (queue, priority, run_at, id)
    where state = 'available' and held_since is null and not gated;
create index jobs_gated_idx on courier.jobs (destination, queue, priority, run_at, id)
    where state = 'available' and held_since is null and gated;
-- Counting a gated destination's running jobs (at most its cap) under its lock.
create index jobs_gated_running_idx on courier.jobs (destination) where state = 'running' and gated;
-- Holding, releasing, gating and ungating one destination's waiting jobs a batch at a time
-- without walking the ones already moved (was: (destination) alone).
drop index courier.jobs_destination_idx;
create index jobs_destination_idx on courier.jobs (destination, held_since, gated) where state = 'available';

-- Breakers no longer hold or release inline: the keeper does it in batches, and until it
-- has, the claims' anti-join on courier.breakers keeps the jobs from running. These keep
-- their signatures so the breaker transitions of 0003/0013 stay as they are.
create or replace function courier.breaker_hold_jobs(p_destination text) returns bigint
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
    select 0::bigint
$$;

-- A breaker that closes starts its destination's slow start; the keeper releases the held jobs.
create or replace function courier.breaker_release_jobs(p_destination text) returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
    update courier.destinations set ramp_started_at = now() where destination = p_destination and max_in_flight is not null;
    perform pg_notify('courier_traffic', p_destination);
    return 0;
end
$$;

-- Sets a destination's policy fields that are given (not NULL) and keeps the others.
-- p_clear names fields to clear (set to NULL): 'max_in_flight', 'rate', 'burst',
-- 'slow_start_ms', 'retry_budget_pct', 'signing_secret'. Running jobs of a destination
-- that becomes gated are marked at once, so they count against its cap; its waiting
-- jobs move to the gated index within a keeper pass. Bad input raises 22023 naming the
-- parameter. Replaces 0008's destination_set(text, text).
drop function courier.destination_set(text, text);
create function courier.destination_set(
    destination      text,
    signing_secret   text    default null,
    max_in_flight    int     default null,
    rate             float8  default null,
    burst            int     default null,
    slow_start_ms    bigint  default null,
    retry_budget_pct float8  default null,
    clear            text[]  default '{}'
) returns setof courier.destinations
language plpgsql volatile as $$
#variable_conflict use_column
declare
    v_destination text := coalesce(courier.destination_of(destination_set.destination), destination_set.destination);
    v_row courier.destinations;
begin
    if v_destination is null or length(v_destination) not between 1 and 300 then
        raise exception 'courier.destination_set: destination must be 1 to 300 characters'
            using errcode = '22023', column = 'destination';
    end if;
    if destination_set.signing_secret is not null and not courier.is_secret_name(destination_set.signing_secret) then
        raise exception 'courier.destination_set: signing_secret must be a secret name: 1 to 128 letters, digits, _ . -'
            using errcode = '22023', column = 'signing_secret';
    end if;
    if destination_set.max_in_flight is not null and destination_set.max_in_flight not between 1 and 100000 then
        raise exception 'courier.destination_set: max_in_flight must be 1 to 100000' using errcode = '22023', column = 'max_in_flight';
    end if;
    if destination_set.rate is not null and not (destination_set.rate > 0 and destination_set.rate <= 1000000) then
        raise exception 'courier.destination_set: rate must be above 0 and at most 1000000 per second'
            using errcode = '22023', column = 'rate';
    end if;
    if destination_set.burst is not null and destination_set.burst not between 1 and 1000000 then
        raise exception 'courier.destination_set: burst must be 1 to 1000000' using errcode = '22023', column = 'burst';
    end if;
    if destination_set.slow_start_ms is not null and destination_set.slow_start_ms not between 0 and 86400000 then
        raise exception 'courier.destination_set: slow_start_ms must be 0 to 86400000' using errcode = '22023', column = 'slow_start_ms';
    end if;
    if destination_set.retry_budget_pct is not null and destination_set.retry_budget_pct not between 0 and 100 then
        raise exception 'courier.destination_set: retry_budget_pct must be 0 to 100' using errcode = '22023', column = 'retry_budget_pct';
    end if;
    if exists (select 1 from unnest(destination_set.clear) c
               where c not in ('max_in_flight', 'rate', 'burst', 'slow_start_ms', 'retry_budget_pct', 'signing_secret')) then
        raise exception 'courier.destination_set: clear may name max_in_flight, rate, burst, slow_start_ms, retry_budget_pct, signing_secret'
            using errcode = '22023', column = 'clear';
    end if;
    insert into courier.destinations as d (destination, signing_secret, max_in_flight, rate, burst, slow_start_ms, retry_budget_pct)
    values (v_destination, destination_set.signing_secret, destination_set.max_in_flight, destination_set.rate,
            destination_set.burst, destination_set.slow_start_ms, destination_set.retry_budget_pct)
    on conflict (destination) do update
    set signing_secret = case when 'signing_secret' = any(destination_set.clear) then null
                              else coalesce(excluded.signing_secret, d.signing_secret) end,
        max_in_flight = case when 'max_in_flight' = any(destination_set.clear) then null
                             else coalesce(excluded.max_in_flight, d.max_in_flight) end,
        rate = case when 'rate' = any(destination_set.clear) then null else coalesce(excluded.rate, d.rate) end,
        burst = case when 'burst' = any(destination_set.clear) then null else coalesce(excluded.burst, d.burst) end,
        slow_start_ms = case when 'slow_start_ms' = any(destination_set.clear) then null
                             else coalesce(excluded.slow_start_ms, d.slow_start_ms) end,
        retry_budget_pct = case when 'retry_budget_pct' = any(destination_set.clear) then null
                                else coalesce(excluded.retry_budget_pct, d.retry_budget_pct) end,
        -- A changed rate or burst starts from a full bucket of the new size.
        tokens = case when excluded.rate is not null or excluded.burst is not null then null else d.tokens end,
        updated_at = now()
    returning d.* into v_row;
    if v_row.gated then
        update courier.jobs set gated = true where state = 'running' and destination = v_destination and not gated;
        perform pg_notify('courier_traffic', v_destination);
    end if;
    return next v_row;
end
$$;

-- Pauses or resumes a destination (creating its row when needed). Running jobs finish;
-- waiting jobs wait without using attempts. A resume starts the slow start of a capped
-- destination. Returns the row afterwards.
create function courier.destination_pause(destination text, paused boolean) returns setof courier.destinations
language plpgsql volatile as $$
#variable_conflict use_column
declare
    v_destination text := coalesce(courier.destination_of(destination_pause.destination), destination_pause.destination);
    v_row courier.destinations;
begin
    if v_destination is null or length(v_destination) not between 1 and 300 then
        raise exception 'courier.destination_pause: destination must be 1 to 300 characters'
            using errcode = '22023', column = 'destination';
    end if;
    insert into courier.destinations as d (destination, paused) values (v_destination, coalesce(destination_pause.paused, false))
    on conflict (destination) do update
    set paused = excluded.paused, updated_at = now(),
        ramp_started_at = case when d.paused and not excluded.paused then now() else d.ramp_started_at end
    returning d.* into v_row;
    if v_row.gated then
        update courier.jobs set gated = true where state = 'running' and destination = v_destination and not gated;
    end if;
    perform pg_notify('courier_traffic', v_destination);
    return next v_row;
end
$$;

-- Pauses or resumes a queue (creating its settings row when needed). Returns whether it was paused before.
create function courier.queue_pause(queue text, paused boolean) returns boolean
language plpgsql volatile as $$
#variable_conflict use_column
declare
    v_before boolean;
begin
    if queue_pause.queue is null or queue_pause.queue !~ '^[A-Za-z0-9_.:-]{1,64}$' then
        raise exception 'courier.queue_pause: queue must be 1 to 64 of A-Z a-z 0-9 _ . : -'
            using errcode = '22023', column = 'queue';
    end if;
    select q.paused into v_before from courier.queue_settings q where q.queue = queue_pause.queue;
    insert into courier.queue_settings as q (queue, paused) values (queue_pause.queue, coalesce(queue_pause.paused, false))
    on conflict (queue) do update set paused = excluded.paused, updated_at = now();
    if not coalesce(queue_pause.paused, false) then
        perform pg_notify('courier_jobs', '');
    end if;
    return coalesce(v_before, false);
end
$$;

-- A capped destination's cap at p_at: ramped from 1 over the slow start (default 5 s)
-- after ramp_started_at (a breaker closed, a pause ended). NULL without a cap.
create function courier.traffic_cap(p_max int, p_slow_ms bigint, p_ramp timestamptz, p_at timestamptz) returns int
language sql immutable parallel safe as $$
    select case
        when p_max is null then null
        when p_ramp is null or coalesce(p_slow_ms, 5000) <= 0
             or extract(epoch from p_at - p_ramp) * 1000 >= coalesce(p_slow_ms, 5000) then p_max
        else greatest(1, least(p_max,
            1 + floor((p_max - 1) * greatest(0, extract(epoch from p_at - p_ramp) * 1000) / coalesce(p_slow_ms, 5000))::int))
    end
$$;

-- A rated destination's tokens at p_at: the bucket (size burst, default ceil(rate / 10) and
-- at least 1) refilled at rate per second since tokens_at. NULL without a rate.
create function courier.traffic_tokens(p_rate float8, p_burst int, p_tokens float8, p_tokens_at timestamptz, p_at timestamptz)
returns float8
language sql immutable parallel safe as $$
    select case when p_rate is null then null else
        least(coalesce(p_burst, greatest(1, ceil(p_rate / 10)))::float8,
              coalesce(p_tokens, coalesce(p_burst, greatest(1, ceil(p_rate / 10)))::float8)
              + p_rate * greatest(0, extract(epoch from p_at - coalesce(p_tokens_at, p_at))))
    end
$$;

-- Leases up to p_limit runnable gated jobs of one destination and queue, in the claim's
-- order: any of them (p_retries null), only retries (true: an attempt behind them) or only
-- first attempts (false). The one lease-taking statement of courier.claim_gated.
create function courier.claim_gated_take(p_destination text, p_queue text, p_worker uuid, p_lease_ms int,
                                         p_limit int, p_retries boolean)
returns setof courier.jobs
language sql volatile set search_path = pg_catalog, pg_temp as $$
    with picked as (
        select j.id from courier.jobs j
        where j.destination = p_destination and j.queue = p_queue and j.state = 'available'
          and j.held_since is null and j.gated and j.run_at <= now()
          and (p_retries is null or (j.attempt > 0) = p_retries)
        order by j.priority, j.run_at, j.id
        limit p_limit
        for update skip locked
    )
    update courier.jobs j
    set state = 'running', attempt = j.attempt + 1, leased_by = p_worker,
        lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
    from picked where j.id = picked.id
    returning j.*
$$;
revoke execute on function courier.claim_gated_take(text, text, uuid, int, int, boolean) from public;

-- Claims up to p_limit gated jobs of p_queue for p_worker: destination by destination,
-- least recently served first, each within its cap (slow start included), its token
-- bucket and its retry budget. Skips paused destinations and queues, destinations whose
-- breaker is not closed or that asked for no requests yet (Retry-After), and destinations
-- another worker is claiming for at this instant. Returns the claimed rows as updated.
-- Runs as its owner: workers may not write courier.destinations.
--
-- Cost: a destination found at its cap or out of tokens in this statement's snapshot is
-- passed over with reads only (its running count, at most its cap, and one probe for a
-- waiting job); it is written to at most once a second, to record that it was limited.
-- Only a destination with room is locked, recounted exactly and claimed from.
create function courier.claim_gated(p_queue text, p_limit int, p_worker uuid, p_lease_ms int)
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
               and exists (select 1 from courier.jobs j
                           where j.destination = c.destination and j.queue = p_queue and j.state = 'available'
                             and j.held_since is null and j.gated and j.run_at <= now()) then
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
        continue when not exists (select 1 from courier.jobs j
                                  where j.destination = c.destination and j.queue = p_queue and j.state = 'available'
                                    and j.held_since is null and j.gated and j.run_at <= now());
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
                v_deferred := exists (select 1 from courier.jobs j
                    where j.destination = s.destination and j.queue = p_queue and j.state = 'available'
                      and j.held_since is null and j.gated and j.run_at <= now() and j.attempt > 0);
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

-- One bounded pass of the traffic keeper: moves at most p_batch jobs in all, in statements
-- of at most p_batch rows, between the runnable, gated and held states:
--   hold     waiting jobs of destinations whose breaker is not closed;
--   release  held jobs whose breaker is closed (or gone);
--   gate     jobs of gated destinations (running ones too, so they count against the cap);
--   ungate   jobs of destinations no longer gated.
-- One worker at a time (advisory lock); returns -1 when another holds it, else how many
-- jobs moved (a full p_batch: call again at once). Waits at most 2 s for a row lock.
create function courier.traffic_maintain(p_batch int default 2000)
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
    for v_destination in select b.destination from courier.breakers b where b.state <> 'closed' order by b.destination loop
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
          and not exists (select 1 from courier.breakers b where b.destination = h.destination and b.state <> 'closed')
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

-- Every destination with a policy, a breaker or recent traffic (the last minute of
-- courier.attempt_stats): its limits, jobs in flight and waiting, recent rate, breaker.
-- For jobctl destinations and the dashboard. Waiting counts walk the destination's waiting jobs.
create function courier.destination_overview()
returns table (destination text, max_in_flight int, rate float8, burst int, slow_start_ms bigint,
               retry_budget_pct float8, paused boolean, signing_secret text, in_flight bigint, waiting bigint,
               recent_per_second float8, breaker_state text, claimed_total bigint, slot_waits bigint, token_waits bigint,
               retries_deferred bigint, limited_at timestamptz, updated_at timestamptz)
language sql stable security definer set search_path = pg_catalog, pg_temp as $$
    with names as (
        select d.destination from courier.destinations d
        union select b.destination from courier.breakers b
        union select s.destination from courier.attempt_stats s where s.bucket >= date_trunc('minute', now()) - interval '1 minute'
        union select j.destination from courier.jobs j where j.state = 'running'
    )
    select n.destination, d.max_in_flight, d.rate, d.burst, d.slow_start_ms, d.retry_budget_pct, coalesce(d.paused, false),
           d.signing_secret,
           (select count(*) from courier.jobs j where j.state = 'running' and j.destination = n.destination),
           (select count(*) from courier.jobs j where j.state = 'available' and j.destination = n.destination),
           coalesce((select sum(s.attempts) from courier.attempt_stats s
                     where s.destination = n.destination and s.bucket >= date_trunc('minute', now()) - interval '1 minute'), 0)
               / greatest(1, extract(epoch from now() - (date_trunc('minute', now()) - interval '1 minute'))),
           coalesce((select b.state from courier.breakers b where b.destination = n.destination), 'closed'),
           coalesce(d.claimed_total, 0), coalesce(d.slot_waits, 0), coalesce(d.token_waits, 0), coalesce(d.retries_deferred, 0),
           d.limited_at, d.updated_at
    from names n left join courier.destinations d on d.destination = n.destination
    order by n.destination
$$;

revoke execute on function courier.destination_set(text, text, int, float8, int, bigint, float8, text[]),
    courier.destination_pause(text, boolean), courier.queue_pause(text, boolean),
    courier.claim_gated(text, int, uuid, int), courier.traffic_maintain(int), courier.destination_overview(),
    courier.traffic_cap(int, bigint, timestamptz, timestamptz), courier.traffic_tokens(float8, int, float8, timestamptz, timestamptz)
    from public;
-- Policy is the operators'; claiming and keeping are the workers'.
revoke execute on function courier.destination_set(text, text, int, float8, int, bigint, float8, text[]),
    courier.destination_pause(text, boolean), courier.queue_pause(text, boolean) from courier_worker;
grant execute on function courier.claim_gated(text, int, uuid, int), courier.traffic_maintain(int),
    courier.destination_overview(), courier.traffic_cap(int, bigint, timestamptz, timestamptz),
    courier.traffic_tokens(float8, int, float8, timestamptz, timestamptz) to courier_worker;
grant execute on function courier.destination_set(text, text, int, float8, int, bigint, float8, text[]),
    courier.destination_pause(text, boolean), courier.queue_pause(text, boolean), courier.claim_gated(text, int, uuid, int),
    courier.traffic_maintain(int), courier.destination_overview() to courier_admin;
