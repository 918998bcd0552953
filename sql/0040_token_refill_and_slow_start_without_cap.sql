-- Courier 0040: two traffic-control defects of issue 40 (section 6, "Smaller items").
--
-- Token bucket refill. courier.destination_set (0014) emptied courier.destinations.tokens
-- (NULL: a full bucket) whenever a rate or a burst was *given*, even the same one: calling
-- `jobctl destination set D --rate 1/s --burst 1` again and again handed out a token each
-- time (measured: 3 starts in 9 ms). Now the bucket changes only when the rate or the burst
-- really changes, and then holds the level it had, capped at the new size: a change never
-- hands out tokens the bucket did not hold. (A destination that had no rate starts with a
-- full bucket of its new size, as before.)
--
-- Slow start without a cap. courier.traffic_cap returned NULL (no limit) for a destination
-- without max_in_flight, so `--slow-start` ramped only capped destinations: one with a
-- slow start and no cap got its whole backlog at once when its breaker closed (measured:
-- 181 requests in the first second with 96 slots free). Now such a destination ramps too,
-- from 1 request in flight up to the fleet's slots (the concurrency of the live workers
-- that are not stopping, courier.fleet_slots) over its slow start, and is unlimited after:
--   * a positive slow_start_ms makes a destination gated (its jobs go through
--     courier.claim_gated, which enforces the ramp); slow_start_ms NULL or 0 does not. A
--     capped destination's NULL slow start still means the 5 s default; without a cap only
--     an explicit slow start ramps;
--   * courier.breaker_release_jobs starts the ramp of such a destination (and of a capped
--     one, as before); a resume (courier.destination_pause) already started every ramp;
--   * courier.traffic_cap(max, slow, ramp, at, fleet) is the pure rule; the four-argument
--     form courier.claim_gated calls reads the fleet's slots only while an uncapped
--     destination is ramping, so nothing else pays for it. During that ramp claim_gated
--     counts the destination's running jobs under its row lock, as for a cap.
--
-- destinations.gated is a generated column, and PostgreSQL 15 cannot change a generated
-- column's expression: it is dropped and added again (the table holds one row per
-- destination with a policy), with its index.

alter table courier.destinations drop column gated;
alter table courier.destinations add column gated boolean generated always as
    (max_in_flight is not null or rate is not null or retry_budget_pct is not null or paused
     or coalesce(slow_start_ms, 0) > 0) stored;
create index destinations_gated_idx on courier.destinations (last_claim_at nulls first) where gated;

-- The fleet's slots: the concurrency of the workers with a recent heartbeat (within three
-- intervals, as jobctl workers counts them) that are not shutting down; at least 1.
create function courier.fleet_slots() returns int
language sql stable parallel safe set search_path = pg_catalog, pg_temp as $$
    select greatest(1, coalesce(sum(w.concurrency), 0))::int
    from courier.workers w
    where w.stopping_at is null
      and w.heartbeat_at > now() - 3 * w.heartbeat_interval_ms * interval '1 millisecond'
$$;

-- A destination's concurrency limit at p_at, or NULL for none. With a cap (p_max): the cap,
-- ramped from 1 over the slow start (default 5 s) after ramp_started_at (a breaker closed,
-- a pause ended), as in 0014. Without one: NULL, except during a slow start that was set
-- (p_slow_ms > 0), which ramps from 1 up to p_fleet (the fleet's slots, at least 1). Pure.
create function courier.traffic_cap(p_max int, p_slow_ms bigint, p_ramp timestamptz, p_at timestamptz, p_fleet int)
returns int
language sql immutable parallel safe as $$
    -- One expression with no FROM, so PostgreSQL inlines it (and the four-argument form
    -- below) into courier.claim_gated: called as a function, its setup cost the gated claim
    -- ~1 ms a round with 100 capped destinations. In the ramp the elapsed time is below the
    -- slow start, so 1 + floor((top - 1) * elapsed / slow) lies in [1, top] by itself, and
    -- p_fleet is read once (an expensive argument read twice would stop the inlining).
    select case
        when p_ramp is null
             or (case when p_max is null then coalesce(p_slow_ms, 0) else coalesce(p_slow_ms, 5000) end) <= 0
             or extract(epoch from p_at - p_ramp) * 1000
                >= (case when p_max is null then coalesce(p_slow_ms, 0) else coalesce(p_slow_ms, 5000) end)
        then p_max
        else 1 + floor((coalesce(p_max, greatest(1, coalesce(p_fleet, 1))) - 1)
                       * greatest(0, extract(epoch from p_at - p_ramp) * 1000)
                       / (case when p_max is null then coalesce(p_slow_ms, 0) else coalesce(p_slow_ms, 5000) end))::int
    end
$$;

-- The form courier.claim_gated calls (0014, 0033): the rule above, with the fleet's slots
-- read only while a destination without a cap is ramping.
create or replace function courier.traffic_cap(p_max int, p_slow_ms bigint, p_ramp timestamptz, p_at timestamptz)
returns int
language sql stable parallel safe as $$
    select courier.traffic_cap(p_max, p_slow_ms, p_ramp, p_at,
        case when p_max is null and p_ramp is not null and coalesce(p_slow_ms, 0) > 0
                  and extract(epoch from p_at - p_ramp) * 1000 < p_slow_ms
             then courier.fleet_slots() end)
$$;

-- As in 0014, and a destination with a slow start but no cap starts its ramp too.
create or replace function courier.breaker_release_jobs(p_destination text) returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
begin
    update courier.destinations set ramp_started_at = now()
    where destination = p_destination and (max_in_flight is not null or coalesce(slow_start_ms, 0) > 0);
    perform pg_notify('courier_traffic', p_destination);
    return 0;
end
$$;

-- The stored bucket level (courier.destinations.tokens, NULL for full) after a policy change
-- at p_at from (p_old_rate, p_old_burst) to (p_new_rate, p_new_burst). Pure:
--   * neither changed: the stored level as it was (it refills from tokens_at, kept too);
--   * no rate any more: NULL (no bucket);
--   * a rate or a burst changed: the level the old bucket held at p_at, at most the new
--     bucket's size (burst, default ceil(rate / 10) and at least 1); a full bucket of the
--     new size when there was no old bucket.
create function courier.traffic_tokens_after_change(p_old_rate float8, p_old_burst int, p_tokens float8,
                                                    p_tokens_at timestamptz, p_new_rate float8, p_new_burst int,
                                                    p_at timestamptz)
returns float8
language sql immutable parallel safe as $$
    select case
        when (p_new_rate, p_new_burst) is not distinct from (p_old_rate, p_old_burst) then p_tokens
        when p_new_rate is null then null
        else least(courier.traffic_tokens(p_old_rate, p_old_burst, p_tokens, p_tokens_at, p_at),
                   coalesce(p_new_burst, greatest(1, ceil(p_new_rate / 10)))::float8)
    end
$$;

-- As in 0014, but the token bucket changes only on a real change of rate or burst, and then
-- keeps its level at that instant, capped at the new size (see the top of this file).
create or replace function courier.destination_set(
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
        -- (Every expression here reads the row as it was before this statement.)
        tokens = courier.traffic_tokens_after_change(
            d.rate, d.burst, d.tokens, d.tokens_at,
            case when 'rate' = any(destination_set.clear) then null else coalesce(excluded.rate, d.rate) end,
            case when 'burst' = any(destination_set.clear) then null else coalesce(excluded.burst, d.burst) end,
            now()),
        tokens_at = case
            when (case when 'rate' = any(destination_set.clear) then null else coalesce(excluded.rate, d.rate) end,
                  case when 'burst' = any(destination_set.clear) then null else coalesce(excluded.burst, d.burst) end)
                 is not distinct from (d.rate, d.burst) then d.tokens_at
            else now() end,
        updated_at = now()
    returning d.* into v_row;
    if v_row.gated then
        update courier.jobs set gated = true where state = 'running' and destination = v_destination and not gated;
        perform pg_notify('courier_traffic', v_destination);
    end if;
    return next v_row;
end
$$;

revoke execute on function courier.fleet_slots(), courier.traffic_cap(int, bigint, timestamptz, timestamptz, int),
    courier.traffic_tokens_after_change(float8, int, float8, timestamptz, float8, int, timestamptz) from public;
grant execute on function courier.fleet_slots(), courier.traffic_cap(int, bigint, timestamptz, timestamptz, int),
    courier.traffic_tokens_after_change(float8, int, float8, timestamptz, float8, int, timestamptz)
    to courier_worker, courier_admin;
