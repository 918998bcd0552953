-- schedules.sql: recurring jobs: courier.schedules, courier.schedule_runs (one row per run
-- enqueued) and the schedule_* functions behind `jobctl schedules`.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: schedules; Type: TABLE
--

CREATE TABLE courier.schedules (
    name text NOT NULL,
    cron text,
    every_seconds bigint,
    timezone text DEFAULT 'UTC'::text NOT NULL,
    missed text DEFAULT 'one'::text NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    template jsonb NOT NULL,
    next_run timestamp with time zone,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedules_cron_check CHECK (((length(cron) >= 1) AND (length(cron) <= 200))),
    CONSTRAINT schedules_every_seconds_check CHECK (((every_seconds >= 1) AND (every_seconds <= 31622400))),
    CONSTRAINT schedules_missed_check CHECK ((missed = ANY (ARRAY['skip'::text, 'one'::text, 'all'::text]))),
    CONSTRAINT schedules_name_check CHECK (((name ~ '^[A-Za-z0-9_.:-]+$'::text) AND ((length(name) >= 1) AND (length(name) <= 128)))),
    CONSTRAINT schedules_rule_check CHECK (((cron IS NULL) <> (every_seconds IS NULL))),
    CONSTRAINT schedules_template_check CHECK (((jsonb_typeof(template) = 'object'::text) AND ((template ? 'url'::text) <> (template ? 'kind'::text)) AND (NOT (template ?| ARRAY['run_at'::text, 'deadline'::text, 'idempotency_key'::text])))),
    CONSTRAINT schedules_timezone_check CHECK (((length(timezone) >= 1) AND (length(timezone) <= 64)))
);


--
-- Name: schedules schedules_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (name);


--
-- Name: schedules_due_idx; Type: INDEX
--

CREATE INDEX schedules_due_idx ON courier.schedules USING btree (next_run NULLS FIRST) WHERE ((NOT paused) AND (last_error IS NULL));


--
-- Name: TABLE schedules; Type: ACL
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE courier.schedules TO courier_worker;
GRANT ALL ON TABLE courier.schedules TO courier_admin;


--
-- Name: schedule_runs; Type: TABLE
--

CREATE TABLE courier.schedule_runs (
    schedule text NOT NULL,
    slot timestamp with time zone NOT NULL,
    job_id bigint NOT NULL,
    enqueued_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: schedule_runs schedule_runs_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.schedule_runs
    ADD CONSTRAINT schedule_runs_pkey PRIMARY KEY (schedule, slot);


--
-- Name: schedule_runs schedule_runs_schedule_fkey; Type: FK CONSTRAINT
--

ALTER TABLE ONLY courier.schedule_runs
    ADD CONSTRAINT schedule_runs_schedule_fkey FOREIGN KEY (schedule) REFERENCES courier.schedules(name) ON UPDATE CASCADE ON DELETE CASCADE;


--
-- Name: TABLE schedule_runs; Type: ACL
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE courier.schedule_runs TO courier_worker;
GRANT ALL ON TABLE courier.schedule_runs TO courier_admin;


--
-- Name: schedule_add(text, jsonb, text, interval, text, text, boolean); Type: FUNCTION
--

CREATE FUNCTION courier.schedule_add(name text, template jsonb, cron text DEFAULT NULL::text, every interval DEFAULT NULL::interval, timezone text DEFAULT 'UTC'::text, missed text DEFAULT 'one'::text, paused boolean DEFAULT false) RETURNS void
    LANGUAGE plpgsql
    AS $$
begin
    perform courier.schedule_check(schedule_add.name, schedule_add.cron, schedule_add.every, schedule_add.missed,
                                   schedule_add.template);
    insert into courier.schedules (name, cron, every_seconds, timezone, missed, paused, template)
    values (schedule_add.name, schedule_add.cron, extract(epoch from schedule_add.every)::bigint,
            coalesce(schedule_add.timezone, 'UTC'), schedule_add.missed, coalesce(schedule_add.paused, false),
            schedule_add.template);
exception when unique_violation then
    raise exception 'courier.schedule_add: schedule % exists (use courier.schedule_update)', name
        using errcode = '22023', column = 'name';
end
$$;


--
-- Name: FUNCTION schedule_add(name text, template jsonb, cron text, every interval, timezone text, missed text, paused boolean); Type: ACL
--

REVOKE ALL ON FUNCTION courier.schedule_add(name text, template jsonb, cron text, every interval, timezone text, missed text, paused boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.schedule_add(name text, template jsonb, cron text, every interval, timezone text, missed text, paused boolean) TO courier_worker;
GRANT ALL ON FUNCTION courier.schedule_add(name text, template jsonb, cron text, every interval, timezone text, missed text, paused boolean) TO courier_admin;


--
-- Name: schedule_check(text, text, interval, text, jsonb); Type: FUNCTION
--

CREATE FUNCTION courier.schedule_check(p_name text, p_cron text, p_every interval, p_missed text, p_template jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    AS $_$
begin
    if p_name is null or p_name !~ '^[A-Za-z0-9_.:-]+$' or length(p_name) > 128 then
        raise exception 'courier.schedule: name must be 1 to 128 characters of letters, digits, _ . : -'
            using errcode = '22023', column = 'name';
    end if;
    if (p_cron is null) = (p_every is null) then
        raise exception 'courier.schedule: give exactly one of cron and every'
            using errcode = '22023', column = 'cron';
    end if;
    if p_every is not null and (p_every < interval '1 second'
            or extract(epoch from p_every) <> floor(extract(epoch from p_every))) then
        raise exception 'courier.schedule: every must be a whole number of seconds, at least 1 second'
            using errcode = '22023', column = 'every';
    end if;
    if p_missed is null or p_missed not in ('skip', 'one', 'all') then
        raise exception 'courier.schedule: missed must be skip, one or all'
            using errcode = '22023', column = 'missed';
    end if;
    if p_template is null or jsonb_typeof(p_template) <> 'object' or (p_template ? 'url') = (p_template ? 'kind') then
        raise exception 'courier.schedule: template must be a JSON object with url (an HTTP job) or kind (a handler job)'
            using errcode = '22023', column = 'template';
    end if;
    if p_template ?| array['run_at', 'deadline', 'idempotency_key'] then
        raise exception 'courier.schedule: template must not set run_at, deadline or idempotency_key (each run gets its slot, within_ms and a key of its own)'
            using errcode = '22023', column = 'template';
    end if;
end
$_$;


--
-- Name: FUNCTION schedule_check(p_name text, p_cron text, p_every interval, p_missed text, p_template jsonb); Type: ACL
--

REVOKE ALL ON FUNCTION courier.schedule_check(p_name text, p_cron text, p_every interval, p_missed text, p_template jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.schedule_check(p_name text, p_cron text, p_every interval, p_missed text, p_template jsonb) TO courier_worker;
GRANT ALL ON FUNCTION courier.schedule_check(p_name text, p_cron text, p_every interval, p_missed text, p_template jsonb) TO courier_admin;


--
-- Name: schedule_pause(text); Type: FUNCTION
--

CREATE FUNCTION courier.schedule_pause(name text) RETURNS boolean
    LANGUAGE sql
    AS $$
    with changed as (
        update courier.schedules s set paused = true, updated_at = now()
        where s.name = schedule_pause.name returning 1)
    select exists (select 1 from changed)
$$;


--
-- Name: FUNCTION schedule_pause(name text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.schedule_pause(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.schedule_pause(name text) TO courier_worker;
GRANT ALL ON FUNCTION courier.schedule_pause(name text) TO courier_admin;


--
-- Name: schedule_remove(text); Type: FUNCTION
--

CREATE FUNCTION courier.schedule_remove(name text) RETURNS boolean
    LANGUAGE sql
    AS $$
    with removed as (delete from courier.schedules s where s.name = schedule_remove.name returning 1)
    select exists (select 1 from removed)
$$;


--
-- Name: FUNCTION schedule_remove(name text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.schedule_remove(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.schedule_remove(name text) TO courier_worker;
GRANT ALL ON FUNCTION courier.schedule_remove(name text) TO courier_admin;


--
-- Name: schedule_resume(text); Type: FUNCTION
--

CREATE FUNCTION courier.schedule_resume(name text) RETURNS boolean
    LANGUAGE sql
    AS $$
    with changed as (
        update courier.schedules s
        set paused = false, next_run = case when s.paused then null else s.next_run end, last_error = null,
            updated_at = now()
        where s.name = schedule_resume.name returning 1)
    select exists (select 1 from changed)
$$;


--
-- Name: FUNCTION schedule_resume(name text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.schedule_resume(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.schedule_resume(name text) TO courier_worker;
GRANT ALL ON FUNCTION courier.schedule_resume(name text) TO courier_admin;


--
-- Name: schedule_update(text, jsonb, text, interval, text, text); Type: FUNCTION
--

CREATE FUNCTION courier.schedule_update(name text, template jsonb DEFAULT NULL::jsonb, cron text DEFAULT NULL::text, every interval DEFAULT NULL::interval, timezone text DEFAULT NULL::text, missed text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
declare
    v courier.schedules;
begin
    select * into v from courier.schedules s where s.name = schedule_update.name for update;
    if not found then
        return false;
    end if;
    if schedule_update.cron is not null and schedule_update.every is not null then
        raise exception 'courier.schedule_update: give at most one of cron and every'
            using errcode = '22023', column = 'cron';
    end if;
    perform courier.schedule_check(schedule_update.name,
        case when schedule_update.every is null then coalesce(schedule_update.cron, v.cron) end,
        case when schedule_update.cron is null
             then coalesce(schedule_update.every, make_interval(secs => v.every_seconds)) end,
        coalesce(schedule_update.missed, v.missed), coalesce(schedule_update.template, v.template));
    update courier.schedules s
    set cron = case when schedule_update.every is not null then null else coalesce(schedule_update.cron, s.cron) end,
        every_seconds = case when schedule_update.cron is not null then null
                             else coalesce(extract(epoch from schedule_update.every)::bigint, s.every_seconds) end,
        timezone = coalesce(schedule_update.timezone, s.timezone),
        missed = coalesce(schedule_update.missed, s.missed),
        template = coalesce(schedule_update.template, s.template),
        next_run = case when schedule_update.cron is not null or schedule_update.every is not null
                             or schedule_update.timezone is not null
                        then null else s.next_run end,
        last_error = null,
        updated_at = now()
    where s.name = schedule_update.name;
    return true;
end
$$;


--
-- Name: FUNCTION schedule_update(name text, template jsonb, cron text, every interval, timezone text, missed text); Type: ACL
--

REVOKE ALL ON FUNCTION courier.schedule_update(name text, template jsonb, cron text, every interval, timezone text, missed text) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.schedule_update(name text, template jsonb, cron text, every interval, timezone text, missed text) TO courier_worker;
GRANT ALL ON FUNCTION courier.schedule_update(name text, template jsonb, cron text, every interval, timezone text, missed text) TO courier_admin;
