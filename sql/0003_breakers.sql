-- Courier 0003: fleet-shared circuit breakers.
-- Every transition is one compare-and-set on courier.breakers using the database's
-- clock, is recorded in courier.breaker_events, and is announced on the
-- courier_breakers channel. Workers report evidence in aggregated batches, so a busy
-- destination does not serialize the fleet on its row.

create table courier.breaker_events (
    id          bigint generated always as identity primary key,
    destination text        not null,
    from_state  text        not null,
    to_state    text        not null,
    reason      text        not null,
    generation  bigint      not null,
    worker      text,
    at          timestamptz not null default now()
);
create index breaker_events_destination_idx on courier.breaker_events (destination, at);

alter table courier.breakers
    add column opened_count    bigint not null default 0,
    add column open_ms_total   bigint not null default 0,
    add column deferred_jobs   bigint not null default 0;

-- Records a transition and announces it. Internal helper.
create function courier.breaker_transition_logged(
    p_destination text, p_from text, p_to text, p_reason text, p_generation bigint, p_worker text
) returns void language sql volatile as $$
    insert into courier.breaker_events (destination, from_state, to_state, reason, generation, worker)
    values (p_destination, p_from, p_to, p_reason, p_generation, p_worker);
    select pg_notify('courier_breakers', p_destination || ' ' || p_to);
$$;

-- Holds the destination's waiting jobs back while its breaker is open: they leave the
-- runnable index, so claims do not even scan them, and their attempts and run_at are
-- untouched. Jobs already held stay as they are, so a breaker that opens again after a
-- failed probe only touches jobs that arrived since. Released by
-- courier.breaker_release_jobs when the breaker closes.
create function courier.breaker_hold_jobs(p_destination text) returns bigint
language plpgsql volatile as $$
declare
    v_count bigint;
begin
    update courier.jobs set held_since = now()
    where destination = p_destination and state = 'available' and held_since is null;
    get diagnostics v_count = row_count;
    update courier.breakers set deferred_jobs = deferred_jobs + v_count where destination = p_destination;
    return v_count;
end
$$;

-- Whether new or retried jobs of a destination should start out held.
create function courier.breaker_holds(p_destination text) returns boolean
language sql stable as $$
    select exists (select 1 from courier.breakers where destination = p_destination and state <> 'closed')
$$;

-- Puts a destination's held jobs back in the runnable index and wakes the fleet.
create function courier.breaker_release_jobs(p_destination text) returns bigint
language plpgsql volatile as $$
declare
    v_count bigint;
begin
    update courier.jobs set held_since = null where destination = p_destination and held_since is not null;
    get diagnostics v_count = row_count;
    if v_count > 0 then
        perform pg_notify('courier_jobs', '');
    end if;
    return v_count;
end
$$;

-- A worker's evidence about one destination since its last report: how many
-- attempts succeeded and failed (breaker-counting classes only), and the run of
-- failures at the end of its sequence. Trips the breaker when the consecutive
-- failures reach p_failure_threshold, or when, within p_window_ms and with at least
-- p_min_volume attempts, the failure rate reaches p_failure_rate. Returns the state
-- after the report.
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
    p_cooldown_ms       bigint
) returns text
language plpgsql volatile as $$
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
        cooldown_ms = p_cooldown_ms, open_until = now() + p_cooldown_ms * interval '1 millisecond',
        generation = generation + 1, probe_owner = null, probe_lease_until = null, opened_count = opened_count + 1
    where destination = p_destination
    returning * into b;
    perform courier.breaker_transition_logged(p_destination, 'closed', 'open', v_reason, b.generation, p_worker);
    perform courier.breaker_hold_jobs(p_destination);
    return 'open';
end
$$;

-- Tries to become the fleet's one probe for a destination whose cooldown is over
-- (or whose previous probe's lease expired). Returns the probe's generation, or NULL
-- when another worker holds it or it is not time yet. One statement: race-free.
create function courier.breaker_try_probe(p_destination text, p_worker uuid, p_probe_lease_ms bigint)
returns bigint
language plpgsql volatile as $$
declare
    v_from text;
    v_generation bigint;
begin
    with current as (
        select state from courier.breakers where destination = p_destination
    )
    update courier.breakers b
    set state = 'half_open', changed_at = now(), probe_owner = p_worker,
        probe_lease_until = now() + p_probe_lease_ms * interval '1 millisecond', generation = b.generation + 1,
        open_ms_total = b.open_ms_total + case when b.state = 'open'
            then (extract(epoch from now() - b.changed_at) * 1000)::bigint else 0 end
    from current
    where b.destination = p_destination and not b.forced
      and ((b.state = 'open' and b.open_until <= now()) or (b.state = 'half_open' and b.probe_lease_until < now()))
    returning current.state, b.generation into v_from, v_generation;
    if v_generation is not null then
        perform courier.breaker_transition_logged(p_destination, v_from, 'half_open',
            case when v_from = 'open' then 'cooldown_elapsed' else 'probe_lease_expired' end, v_generation, p_worker::text);
    end if;
    return v_generation;
end
$$;

-- Applies a probe's result if its generation is still current: success closes the
-- breaker; failure opens it again with the cooldown doubled (times p_jitter, a
-- factor the caller draws, e.g. 0.8..1.2) up to p_cooldown_max_ms. Returns the new
-- state, or NULL when the result was stale and changed nothing.
create function courier.breaker_probe_result(
    p_destination text, p_generation bigint, p_succeeded boolean, p_worker text,
    p_base_cooldown_ms bigint, p_cooldown_max_ms bigint, p_jitter float8
) returns text
language plpgsql volatile as $$
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
    v_cooldown := least(p_cooldown_max_ms,
                        greatest(p_base_cooldown_ms, (greatest(b.cooldown_ms, p_base_cooldown_ms) * 2 * p_jitter)::bigint));
    update courier.breakers
    set state = 'open', changed_at = now(), cooldown_ms = v_cooldown,
        open_until = now() + v_cooldown * interval '1 millisecond', probe_owner = null, probe_lease_until = null,
        generation = generation + 1, opened_count = opened_count + 1
    where destination = p_destination
    returning * into b;
    perform courier.breaker_transition_logged(p_destination, 'half_open', 'open', 'probe_failed', b.generation, p_worker);
    perform courier.breaker_hold_jobs(p_destination);
    return 'open';
end
$$;

-- Gives a won probe back without a verdict (no job could be claimed for it, or it
-- was cancelled or aborted at shutdown): the breaker is open again and due at once,
-- with its cooldown unchanged. Returns false when the generation was stale.
create function courier.breaker_probe_abandon(p_destination text, p_generation bigint, p_worker text)
returns boolean
language plpgsql volatile as $$
declare
    v_generation bigint;
begin
    update courier.breakers
    set state = 'open', changed_at = now(), open_until = now(), probe_owner = null, probe_lease_until = null,
        generation = generation + 1
    where destination = p_destination and state = 'half_open' and generation = p_generation
    returning generation into v_generation;
    if v_generation is null then
        return false;
    end if;
    perform courier.breaker_transition_logged(p_destination, 'half_open', 'open', 'probe_abandoned', v_generation, p_worker);
    return true;
end
$$;

-- Operator actions (jobctl breaker open|close|reset). A forced open stays open
-- until it is closed or reset. Returns the previous state.
create function courier.breaker_force(p_destination text, p_action text, p_actor text default 'operator')
returns text
language plpgsql volatile as $$
declare
    v_from text;
    v_generation bigint;
begin
    if p_action not in ('open', 'close', 'reset') then
        raise exception 'courier.breaker_force: action must be open, close or reset' using errcode = '22023', column = 'action';
    end if;
    insert into courier.breakers (destination) values (p_destination) on conflict (destination) do nothing;
    select state into v_from from courier.breakers where destination = p_destination for update;
    if p_action = 'open' then
        update courier.breakers
        set state = 'open', forced = true, changed_at = now(), open_until = 'infinity', probe_owner = null,
            probe_lease_until = null, generation = generation + 1, opened_count = opened_count + 1
        where destination = p_destination returning generation into v_generation;
        perform courier.breaker_hold_jobs(p_destination);
    else
        update courier.breakers
        set open_ms_total = open_ms_total + case when state = 'open'
                then (extract(epoch from now() - changed_at) * 1000)::bigint else 0 end,
            state = 'closed', forced = false, changed_at = now(), open_until = null, probe_owner = null,
            probe_lease_until = null, consecutive_failures = 0, window_started_at = now(), window_successes = 0,
            window_failures = 0, not_before = case when p_action = 'reset' then null else not_before end,
            cooldown_ms = case when p_action = 'reset' then 0 else cooldown_ms end, generation = generation + 1
        where destination = p_destination returning generation into v_generation;
        perform courier.breaker_release_jobs(p_destination);
    end if;
    perform courier.breaker_transition_logged(p_destination, v_from,
        case when p_action = 'open' then 'open' else 'closed' end, 'operator_' || p_action, v_generation, p_actor);
    return v_from;
end
$$;
