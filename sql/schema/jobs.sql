-- jobs.sql: courier.jobs, the queue itself (waiting and running jobs), and courier.completed_jobs,
-- the optional archive of finished ones; the functions that enqueue (enqueue, enqueue_job), claim
-- (claim and its helpers), renew leases and acknowledge (complete_jobs, retry_jobs, hand_back_jobs,
-- dead_letter_jobs) jobs, and the trigger that checks an enqueuer's destination.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: jobs; Type: TABLE
--

CREATE TABLE courier.jobs (
    id bigint NOT NULL,
    kind courier.job_kind DEFAULT 'http'::text NOT NULL,
    queue courier.queue_name DEFAULT 'default'::text NOT NULL,
    state text DEFAULT 'available'::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    run_at timestamp with time zone DEFAULT now() NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 25 NOT NULL,
    deadline timestamp with time zone,
    destination courier.destination_key NOT NULL,
    method courier.http_method DEFAULT 'POST'::text NOT NULL,
    url courier.http_url,
    headers courier.header_map DEFAULT '{}'::jsonb NOT NULL,
    body courier.request_body,
    timeout_ms integer DEFAULT 30000 NOT NULL,
    expect_content_type courier.media_type,
    idempotency_key courier.idempotency_key,
    unique_key courier.unique_key,
    args jsonb,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    last_delay_ms bigint,
    leased_by uuid,
    lease_expires_at timestamp with time zone,
    attempted_at timestamp with time zone,
    cancel_requested_at timestamp with time zone,
    held_since timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    signing_secret courier.secret_name,
    gated boolean DEFAULT false NOT NULL,
    unique_scope text,
    CONSTRAINT jobs_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT jobs_max_attempts_check CHECK (((max_attempts >= 1) AND (max_attempts <= 1000))),
    CONSTRAINT jobs_priority_check CHECK (((priority >= '-32768'::integer) AND (priority <= 32767))),
    CONSTRAINT jobs_running_lease_check CHECK (((state <> 'running'::text) OR ((leased_by IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT jobs_state_check CHECK ((state = ANY (ARRAY['available'::text, 'running'::text]))),
    CONSTRAINT jobs_timeout_ms_check CHECK (((timeout_ms >= 1) AND (timeout_ms <= 3600000))),
    CONSTRAINT jobs_unique_scope_check CHECK (((unique_key IS NULL) = (unique_scope IS NULL))),
    CONSTRAINT jobs_url_required_check CHECK (((url IS NOT NULL) OR ((kind)::text <> 'http'::text)))
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.05', autovacuum_analyze_scale_factor='0.05', fillfactor='80');


--
-- Name: jobs_id_seq; Type: SEQUENCE
--

ALTER TABLE courier.jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME courier.jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: jobs jobs_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);


--
-- Name: jobs jobs_deadline_check; Type: CHECK CONSTRAINT
--

ALTER TABLE courier.jobs
    ADD CONSTRAINT jobs_deadline_check CHECK (((deadline IS NULL) OR isfinite(deadline))) NOT VALID;


--
-- Name: jobs jobs_run_at_check; Type: CHECK CONSTRAINT
--

ALTER TABLE courier.jobs
    ADD CONSTRAINT jobs_run_at_check CHECK (isfinite(run_at)) NOT VALID;


--
-- Name: jobs_destination_idx; Type: INDEX
--

CREATE INDEX jobs_destination_idx ON courier.jobs USING btree (destination, held_since, gated, queue, priority, run_at, id) WHERE (state = 'available'::text);


--
-- Name: jobs_gated_idx; Type: INDEX
--

CREATE INDEX jobs_gated_idx ON courier.jobs USING btree (destination, queue, priority, run_at, id) WHERE ((state = 'available'::text) AND (held_since IS NULL) AND gated);


--
-- Name: jobs_gated_running_idx; Type: INDEX
--

CREATE INDEX jobs_gated_running_idx ON courier.jobs USING btree (destination) WHERE ((state = 'running'::text) AND gated);


--
-- Name: jobs_held_idx; Type: INDEX
--

CREATE INDEX jobs_held_idx ON courier.jobs USING btree (destination) WHERE (held_since IS NOT NULL);


--
-- Name: jobs_runnable_idx; Type: INDEX
--

CREATE INDEX jobs_runnable_idx ON courier.jobs USING btree (queue, priority, run_at, id) WHERE ((state = 'available'::text) AND (held_since IS NULL) AND (NOT gated));


--
-- Name: jobs_running_idx; Type: INDEX
--

CREATE INDEX jobs_running_idx ON courier.jobs USING btree (leased_by) WHERE (state = 'running'::text);


--
-- Name: jobs_unique_key_idx; Type: INDEX
--

CREATE UNIQUE INDEX jobs_unique_key_idx ON courier.jobs USING btree (unique_scope, unique_key) WHERE (unique_key IS NOT NULL);


--
-- Name: jobs jobs_enqueuer_destination_check; Type: TRIGGER
--

CREATE TRIGGER jobs_enqueuer_destination_check BEFORE INSERT ON courier.jobs FOR EACH ROW WHEN ((NOT (pg_has_role(SESSION_USER, 'courier_worker'::name, 'MEMBER'::text) OR pg_has_role(SESSION_USER, 'courier_admin'::name, 'MEMBER'::text)))) EXECUTE FUNCTION courier.check_enqueuer_destination();


--
-- Name: SEQUENCE jobs_id_seq; Type: ACL
--

GRANT SELECT,USAGE ON SEQUENCE courier.jobs_id_seq TO courier_worker;
GRANT ALL ON SEQUENCE courier.jobs_id_seq TO courier_admin;


--
-- Name: TABLE jobs; Type: ACL
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE courier.jobs TO courier_worker;
GRANT ALL ON TABLE courier.jobs TO courier_admin;


--
-- Name: completed_jobs; Type: TABLE
--

CREATE TABLE courier.completed_jobs (
    id bigint NOT NULL,
    kind text NOT NULL,
    queue text NOT NULL,
    destination text NOT NULL,
    method text NOT NULL,
    url text,
    attempt integer NOT NULL,
    status integer,
    duration_ms integer,
    idempotency_key text,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    worker uuid,
    created_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone DEFAULT now() NOT NULL,
    signing_secret text
);


--
-- Name: completed_jobs completed_jobs_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.completed_jobs
    ADD CONSTRAINT completed_jobs_pkey PRIMARY KEY (id);


--
-- Name: completed_jobs_finished_at_idx; Type: INDEX
--

CREATE INDEX completed_jobs_finished_at_idx ON courier.completed_jobs USING btree (finished_at);


--
-- Name: TABLE completed_jobs; Type: ACL
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE courier.completed_jobs TO courier_worker;
GRANT ALL ON TABLE courier.completed_jobs TO courier_admin;


--
-- Name: check_enqueuer_destination(); Type: FUNCTION
--

CREATE FUNCTION courier.check_enqueuer_destination() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_own text := case when new.kind = 'http' then courier.destination_of(new.url) else 'job:' || new.kind end;
begin
    if new.destination = v_own or left(new.destination, length(v_own) + 1) = v_own || '/' then
        return new;
    end if;
    -- The schema's owner (who ran the migrations) is an operator too, member or not.
    if pg_catalog.pg_has_role(session_user, (select c.relowner from pg_catalog.pg_class c where c.oid = 'courier.jobs'::regclass),
                              'MEMBER') then
        return new;
    end if;
    raise exception 'destination % is not this job''s own (%): an enqueuer may name only its URL''s destination or a sub-key of it (%/...)',
        to_json(left(new.destination, 128)), v_own, v_own
        using errcode = '42501', column = 'destination';
end
$$;


--
-- Name: FUNCTION check_enqueuer_destination(); Type: ACL
--

REVOKE ALL ON FUNCTION courier.check_enqueuer_destination() FROM PUBLIC;
GRANT ALL ON FUNCTION courier.check_enqueuer_destination() TO courier_worker;
GRANT ALL ON FUNCTION courier.check_enqueuer_destination() TO courier_admin;


--
-- Name: claim(text, integer, uuid, integer, integer, bigint, bigint); Type: FUNCTION
--

CREATE FUNCTION courier.claim(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after_priority integer, p_after_run_at_us bigint, p_after_id bigint) RETURNS SETOF courier.jobs
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
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


--
-- Name: FUNCTION claim(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after_priority integer, p_after_run_at_us bigint, p_after_id bigint); Type: ACL
--

REVOKE ALL ON FUNCTION courier.claim(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after_priority integer, p_after_run_at_us bigint, p_after_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.claim(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after_priority integer, p_after_run_at_us bigint, p_after_id bigint) TO courier_worker;
GRANT ALL ON FUNCTION courier.claim(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after_priority integer, p_after_run_at_us bigint, p_after_id bigint) TO courier_admin;


--
-- Name: claim_gated(text, integer, uuid, integer); Type: FUNCTION
--

CREATE FUNCTION courier.claim_gated(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer) RETURNS SETOF courier.jobs
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION claim_gated(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer); Type: ACL
--

REVOKE ALL ON FUNCTION courier.claim_gated(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.claim_gated(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer) TO courier_worker;
GRANT ALL ON FUNCTION courier.claim_gated(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer) TO courier_admin;


--
-- Name: claim_gated_take(text, text, uuid, integer, integer, boolean); Type: FUNCTION
--

CREATE FUNCTION courier.claim_gated_take(p_destination text, p_queue text, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) RETURNS SETOF courier.jobs
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select * from courier.claim_take(p_destination, p_queue, true, p_worker, p_lease_ms, p_limit, p_retries)
$$;


--
-- Name: FUNCTION claim_gated_take(p_destination text, p_queue text, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean); Type: ACL
--

REVOKE ALL ON FUNCTION courier.claim_gated_take(p_destination text, p_queue text, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.claim_gated_take(p_destination text, p_queue text, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) TO courier_worker;
GRANT ALL ON FUNCTION courier.claim_gated_take(p_destination text, p_queue text, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) TO courier_admin;


--
-- Name: claim_spread(text, integer, integer, uuid, integer, text, text[], integer); Type: FUNCTION
--

CREATE FUNCTION courier.claim_spread(p_queue text, p_limit integer, p_per_destination integer, p_worker uuid, p_lease_ms integer, p_after text, p_exclude text[], p_visit integer) RETURNS SETOF courier.jobs
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_left    int := p_limit;
    v_cursor  text := coalesce(p_after, '');
    v_wrapped boolean := p_after is null;
    v_visits  int := 0;
    v_next    text;
    v_skip    text;
    v_got     int;
begin
    if p_limit <= 0 or p_per_destination <= 0
       or exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused) then
        return;
    end if;
    while v_left > 0 and v_visits < p_visit loop
        -- The next destination with a waiting job: one descent of jobs_destination_idx,
        -- stopping before the next excluded destination.
        select min(e) into v_skip from unnest(p_exclude) e where e > v_cursor;
        if v_skip is null then
            select min(j.destination) into v_next from courier.jobs j
            where j.state = 'available' and j.destination > v_cursor;
        else
            select min(j.destination) into v_next from courier.jobs j
            where j.state = 'available' and j.destination > v_cursor and j.destination < v_skip;
            if v_next is null then
                -- Nothing waits between the cursor and the excluded destination: jump over it.
                v_cursor := v_skip;
                v_visits := v_visits + 1;
                continue;
            end if;
        end if;
        if v_next is null or (v_wrapped and p_after is not null and v_next > p_after) then
            exit when v_wrapped;
            v_wrapped := true;
            v_cursor := '';
            continue;
        end if;
        v_cursor := v_next;
        v_visits := v_visits + 1;
        continue when v_next = any(p_exclude)
            or exists (select 1 from courier.breakers b
                       where b.destination = v_next and (b.state <> 'closed' or b.not_before > now()))
            or exists (select 1 from courier.destinations d where d.destination = v_next and d.gated);
        return query select * from courier.claim_take(v_next, p_queue, false, p_worker, p_lease_ms,
                                                      least(v_left, p_per_destination), null);
        get diagnostics v_got = row_count;
        v_left := v_left - v_got;
    end loop;
end
$$;


--
-- Name: FUNCTION claim_spread(p_queue text, p_limit integer, p_per_destination integer, p_worker uuid, p_lease_ms integer, p_after text, p_exclude text[], p_visit integer); Type: ACL
--

REVOKE ALL ON FUNCTION courier.claim_spread(p_queue text, p_limit integer, p_per_destination integer, p_worker uuid, p_lease_ms integer, p_after text, p_exclude text[], p_visit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.claim_spread(p_queue text, p_limit integer, p_per_destination integer, p_worker uuid, p_lease_ms integer, p_after text, p_exclude text[], p_visit integer) TO courier_worker;
GRANT ALL ON FUNCTION courier.claim_spread(p_queue text, p_limit integer, p_per_destination integer, p_worker uuid, p_lease_ms integer, p_after text, p_exclude text[], p_visit integer) TO courier_admin;


--
-- Name: claim_take(text, text, boolean, uuid, integer, integer, boolean); Type: FUNCTION
--

CREATE FUNCTION courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) RETURNS SETOF courier.jobs
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
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


--
-- Name: FUNCTION claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean); Type: ACL
--

REVOKE ALL ON FUNCTION courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) TO courier_worker;
GRANT ALL ON FUNCTION courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) TO courier_admin;


--
-- Name: complete_jobs(bigint[], integer[], integer[], integer[], uuid, boolean); Type: FUNCTION
--

CREATE FUNCTION courier.complete_jobs(p_ids bigint[], p_attempts integer[], p_statuses integer[], p_durations_ms integer[], p_worker uuid, p_archive boolean) RETURNS SETOF bigint
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    -- p_statuses: the HTTP status, -1 for none.
    return query
    with done as (
        delete from courier.jobs j
        using unnest(p_ids, p_attempts, p_statuses, p_durations_ms) as a(id, attempt, status, duration_ms)
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
        returning j.id, j.kind, j.queue, j.destination, j.method, j.url, j.attempt, nullif(a.status, -1) as status,
                  a.duration_ms, j.idempotency_key, j.errors, j.created_at, j.signing_secret
    ),
    archived as (
        insert into courier.completed_jobs (id, kind, queue, destination, method, url, attempt, status, duration_ms,
                                            idempotency_key, errors, worker, created_at, signing_secret)
        select id, kind, queue, destination, method, url, attempt, status, duration_ms, idempotency_key, errors,
               p_worker, created_at, signing_secret
        from done
        where p_archive
    )
    select done.id from done;
end
$$;


--
-- Name: FUNCTION complete_jobs(p_ids bigint[], p_attempts integer[], p_statuses integer[], p_durations_ms integer[], p_worker uuid, p_archive boolean); Type: ACL
--

REVOKE ALL ON FUNCTION courier.complete_jobs(p_ids bigint[], p_attempts integer[], p_statuses integer[], p_durations_ms integer[], p_worker uuid, p_archive boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.complete_jobs(p_ids bigint[], p_attempts integer[], p_statuses integer[], p_durations_ms integer[], p_worker uuid, p_archive boolean) TO courier_worker;
GRANT ALL ON FUNCTION courier.complete_jobs(p_ids bigint[], p_attempts integer[], p_statuses integer[], p_durations_ms integer[], p_worker uuid, p_archive boolean) TO courier_admin;


--
-- Name: dead_letter_jobs(bigint[], integer[], text[], text[], text[], integer[], uuid); Type: FUNCTION
--

CREATE FUNCTION courier.dead_letter_jobs(p_ids bigint[], p_attempts integer[], p_reasons text[], p_errors text[], p_classes text[], p_statuses integer[], p_worker uuid) RETURNS SETOF bigint
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    return query
    with a as (
        select *, (reason = 'deadline' and error = '') as never_ran
        from unnest(p_ids, p_attempts, p_reasons, p_errors, p_classes, p_statuses)
            as a(id, attempt, reason, error, last_class, last_status)
    ),
    early as (
        update courier.jobs j
        set state = 'available', attempt = j.attempt - 1, leased_by = null, lease_expires_at = null,
            run_at = greatest(j.run_at, j.deadline)
        from a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and a.never_ran and coalesce(j.deadline > now(), false)
        returning j.id
    ),
    gone as (
        delete from courier.jobs j
        using a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and not (a.never_ran and coalesce(j.deadline > now(), false))
        returning j.*, a.reason as dl_reason, a.error as dl_error, a.last_class as dl_class, a.last_status as dl_status,
                  a.never_ran as dl_never_ran
    ),
    recorded as (
        insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret)
        select id, dl_reason, case when dl_never_ran then attempt - 1 else attempt end,
            case when dl_error = '' then errors else errors || jsonb_build_array(dl_error::jsonb) end,
            nullif(dl_class, ''), nullif(dl_status, -1), leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret
        from gone
        returning job_id
    )
    select recorded.job_id from recorded
    union all
    select early.id from early;
end
$$;


--
-- Name: FUNCTION dead_letter_jobs(p_ids bigint[], p_attempts integer[], p_reasons text[], p_errors text[], p_classes text[], p_statuses integer[], p_worker uuid); Type: ACL
--

REVOKE ALL ON FUNCTION courier.dead_letter_jobs(p_ids bigint[], p_attempts integer[], p_reasons text[], p_errors text[], p_classes text[], p_statuses integer[], p_worker uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.dead_letter_jobs(p_ids bigint[], p_attempts integer[], p_reasons text[], p_errors text[], p_classes text[], p_statuses integer[], p_worker uuid) TO courier_worker;
GRANT ALL ON FUNCTION courier.dead_letter_jobs(p_ids bigint[], p_attempts integer[], p_reasons text[], p_errors text[], p_classes text[], p_statuses integer[], p_worker uuid) TO courier_admin;


--
-- Name: enqueue(text, text, jsonb, text, text, integer, timestamp with time zone, integer, timestamp with time zone, text, text, text, integer, text, text); Type: FUNCTION
--

CREATE FUNCTION courier.enqueue(url text, method text DEFAULT 'POST'::text, headers jsonb DEFAULT '{}'::jsonb, body text DEFAULT NULL::text, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000, expect_content_type text DEFAULT NULL::text, signing_secret text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
#variable_conflict use_column
declare
    v_method      text := upper(coalesce(enqueue.method, 'POST'));
    v_destination text;
    v_id          bigint;
    v_header      record;
begin
    if enqueue.url is null then
        raise exception 'courier.enqueue: url is required' using errcode = '22023', column = 'url';
    end if;
    if length(enqueue.url) > 8192 then
        raise exception 'courier.enqueue: url is longer than 8192 characters' using errcode = '22023', column = 'url';
    end if;
    v_destination := coalesce(enqueue.destination, courier.destination_of(enqueue.url));
    if courier.destination_of(enqueue.url) is null then
        raise exception 'courier.enqueue: url must be an absolute http or https URL with a host'
            using errcode = '22023', column = 'url';
    end if;
    if v_method !~ '^[A-Z][A-Z0-9_-]{0,19}$' then
        raise exception 'courier.enqueue: method must be an HTTP method token such as GET or POST'
            using errcode = '22023', column = 'method';
    end if;
    if enqueue.headers is not null and jsonb_typeof(enqueue.headers) <> 'object' then
        raise exception 'courier.enqueue: headers must be a JSON object of name to value'
            using errcode = '22023', column = 'headers';
    end if;
    for v_header in select key, value from jsonb_each(coalesce(enqueue.headers, '{}')) loop
        if v_header.key !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]+$' then
            raise exception 'courier.enqueue: headers: % is not a valid header name', quote_literal(v_header.key)
                using errcode = '22023', column = 'headers';
        end if;
        if not (jsonb_typeof(v_header.value) = 'string'
                or (jsonb_typeof(v_header.value) = 'object' and jsonb_typeof(v_header.value -> 'secret') = 'string')) then
            raise exception 'courier.enqueue: headers: the value of % must be a string or {"secret": "NAME"}', v_header.key
                using errcode = '22023', column = 'headers';
        end if;
    end loop;
    if enqueue.queue is null or enqueue.queue !~ '^[A-Za-z0-9_.:-]{1,64}$' then
        raise exception 'courier.enqueue: queue must be 1 to 64 characters of letters, digits, _ . : -'
            using errcode = '22023', column = 'queue';
    end if;
    if enqueue.priority is null or enqueue.priority not between -32768 and 32767 then
        raise exception 'courier.enqueue: priority must be between -32768 and 32767'
            using errcode = '22023', column = 'priority';
    end if;
    if enqueue.max_attempts is null or enqueue.max_attempts not between 1 and 1000 then
        raise exception 'courier.enqueue: max_attempts must be between 1 and 1000'
            using errcode = '22023', column = 'max_attempts';
    end if;
    if enqueue.deadline is not null and enqueue.deadline <= greatest(now(), coalesce(enqueue.run_at, now())) then
        raise exception 'courier.enqueue: deadline must be later than now and than run_at'
            using errcode = '22023', column = 'deadline';
    end if;
    if enqueue.idempotency_key is not null and length(enqueue.idempotency_key) not between 1 and 255 then
        raise exception 'courier.enqueue: idempotency_key must be 1 to 255 characters'
            using errcode = '22023', column = 'idempotency_key';
    end if;
    if enqueue.unique_key is not null and length(enqueue.unique_key) not between 1 and 255 then
        raise exception 'courier.enqueue: unique_key must be 1 to 255 characters'
            using errcode = '22023', column = 'unique_key';
    end if;
    if length(v_destination) not between 1 and 300 then
        raise exception 'courier.enqueue: destination must be 1 to 300 characters'
            using errcode = '22023', column = 'destination';
    end if;
    if enqueue.timeout_ms is null or enqueue.timeout_ms not between 1 and 3600000 then
        raise exception 'courier.enqueue: timeout_ms must be between 1 and 3600000'
            using errcode = '22023', column = 'timeout_ms';
    end if;
    if enqueue.expect_content_type is not null
       and enqueue.expect_content_type !~* '^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+*-]+$' then
        raise exception 'courier.enqueue: expect_content_type must be a media type such as application/json'
            using errcode = '22023', column = 'expect_content_type';
    end if;
    if enqueue.signing_secret is not null and not courier.is_secret_name(enqueue.signing_secret) then
        raise exception 'courier.enqueue: signing_secret must be a secret name: 1 to 128 letters, digits, _ . -'
            using errcode = '22023', column = 'signing_secret';
    end if;

    loop
        insert into courier.jobs (queue, priority, run_at, max_attempts, deadline, destination, method, url,
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, unique_key, unique_scope,
                                  signing_secret, held_since)
        values (enqueue.queue, enqueue.priority, coalesce(enqueue.run_at, now()), enqueue.max_attempts,
                enqueue.deadline, v_destination, v_method, enqueue.url, coalesce(enqueue.headers, '{}'),
                enqueue.body, enqueue.timeout_ms, lower(enqueue.expect_content_type), enqueue.idempotency_key,
                enqueue.unique_key, case when enqueue.unique_key is not null then session_user::text end, enqueue.signing_secret,
                -- A destination whose breaker is open: the job waits out of the runnable index.
                case when exists (select 1 from courier.breakers b
                                  where b.destination = v_destination and b.state <> 'closed') then now() end)
        on conflict (unique_scope, unique_key) where unique_key is not null do nothing
        returning id into v_id;
        exit when v_id is not null;
        -- Another waiting or running job of this caller holds the key: return its id. If it left the
        -- queue between our insert and this read, try the insert again.
        select j.id into v_id from courier.jobs j
        where j.unique_scope = session_user::text and j.unique_key = enqueue.unique_key;
        exit when v_id is not null;
    end loop;

    if pg_try_advisory_xact_lock(1668248946, hashtext(enqueue.queue)) then
        perform pg_notify('courier_jobs', enqueue.queue);
    end if;
    return v_id;
end
$_$;


--
-- Name: FUNCTION enqueue(url text, method text, headers jsonb, body text, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer, expect_content_type text, signing_secret text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.enqueue(url text, method text, headers jsonb, body text, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer, expect_content_type text, signing_secret text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.enqueue(url text, method text, headers jsonb, body text, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer, expect_content_type text, signing_secret text) TO courier_worker;
GRANT ALL ON FUNCTION courier.enqueue(url text, method text, headers jsonb, body text, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer, expect_content_type text, signing_secret text) TO courier_admin;
GRANT ALL ON FUNCTION courier.enqueue(url text, method text, headers jsonb, body text, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer, expect_content_type text, signing_secret text) TO courier_enqueue;


--
-- Name: enqueue_job(text, jsonb, text, integer, timestamp with time zone, integer, timestamp with time zone, text, text, text, integer); Type: FUNCTION
--

CREATE FUNCTION courier.enqueue_job(kind text, args jsonb DEFAULT '{}'::jsonb, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
#variable_conflict use_column
declare
    v_id bigint;
begin
    if enqueue_job.kind is null or enqueue_job.kind !~ '^[a-z][a-z0-9_.-]{0,63}$' or enqueue_job.kind = 'http' then
        raise exception 'courier.enqueue_job: kind must be a lower-case name other than http (use courier.enqueue for HTTP jobs)'
            using errcode = '22023', column = 'kind';
    end if;
    if enqueue_job.queue is null or enqueue_job.queue !~ '^[A-Za-z0-9_.:-]{1,64}$' then
        raise exception 'courier.enqueue_job: queue must be 1 to 64 characters of letters, digits, _ . : -'
            using errcode = '22023', column = 'queue';
    end if;
    if enqueue_job.max_attempts is null or enqueue_job.max_attempts not between 1 and 1000 then
        raise exception 'courier.enqueue_job: max_attempts must be between 1 and 1000'
            using errcode = '22023', column = 'max_attempts';
    end if;
    if enqueue_job.deadline is not null and enqueue_job.deadline <= greatest(now(), coalesce(enqueue_job.run_at, now())) then
        raise exception 'courier.enqueue_job: deadline must be later than now and than run_at'
            using errcode = '22023', column = 'deadline';
    end if;
    loop
        insert into courier.jobs (kind, args, queue, priority, run_at, max_attempts, deadline, destination,
                                  idempotency_key, unique_key, unique_scope, timeout_ms, held_since)
        values (enqueue_job.kind, coalesce(enqueue_job.args, '{}'), enqueue_job.queue, coalesce(enqueue_job.priority, 0),
                coalesce(enqueue_job.run_at, now()), enqueue_job.max_attempts, enqueue_job.deadline,
                coalesce(enqueue_job.destination, 'job:' || enqueue_job.kind), enqueue_job.idempotency_key,
                enqueue_job.unique_key, case when enqueue_job.unique_key is not null then session_user::text end,
                coalesce(enqueue_job.timeout_ms, 30000),
                case when exists (select 1 from courier.breakers b
                                  where b.destination = coalesce(enqueue_job.destination, 'job:' || enqueue_job.kind)
                                    and b.state <> 'closed') then now() end)
        on conflict (unique_scope, unique_key) where unique_key is not null do nothing
        returning id into v_id;
        exit when v_id is not null;
        select j.id into v_id from courier.jobs j
        where j.unique_scope = session_user::text and j.unique_key = enqueue_job.unique_key;
        exit when v_id is not null;
    end loop;
    perform pg_notify('courier_jobs', enqueue_job.queue);
    return v_id;
end
$_$;


--
-- Name: FUNCTION enqueue_job(kind text, args jsonb, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer); Type: ACL
--

REVOKE ALL ON FUNCTION courier.enqueue_job(kind text, args jsonb, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.enqueue_job(kind text, args jsonb, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer) TO courier_enqueue;
GRANT ALL ON FUNCTION courier.enqueue_job(kind text, args jsonb, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer) TO courier_worker;
GRANT ALL ON FUNCTION courier.enqueue_job(kind text, args jsonb, queue text, priority integer, run_at timestamp with time zone, max_attempts integer, deadline timestamp with time zone, idempotency_key text, unique_key text, destination text, timeout_ms integer) TO courier_admin;


--
-- Name: hand_back_jobs(bigint[], integer[], uuid, bigint); Type: FUNCTION
--

CREATE FUNCTION courier.hand_back_jobs(p_ids bigint[], p_attempts integer[], p_worker uuid, p_not_before_ms bigint) RETURNS SETOF bigint
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    return query
    update courier.jobs j
    set state = 'available', attempt = j.attempt - 1, leased_by = null, lease_expires_at = null,
        run_at = greatest(j.run_at, now() + p_not_before_ms * interval '1 millisecond')
    from unnest(p_ids, p_attempts) as a(id, attempt)
    where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
    returning j.id;
end
$$;


--
-- Name: FUNCTION hand_back_jobs(p_ids bigint[], p_attempts integer[], p_worker uuid, p_not_before_ms bigint); Type: ACL
--

REVOKE ALL ON FUNCTION courier.hand_back_jobs(p_ids bigint[], p_attempts integer[], p_worker uuid, p_not_before_ms bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.hand_back_jobs(p_ids bigint[], p_attempts integer[], p_worker uuid, p_not_before_ms bigint) TO courier_worker;
GRANT ALL ON FUNCTION courier.hand_back_jobs(p_ids bigint[], p_attempts integer[], p_worker uuid, p_not_before_ms bigint) TO courier_admin;


--
-- Name: has_due_job(text, text, boolean, boolean); Type: FUNCTION
--

CREATE FUNCTION courier.has_due_job(p_destination text, p_queue text, p_gated boolean, p_retries boolean) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
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


--
-- Name: FUNCTION has_due_job(p_destination text, p_queue text, p_gated boolean, p_retries boolean); Type: ACL
--

REVOKE ALL ON FUNCTION courier.has_due_job(p_destination text, p_queue text, p_gated boolean, p_retries boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.has_due_job(p_destination text, p_queue text, p_gated boolean, p_retries boolean) TO courier_worker;
GRANT ALL ON FUNCTION courier.has_due_job(p_destination text, p_queue text, p_gated boolean, p_retries boolean) TO courier_admin;


--
-- Name: renew_leases(bigint[], integer[], uuid, integer); Type: FUNCTION
--

CREATE FUNCTION courier.renew_leases(p_ids bigint[], p_attempts integer[], p_worker uuid, p_lease_ms integer) RETURNS TABLE(job_id bigint, job_attempt integer, cancel_requested boolean)
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    return query
    with mine as (
        select j.id
        from courier.jobs j
        join unnest(p_ids, p_attempts) as w(id, attempt) on j.id = w.id and j.attempt = w.attempt
        where j.id = any(p_ids) and j.leased_by = p_worker
        order by j.id
        for update of j skip locked
    )
    update courier.jobs j
    set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
    where j.id = any(array(select mine.id from mine))
    returning j.id, j.attempt, j.cancel_requested_at is not null;
end
$$;


--
-- Name: FUNCTION renew_leases(p_ids bigint[], p_attempts integer[], p_worker uuid, p_lease_ms integer); Type: ACL
--

REVOKE ALL ON FUNCTION courier.renew_leases(p_ids bigint[], p_attempts integer[], p_worker uuid, p_lease_ms integer) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.renew_leases(p_ids bigint[], p_attempts integer[], p_worker uuid, p_lease_ms integer) TO courier_worker;
GRANT ALL ON FUNCTION courier.renew_leases(p_ids bigint[], p_attempts integer[], p_worker uuid, p_lease_ms integer) TO courier_admin;


--
-- Name: retry_jobs(bigint[], integer[], bigint[], text[], boolean[], uuid); Type: FUNCTION
--

CREATE FUNCTION courier.retry_jobs(p_ids bigint[], p_attempts integer[], p_delays_ms bigint[], p_errors text[], p_uses_attempt boolean[], p_worker uuid) RETURNS SETOF bigint
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    return query
    with a as (
        select * from unnest(p_ids, p_attempts, p_delays_ms, p_errors, p_uses_attempt)
            as a(id, attempt, delay_ms, error, uses_attempt)
    ),
    retried as (
        update courier.jobs j
        set state = 'available', run_at = now() + a.delay_ms * interval '1 millisecond', last_delay_ms = a.delay_ms,
            leased_by = null, lease_expires_at = null, errors = j.errors || jsonb_build_array(a.error::jsonb),
            attempt = j.attempt - case when a.uses_attempt then 0 else 1 end,
            -- A destination whose breaker opened meanwhile: wait out of the runnable index.
            held_since = case when courier.breaker_holds(j.destination) then now() end
        from a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and j.cancel_requested_at is null
        returning j.id
    ),
    cancelled as (
        delete from courier.jobs j
        using a
        where j.id = any(p_ids) and j.id = a.id and j.attempt = a.attempt and j.leased_by = p_worker
          and j.cancel_requested_at is not null
        returning j.*, a.error as dl_error, a.uses_attempt as dl_uses_attempt
    ),
    recorded as (
        insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret)
        select id, 'cancelled', attempt - case when dl_uses_attempt then 0 else 1 end,
            errors || jsonb_build_array(dl_error::jsonb), 'cancelled', null, leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret
        from cancelled
        returning job_id
    )
    select retried.id from retried
    union all
    select recorded.job_id from recorded;
end
$$;


--
-- Name: FUNCTION retry_jobs(p_ids bigint[], p_attempts integer[], p_delays_ms bigint[], p_errors text[], p_uses_attempt boolean[], p_worker uuid); Type: ACL
--

REVOKE ALL ON FUNCTION courier.retry_jobs(p_ids bigint[], p_attempts integer[], p_delays_ms bigint[], p_errors text[], p_uses_attempt boolean[], p_worker uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.retry_jobs(p_ids bigint[], p_attempts integer[], p_delays_ms bigint[], p_errors text[], p_uses_attempt boolean[], p_worker uuid) TO courier_worker;
GRANT ALL ON FUNCTION courier.retry_jobs(p_ids bigint[], p_attempts integer[], p_delays_ms bigint[], p_errors text[], p_uses_attempt boolean[], p_worker uuid) TO courier_admin;
