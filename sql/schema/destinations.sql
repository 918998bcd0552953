-- destinations.sql: destination traffic control: courier.destinations (per-destination concurrency,
-- rate, slow start, retry budget, pause, signing secret) and the destination_* and traffic_*
-- functions that set and maintain it.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: destinations; Type: TABLE
--

CREATE TABLE courier.destinations (
    destination courier.destination_key NOT NULL,
    signing_secret courier.secret_name,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    max_in_flight integer,
    rate double precision,
    burst integer,
    slow_start_ms bigint,
    retry_budget_pct double precision,
    paused boolean DEFAULT false NOT NULL,
    tokens double precision,
    tokens_at timestamp with time zone,
    ramp_started_at timestamp with time zone,
    budget_window_at timestamp with time zone,
    budget_requests bigint DEFAULT 0 NOT NULL,
    budget_retries bigint DEFAULT 0 NOT NULL,
    last_claim_at timestamp with time zone,
    limited_at timestamp with time zone,
    claimed_total bigint DEFAULT 0 NOT NULL,
    slot_waits bigint DEFAULT 0 NOT NULL,
    token_waits bigint DEFAULT 0 NOT NULL,
    retries_deferred bigint DEFAULT 0 NOT NULL,
    gated boolean GENERATED ALWAYS AS (((max_in_flight IS NOT NULL) OR (rate IS NOT NULL) OR (retry_budget_pct IS NOT NULL) OR paused)) STORED,
    CONSTRAINT destinations_burst_check CHECK (((burst IS NULL) OR ((burst >= 1) AND (burst <= 1000000)))),
    CONSTRAINT destinations_max_in_flight_check CHECK (((max_in_flight IS NULL) OR ((max_in_flight >= 1) AND (max_in_flight <= 100000)))),
    CONSTRAINT destinations_rate_check CHECK (((rate IS NULL) OR ((rate > (0)::double precision) AND (rate <= (1000000)::double precision)))),
    CONSTRAINT destinations_retry_budget_pct_check CHECK (((retry_budget_pct IS NULL) OR ((retry_budget_pct >= (0)::double precision) AND (retry_budget_pct <= (100)::double precision)))),
    CONSTRAINT destinations_slow_start_ms_check CHECK (((slow_start_ms IS NULL) OR ((slow_start_ms >= 0) AND (slow_start_ms <= 86400000))))
);


--
-- Name: destinations destinations_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.destinations
    ADD CONSTRAINT destinations_pkey PRIMARY KEY (destination);


--
-- Name: destinations_gated_idx; Type: INDEX
--

CREATE INDEX destinations_gated_idx ON courier.destinations USING btree (last_claim_at NULLS FIRST) WHERE gated;


--
-- Name: TABLE destinations; Type: ACL
--

GRANT SELECT ON TABLE courier.destinations TO courier_worker;
GRANT ALL ON TABLE courier.destinations TO courier_admin;


--
-- Name: destination_of(text); Type: FUNCTION
--

CREATE FUNCTION courier.destination_of(url text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $_$
declare
    m text[];
    v_host text;
begin
    m := regexp_match(url, '^(https?)://(\[[0-9A-Fa-f:.]+\]|[^:/?#\[\]@]+)(?::([0-9]{1,5}))?(?:[/?#]|$)', 'i');
    if m is null or (m[3] is not null and m[3]::int not between 1 and 65535) then
        return null;
    end if;
    v_host := lower(m[2]);
    if left(v_host, 1) = '[' then
        begin
            v_host := '[' || host(substr(v_host, 2, length(v_host) - 2)::inet) || ']';
        exception when invalid_text_representation then
            return null;
        end;
    end if;
    return lower(m[1]) || '://' || v_host || ':' || coalesce(m[3], case lower(m[1]) when 'https' then '443' else '80' end);
end
$_$;


--
-- Name: FUNCTION destination_of(url text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.destination_of(url text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.destination_of(url text) TO courier_worker;
GRANT ALL ON FUNCTION courier.destination_of(url text) TO courier_admin;


--
-- Name: destination_overview(); Type: FUNCTION
--

CREATE FUNCTION courier.destination_overview() RETURNS TABLE(destination text, max_in_flight integer, rate double precision, burst integer, slow_start_ms bigint, retry_budget_pct double precision, paused boolean, signing_secret text, in_flight bigint, waiting bigint, recent_per_second double precision, breaker_state text, claimed_total bigint, slot_waits bigint, token_waits bigint, retries_deferred bigint, limited_at timestamp with time zone, updated_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION destination_overview(); Type: ACL
--

REVOKE ALL ON FUNCTION courier.destination_overview() FROM PUBLIC;
GRANT ALL ON FUNCTION courier.destination_overview() TO courier_worker;
GRANT ALL ON FUNCTION courier.destination_overview() TO courier_admin;


--
-- Name: destination_pause(text, boolean); Type: FUNCTION
--

CREATE FUNCTION courier.destination_pause(destination text, paused boolean) RETURNS SETOF courier.destinations
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: FUNCTION destination_pause(destination text, paused boolean); Type: ACL
--

REVOKE ALL ON FUNCTION courier.destination_pause(destination text, paused boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.destination_pause(destination text, paused boolean) TO courier_admin;


--
-- Name: destination_reset(text); Type: FUNCTION
--

CREATE FUNCTION courier.destination_reset(destination text) RETURNS boolean
    LANGUAGE sql
    AS $$
    with gone as (
        delete from courier.destinations d
        where d.destination = coalesce(courier.destination_of(destination_reset.destination), destination_reset.destination)
        returning 1
    )
    select exists (select 1 from gone)
$$;


--
-- Name: FUNCTION destination_reset(destination text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.destination_reset(destination text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.destination_reset(destination text) TO courier_admin;


--
-- Name: destination_set(text, text, integer, double precision, integer, bigint, double precision, text[]); Type: FUNCTION
--

CREATE FUNCTION courier.destination_set(destination text, signing_secret text DEFAULT NULL::text, max_in_flight integer DEFAULT NULL::integer, rate double precision DEFAULT NULL::double precision, burst integer DEFAULT NULL::integer, slow_start_ms bigint DEFAULT NULL::bigint, retry_budget_pct double precision DEFAULT NULL::double precision, clear text[] DEFAULT '{}'::text[]) RETURNS SETOF courier.destinations
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: FUNCTION destination_set(destination text, signing_secret text, max_in_flight integer, rate double precision, burst integer, slow_start_ms bigint, retry_budget_pct double precision, clear text[]); Type: ACL
--

REVOKE ALL ON FUNCTION courier.destination_set(destination text, signing_secret text, max_in_flight integer, rate double precision, burst integer, slow_start_ms bigint, retry_budget_pct double precision, clear text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.destination_set(destination text, signing_secret text, max_in_flight integer, rate double precision, burst integer, slow_start_ms bigint, retry_budget_pct double precision, clear text[]) TO courier_admin;


--
-- Name: traffic_cap(integer, bigint, timestamp with time zone, timestamp with time zone); Type: FUNCTION
--

CREATE FUNCTION courier.traffic_cap(p_max integer, p_slow_ms bigint, p_ramp timestamp with time zone, p_at timestamp with time zone) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select case
        when p_max is null then null
        when p_ramp is null or coalesce(p_slow_ms, 5000) <= 0
             or extract(epoch from p_at - p_ramp) * 1000 >= coalesce(p_slow_ms, 5000) then p_max
        else greatest(1, least(p_max,
            1 + floor((p_max - 1) * greatest(0, extract(epoch from p_at - p_ramp) * 1000) / coalesce(p_slow_ms, 5000))::int))
    end
$$;


--
-- Name: FUNCTION traffic_cap(p_max integer, p_slow_ms bigint, p_ramp timestamp with time zone, p_at timestamp with time zone); Type: ACL
--

REVOKE ALL ON FUNCTION courier.traffic_cap(p_max integer, p_slow_ms bigint, p_ramp timestamp with time zone, p_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.traffic_cap(p_max integer, p_slow_ms bigint, p_ramp timestamp with time zone, p_at timestamp with time zone) TO courier_worker;
GRANT ALL ON FUNCTION courier.traffic_cap(p_max integer, p_slow_ms bigint, p_ramp timestamp with time zone, p_at timestamp with time zone) TO courier_admin;


--
-- Name: traffic_maintain(integer); Type: FUNCTION
--

CREATE FUNCTION courier.traffic_maintain(p_batch integer DEFAULT 2000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
declare
    v_left bigint := greatest(1, p_batch);
    v_n bigint;
    v_released bigint := 0;
    v_destination text;
    v_names text[];
begin
    if not pg_try_advisory_xact_lock(7166485043271492461) then
        return -1;
    end if;
    perform set_config('lock_timeout', '2000', true);
    -- Hold.
    -- In name order, the order every statement that locks several breakers rows takes.
    -- The names are sorted by the aggregate, not by a Sort node: sorts are off here, and
    -- with them off the planner would walk breakers_pkey whole to get the order.
    select array_agg(h.destination order by h.destination) into v_names from courier.breakers_holding_back() h;
    foreach v_destination in array coalesce(v_names, '{}') loop
        exit when v_left <= 0;
        update courier.jobs j set held_since = now()
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is null
                       order by c.destination, c.held_since
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
          and not exists (select 1 from courier.breakers b
                          where b.destination = h.destination and (b.state <> 'closed' or b.not_before > now()))
    loop
        exit when v_left <= 0;
        update courier.jobs j set held_since = null
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is not null
                       order by c.destination
                       limit v_left for update skip locked);
        get diagnostics v_n = row_count;
        v_left := v_left - v_n;
        v_released := v_released + v_n;
    end loop;
    -- Gate: running jobs first (one pass over the running ones), so they count against the cap.
    update courier.jobs j set gated = true
    from courier.destinations d
    where j.state = 'running' and not j.gated and d.destination = j.destination and d.gated;
    select array_agg(d.destination order by d.destination) into v_names from courier.destinations d where d.gated;
    foreach v_destination in array coalesce(v_names, '{}') loop
        exit when v_left <= 0;
        update courier.jobs j set gated = true
        where j.id in (select c.id from courier.jobs c
                       where c.destination = v_destination and c.state = 'available' and c.held_since is null and not c.gated
                       order by c.destination, c.held_since, c.gated
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
                       order by c.destination
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


--
-- Name: FUNCTION traffic_maintain(p_batch integer); Type: ACL
--

REVOKE ALL ON FUNCTION courier.traffic_maintain(p_batch integer) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.traffic_maintain(p_batch integer) TO courier_worker;
GRANT ALL ON FUNCTION courier.traffic_maintain(p_batch integer) TO courier_admin;


--
-- Name: traffic_tokens(double precision, integer, double precision, timestamp with time zone, timestamp with time zone); Type: FUNCTION
--

CREATE FUNCTION courier.traffic_tokens(p_rate double precision, p_burst integer, p_tokens double precision, p_tokens_at timestamp with time zone, p_at timestamp with time zone) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    select case when p_rate is null then null else
        least(coalesce(p_burst, greatest(1, ceil(p_rate / 10)))::float8,
              coalesce(p_tokens, coalesce(p_burst, greatest(1, ceil(p_rate / 10)))::float8)
              + p_rate * greatest(0, extract(epoch from p_at - coalesce(p_tokens_at, p_at))))
    end
$$;


--
-- Name: FUNCTION traffic_tokens(p_rate double precision, p_burst integer, p_tokens double precision, p_tokens_at timestamp with time zone, p_at timestamp with time zone); Type: ACL
--

REVOKE ALL ON FUNCTION courier.traffic_tokens(p_rate double precision, p_burst integer, p_tokens double precision, p_tokens_at timestamp with time zone, p_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.traffic_tokens(p_rate double precision, p_burst integer, p_tokens double precision, p_tokens_at timestamp with time zone, p_at timestamp with time zone) TO courier_worker;
GRANT ALL ON FUNCTION courier.traffic_tokens(p_rate double precision, p_burst integer, p_tokens double precision, p_tokens_at timestamp with time zone, p_at timestamp with time zone) TO courier_admin;
