-- breakers.sql: circuit breakers: courier.breakers (one row per destination),
-- courier.breaker_events (the transition log), courier.breaker_transition_totals, and the breaker_*
-- functions workers, the keeper and the prober call.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: breakers; Type: TABLE
--

CREATE TABLE courier.breakers (
    destination text NOT NULL,
    state text DEFAULT 'closed'::text NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    window_started_at timestamp with time zone DEFAULT now() NOT NULL,
    window_failures integer DEFAULT 0 NOT NULL,
    window_successes integer DEFAULT 0 NOT NULL,
    open_until timestamp with time zone,
    cooldown_ms bigint DEFAULT 0 NOT NULL,
    probe_owner uuid,
    probe_lease_until timestamp with time zone,
    generation bigint DEFAULT 0 NOT NULL,
    forced boolean DEFAULT false NOT NULL,
    not_before timestamp with time zone,
    opened_count bigint DEFAULT 0 NOT NULL,
    open_ms_total bigint DEFAULT 0 NOT NULL,
    deferred_jobs bigint DEFAULT 0 NOT NULL,
    CONSTRAINT breakers_state_check CHECK ((state = ANY (ARRAY['closed'::text, 'open'::text, 'half_open'::text])))
);


--
-- Name: breakers breakers_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.breakers
    ADD CONSTRAINT breakers_pkey PRIMARY KEY (destination);


--
-- Name: breakers_not_before_idx; Type: INDEX
--

CREATE INDEX breakers_not_before_idx ON courier.breakers USING btree (not_before) WHERE (not_before IS NOT NULL);


--
-- Name: breakers_not_closed_idx; Type: INDEX
--

CREATE INDEX breakers_not_closed_idx ON courier.breakers USING btree (destination) WHERE (state <> 'closed'::text);


--
-- Name: TABLE breakers; Type: ACL
--

GRANT SELECT ON TABLE courier.breakers TO courier_worker;
GRANT ALL ON TABLE courier.breakers TO courier_admin;


--
-- Name: breaker_events; Type: TABLE
--

CREATE TABLE courier.breaker_events (
    id bigint NOT NULL,
    destination text NOT NULL,
    from_state text NOT NULL,
    to_state text NOT NULL,
    reason text NOT NULL,
    generation bigint NOT NULL,
    worker text,
    at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: breaker_events_id_seq; Type: SEQUENCE
--

ALTER TABLE courier.breaker_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME courier.breaker_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: breaker_events breaker_events_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.breaker_events
    ADD CONSTRAINT breaker_events_pkey PRIMARY KEY (id);


--
-- Name: breaker_events_at_idx; Type: INDEX
--

CREATE INDEX breaker_events_at_idx ON courier.breaker_events USING btree (at);


--
-- Name: breaker_events_destination_idx; Type: INDEX
--

CREATE INDEX breaker_events_destination_idx ON courier.breaker_events USING btree (destination, at);


--
-- Name: SEQUENCE breaker_events_id_seq; Type: ACL
--

GRANT SELECT,USAGE ON SEQUENCE courier.breaker_events_id_seq TO courier_worker;
GRANT ALL ON SEQUENCE courier.breaker_events_id_seq TO courier_admin;


--
-- Name: TABLE breaker_events; Type: ACL
--

GRANT SELECT ON TABLE courier.breaker_events TO courier_worker;
GRANT ALL ON TABLE courier.breaker_events TO courier_admin;


--
-- Name: breaker_transition_totals; Type: TABLE
--

CREATE TABLE courier.breaker_transition_totals (
    from_state text NOT NULL,
    to_state text NOT NULL,
    transitions bigint NOT NULL
);


--
-- Name: breaker_transition_totals breaker_transition_totals_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.breaker_transition_totals
    ADD CONSTRAINT breaker_transition_totals_pkey PRIMARY KEY (from_state, to_state);


--
-- Name: TABLE breaker_transition_totals; Type: ACL
--

GRANT ALL ON TABLE courier.breaker_transition_totals TO courier_admin;
GRANT SELECT ON TABLE courier.breaker_transition_totals TO courier_worker;


--
-- Name: breaker_events_prune(bigint, integer, timestamp with time zone); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_events_prune(p_older_than_ms bigint, p_batch integer, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    with doomed as (
        select id from courier.breaker_events
        where at < coalesce(p_now, now()) - p_older_than_ms * interval '1 millisecond'
        order by at
        limit p_batch
        for update skip locked
    ),
    gone as (
        delete from courier.breaker_events e using doomed where e.id = doomed.id returning 1
    )
    select count(*)::int from gone
$$;


--
-- Name: FUNCTION breaker_events_prune(p_older_than_ms bigint, p_batch integer, p_now timestamp with time zone); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_events_prune(p_older_than_ms bigint, p_batch integer, p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_events_prune(p_older_than_ms bigint, p_batch integer, p_now timestamp with time zone) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_events_prune(p_older_than_ms bigint, p_batch integer, p_now timestamp with time zone) TO courier_admin;


--
-- Name: breaker_force(text, text, text); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_force(p_destination text, p_action text, p_actor text DEFAULT 'operator'::text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION breaker_force(p_destination text, p_action text, p_actor text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_force(p_destination text, p_action text, p_actor text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_force(p_destination text, p_action text, p_actor text) TO courier_admin;


--
-- Name: breaker_hold_jobs(text); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_hold_jobs(p_destination text) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select 0::bigint
$$;


--
-- Name: FUNCTION breaker_hold_jobs(p_destination text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_hold_jobs(p_destination text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_hold_jobs(p_destination text) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_hold_jobs(p_destination text) TO courier_admin;


--
-- Name: breaker_holds(text); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_holds(p_destination text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select exists (select 1 from courier.breakers
                   where destination = p_destination and (state <> 'closed' or not_before > now()))
$$;


--
-- Name: FUNCTION breaker_holds(p_destination text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_holds(p_destination text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_holds(p_destination text) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_holds(p_destination text) TO courier_admin;


--
-- Name: breaker_pause(text, bigint); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_pause(p_destination text, p_milliseconds bigint) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    insert into courier.breakers (destination, not_before)
    values (p_destination, now() + p_milliseconds * interval '1 millisecond')
    on conflict (destination) do update
    set not_before = greatest(courier.breakers.not_before, excluded.not_before)
$$;


--
-- Name: FUNCTION breaker_pause(p_destination text, p_milliseconds bigint); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_pause(p_destination text, p_milliseconds bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_pause(p_destination text, p_milliseconds bigint) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_pause(p_destination text, p_milliseconds bigint) TO courier_admin;


--
-- Name: breaker_probe_abandon(text, bigint, text); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_probe_abandon(p_destination text, p_generation bigint, p_worker text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION breaker_probe_abandon(p_destination text, p_generation bigint, p_worker text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_probe_abandon(p_destination text, p_generation bigint, p_worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_probe_abandon(p_destination text, p_generation bigint, p_worker text) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_probe_abandon(p_destination text, p_generation bigint, p_worker text) TO courier_admin;


--
-- Name: breaker_probe_renew(text, bigint, uuid, bigint); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_probe_renew(p_destination text, p_generation bigint, p_worker uuid, p_probe_lease_ms bigint) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    update courier.breakers
    set probe_lease_until = now() + p_probe_lease_ms * interval '1 millisecond'
    where destination = p_destination and generation = p_generation and probe_owner = p_worker and state = 'half_open'
    returning true
$$;


--
-- Name: FUNCTION breaker_probe_renew(p_destination text, p_generation bigint, p_worker uuid, p_probe_lease_ms bigint); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_probe_renew(p_destination text, p_generation bigint, p_worker uuid, p_probe_lease_ms bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_probe_renew(p_destination text, p_generation bigint, p_worker uuid, p_probe_lease_ms bigint) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_probe_renew(p_destination text, p_generation bigint, p_worker uuid, p_probe_lease_ms bigint) TO courier_admin;


--
-- Name: breaker_probe_result(text, bigint, boolean, text, bigint, bigint, double precision); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_probe_result(p_destination text, p_generation bigint, p_succeeded boolean, p_worker text, p_base_cooldown_ms bigint, p_cooldown_max_ms bigint, p_jitter double precision) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION breaker_probe_result(p_destination text, p_generation bigint, p_succeeded boolean, p_worker text, p_base_cooldown_ms bigint, p_cooldown_max_ms bigint, p_jitter double precision); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_probe_result(p_destination text, p_generation bigint, p_succeeded boolean, p_worker text, p_base_cooldown_ms bigint, p_cooldown_max_ms bigint, p_jitter double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_probe_result(p_destination text, p_generation bigint, p_succeeded boolean, p_worker text, p_base_cooldown_ms bigint, p_cooldown_max_ms bigint, p_jitter double precision) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_probe_result(p_destination text, p_generation bigint, p_succeeded boolean, p_worker text, p_base_cooldown_ms bigint, p_cooldown_max_ms bigint, p_jitter double precision) TO courier_admin;


--
-- Name: breaker_release_jobs(text); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_release_jobs(p_destination text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    update courier.destinations set ramp_started_at = now() where destination = p_destination and max_in_flight is not null;
    perform pg_notify('courier_traffic', p_destination);
    return 0;
end
$$;


--
-- Name: FUNCTION breaker_release_jobs(p_destination text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_release_jobs(p_destination text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_release_jobs(p_destination text) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_release_jobs(p_destination text) TO courier_admin;


--
-- Name: breaker_report(text, integer, integer, integer, text, integer, bigint, integer, double precision, bigint); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint) RETURNS text
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select courier.breaker_report(p_destination, p_successes, p_failures, p_trailing_failures, p_worker,
                                  p_failure_threshold, p_window_ms, p_min_volume, p_failure_rate, p_cooldown_ms, p_cooldown_ms)
$$;


--
-- Name: breaker_report(text, integer, integer, integer, text, integer, bigint, integer, double precision, bigint, bigint); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint, p_open_ms bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint) TO courier_admin;


--
-- Name: FUNCTION breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint, p_open_ms bigint); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint, p_open_ms bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint, p_open_ms bigint) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_report(p_destination text, p_successes integer, p_failures integer, p_trailing_failures integer, p_worker text, p_failure_threshold integer, p_window_ms bigint, p_min_volume integer, p_failure_rate double precision, p_cooldown_ms bigint, p_open_ms bigint) TO courier_admin;


--
-- Name: breaker_transition_logged(text, text, text, text, bigint, text); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_transition_logged(p_destination text, p_from text, p_to text, p_reason text, p_generation bigint, p_worker text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    insert into courier.breaker_events (destination, from_state, to_state, reason, generation, worker)
    values (p_destination, p_from, p_to, p_reason, p_generation, p_worker);
    insert into courier.breaker_transition_totals (from_state, to_state, transitions)
    values (p_from, p_to, 1)
    on conflict (from_state, to_state) do update
    set transitions = courier.breaker_transition_totals.transitions + 1;
    select pg_notify('courier_breakers', p_destination || ' ' || p_to);
$$;


--
-- Name: FUNCTION breaker_transition_logged(p_destination text, p_from text, p_to text, p_reason text, p_generation bigint, p_worker text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_transition_logged(p_destination text, p_from text, p_to text, p_reason text, p_generation bigint, p_worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_transition_logged(p_destination text, p_from text, p_to text, p_reason text, p_generation bigint, p_worker text) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_transition_logged(p_destination text, p_from text, p_to text, p_reason text, p_generation bigint, p_worker text) TO courier_admin;


--
-- Name: breaker_try_probe(text, uuid, bigint); Type: FUNCTION
--

CREATE FUNCTION courier.breaker_try_probe(p_destination text, p_worker uuid, p_probe_lease_ms bigint) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
      and (b.not_before is null or b.not_before <= now())
      and ((b.state = 'open' and b.open_until <= now()) or (b.state = 'half_open' and b.probe_lease_until < now()))
    returning current.state, b.generation into v_from, v_generation;
    if v_generation is not null then
        perform courier.breaker_transition_logged(p_destination, v_from, 'half_open',
            case when v_from = 'open' then 'cooldown_elapsed' else 'probe_lease_expired' end, v_generation, p_worker::text);
    end if;
    return v_generation;
end
$$;


--
-- Name: FUNCTION breaker_try_probe(p_destination text, p_worker uuid, p_probe_lease_ms bigint); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breaker_try_probe(p_destination text, p_worker uuid, p_probe_lease_ms bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breaker_try_probe(p_destination text, p_worker uuid, p_probe_lease_ms bigint) TO courier_worker;
GRANT ALL ON FUNCTION courier.breaker_try_probe(p_destination text, p_worker uuid, p_probe_lease_ms bigint) TO courier_admin;


--
-- Name: breakers_holding_back(); Type: FUNCTION
--

CREATE FUNCTION courier.breakers_holding_back() RETURNS TABLE(destination text)
    LANGUAGE sql STABLE
    AS $$
    select b.destination from courier.breakers b where b.state <> 'closed'
    union
    select b.destination from courier.breakers b where b.not_before > now()
$$;


--
-- Name: FUNCTION breakers_holding_back(); Type: ACL
--

REVOKE ALL ON FUNCTION courier.breakers_holding_back() FROM PUBLIC;
GRANT ALL ON FUNCTION courier.breakers_holding_back() TO courier_worker;
GRANT ALL ON FUNCTION courier.breakers_holding_back() TO courier_admin;


--
-- Name: holds_back(courier.breakers); Type: FUNCTION
--

CREATE FUNCTION courier.holds_back(b courier.breakers) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    select b.state <> 'closed' or b.not_before > now()
$$;


--
-- Name: FUNCTION holds_back(b courier.breakers); Type: ACL
--

REVOKE ALL ON FUNCTION courier.holds_back(b courier.breakers) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.holds_back(b courier.breakers) TO courier_worker;
GRANT ALL ON FUNCTION courier.holds_back(b courier.breakers) TO courier_admin;
