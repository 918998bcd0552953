-- Courier 0020: a breaker stores its nominal cooldown; only the open period is jittered.
--
-- Until now courier.breakers.cooldown_ms held the jittered open period, and a failed probe
-- doubled that value and jittered it again, so the factors compounded: with a factor of
-- 1.2 each time, 5 s became 6, 14.4, 34.6 s instead of 6, 12, 24 s (the Swift
-- BreakerStateMachine's rule: the nominal cooldown doubles, each open period is the
-- nominal one times a fresh factor, at most the maximum). BreakerAgreementTests drives
-- both with the same factors.

-- A trip from closed: p_cooldown_ms is the nominal first cooldown (kept for the next
-- doubling), p_open_ms the jittered open period the worker drew from it.
create function courier.breaker_report(
    p_destination       text,
    p_successes         int,
    p_failures          int,
    p_trailing_failures int,
    p_worker            text,
    p_failure_threshold int,
    p_window_ms         bigint,
    p_min_volume        int,
    p_failure_rate      float8,
    p_cooldown_ms       bigint,
    p_open_ms           bigint
) returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
    b courier.breakers;
    v_consecutive int;
    v_window_successes int;
    v_window_failures int;
    v_window_started timestamptz;
    v_reason text;
begin
    insert into courier.breakers (destination) values (p_destination) on conflict (destination) do nothing;
    select * into b from courier.breakers where destination = p_destination for update;
    if b.state <> 'closed' then
        -- Results of requests that started before the breaker opened say nothing new.
        return b.state;
    end if;
    v_consecutive := case when p_successes > 0 then p_trailing_failures else b.consecutive_failures + p_failures end;
    if b.window_started_at + p_window_ms * interval '1 millisecond' < now() then
        v_window_started := now();
        v_window_successes := p_successes;
        v_window_failures := p_failures;
    else
        v_window_started := b.window_started_at;
        v_window_successes := b.window_successes + p_successes;
        v_window_failures := b.window_failures + p_failures;
    end if;
    if v_consecutive >= p_failure_threshold then
        v_reason := 'consecutive_failures';
    elsif v_window_successes + v_window_failures >= p_min_volume
          and v_window_failures::float8 / (v_window_successes + v_window_failures) >= p_failure_rate then
        v_reason := 'failure_rate';
    end if;
    if v_reason is null then
        update courier.breakers
        set consecutive_failures = v_consecutive, window_started_at = v_window_started,
            window_successes = v_window_successes, window_failures = v_window_failures
        where destination = p_destination;
        return 'closed';
    end if;
    update courier.breakers
    set state = 'open', changed_at = now(), consecutive_failures = v_consecutive,
        window_started_at = v_window_started, window_successes = v_window_successes, window_failures = v_window_failures,
        cooldown_ms = p_cooldown_ms, open_until = now() + p_open_ms * interval '1 millisecond',
        generation = generation + 1, probe_owner = null, probe_lease_until = null, opened_count = opened_count + 1
    where destination = p_destination
    returning * into b;
    perform courier.breaker_transition_logged(p_destination, 'closed', 'open', v_reason, b.generation, p_worker);
    perform courier.breaker_hold_jobs(p_destination);
    return 'open';
end
$$;

-- The ten-argument form, as workers before this migration call it (their p_cooldown_ms
-- is already jittered: it is stored as the nominal value, as before).
create or replace function courier.breaker_report(
    p_destination text, p_successes int, p_failures int, p_trailing_failures int, p_worker text,
    p_failure_threshold int, p_window_ms bigint, p_min_volume int, p_failure_rate float8, p_cooldown_ms bigint
) returns text
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
    select courier.breaker_report(p_destination, p_successes, p_failures, p_trailing_failures, p_worker,
                                  p_failure_threshold, p_window_ms, p_min_volume, p_failure_rate, p_cooldown_ms, p_cooldown_ms)
$$;

-- A failed probe doubles the nominal cooldown (at least the base, at most the maximum)
-- and opens for that times p_jitter, at most the maximum. Everything else as in 0003.
create or replace function courier.breaker_probe_result(
    p_destination text, p_generation bigint, p_succeeded boolean, p_worker text,
    p_base_cooldown_ms bigint, p_cooldown_max_ms bigint, p_jitter float8
) returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
    b courier.breakers;
    v_cooldown bigint;
begin
    select * into b from courier.breakers
    where destination = p_destination and state = 'half_open' and generation = p_generation
    for update;
    if not found then
        return null;
    end if;
    if p_succeeded then
        update courier.breakers
        set state = 'closed', changed_at = now(), consecutive_failures = 0, window_started_at = now(),
            window_successes = 0, window_failures = 0, open_until = null, cooldown_ms = 0,
            probe_owner = null, probe_lease_until = null, generation = generation + 1
        where destination = p_destination
        returning * into b;
        perform courier.breaker_transition_logged(p_destination, 'half_open', 'closed', 'probe_succeeded', b.generation, p_worker);
        perform courier.breaker_release_jobs(p_destination);
        return 'closed';
    end if;
    v_cooldown := least(p_cooldown_max_ms, greatest(b.cooldown_ms, p_base_cooldown_ms) * 2);
    update courier.breakers
    set state = 'open', changed_at = now(), cooldown_ms = v_cooldown,
        open_until = now() + least(p_cooldown_max_ms::float8, v_cooldown * p_jitter) * interval '1 millisecond',
        probe_owner = null, probe_lease_until = null,
        generation = generation + 1, opened_count = opened_count + 1
    where destination = p_destination
    returning * into b;
    perform courier.breaker_transition_logged(p_destination, 'half_open', 'open', 'probe_failed', b.generation, p_worker);
    perform courier.breaker_hold_jobs(p_destination);
    return 'open';
end
$$;

revoke execute on function courier.breaker_report(text, int, int, int, text, int, bigint, int, float8, bigint, bigint) from public;
grant execute on function courier.breaker_report(text, int, int, int, text, int, bigint, int, float8, bigint, bigint)
    to courier_worker, courier_admin;
