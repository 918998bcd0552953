-- Courier 0040: traffic-control defects of issue 40 (section 6, "Smaller items").
--
-- Token bucket refill. courier.destination_set (0014) emptied courier.destinations.tokens
-- (NULL: a full bucket) whenever a rate or a burst was *given*, even the same one: calling
-- `jobctl destination set D --rate 1/s --burst 1` again and again handed out a token each
-- time (measured: 3 starts in 9 ms). Now the bucket changes only when the rate or the burst
-- really changes, and then holds the level it had, capped at the new size: a change never
-- hands out tokens the bucket did not hold. (A destination that had no rate starts with a
-- full bucket of its new size, as before.)

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

revoke execute on function
    courier.traffic_tokens_after_change(float8, int, float8, timestamptz, float8, int, timestamptz) from public;
grant execute on function
    courier.traffic_tokens_after_change(float8, int, float8, timestamptz, float8, int, timestamptz)
    to courier_worker, courier_admin;
