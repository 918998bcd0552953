-- dead_letters.sql: courier.dead_letters, jobs that failed for good, and replay_dead_letters. Rows
-- arrive through courier.dead_letter_jobs (jobs.sql), a worker's acknowledgement of a final
-- failure.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: dead_letters; Type: TABLE
--

CREATE TABLE courier.dead_letters (
    id bigint NOT NULL,
    job_id bigint NOT NULL,
    reason text NOT NULL,
    kind text NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    destination text NOT NULL,
    method text NOT NULL,
    url text,
    headers jsonb NOT NULL,
    body text,
    timeout_ms integer NOT NULL,
    expect_content_type text,
    idempotency_key text,
    unique_key text,
    args jsonb,
    max_attempts integer NOT NULL,
    deadline timestamp with time zone,
    attempt integer NOT NULL,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    last_class text,
    last_status integer,
    worker text,
    created_at timestamp with time zone NOT NULL,
    failed_at timestamp with time zone DEFAULT now() NOT NULL,
    replayed_at timestamp with time zone,
    replay_job_id bigint,
    signing_secret text,
    CONSTRAINT dead_letters_reason_check CHECK ((reason = ANY (ARRAY['permanent'::text, 'invalid_response'::text, 'exhausted'::text, 'deadline'::text, 'ambiguous'::text, 'cancelled'::text])))
);


--
-- Name: dead_letters_id_seq; Type: SEQUENCE
--

ALTER TABLE courier.dead_letters ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME courier.dead_letters_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: dead_letters dead_letters_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id);


--
-- Name: dead_letters_destination_idx; Type: INDEX
--

CREATE INDEX dead_letters_destination_idx ON courier.dead_letters USING btree (destination, failed_at);


--
-- Name: dead_letters_failed_at_idx; Type: INDEX
--

CREATE INDEX dead_letters_failed_at_idx ON courier.dead_letters USING btree (failed_at);


--
-- Name: dead_letters_job_id_idx; Type: INDEX
--

CREATE INDEX dead_letters_job_id_idx ON courier.dead_letters USING btree (job_id);


--
-- Name: dead_letters_replayable_idx; Type: INDEX
--

CREATE INDEX dead_letters_replayable_idx ON courier.dead_letters USING btree (failed_at, id) WHERE (replayed_at IS NULL);


--
-- Name: dead_letters_unreplayed_idx; Type: INDEX
--

CREATE INDEX dead_letters_unreplayed_idx ON courier.dead_letters USING btree (id) WHERE (replayed_at IS NULL);


--
-- Name: dead_letters_waiting_reason_idx; Type: INDEX
--

CREATE INDEX dead_letters_waiting_reason_idx ON courier.dead_letters USING btree (reason, failed_at, id) WHERE (replayed_at IS NULL);


--
-- Name: SEQUENCE dead_letters_id_seq; Type: ACL
--

GRANT SELECT,USAGE ON SEQUENCE courier.dead_letters_id_seq TO courier_worker;
GRANT ALL ON SEQUENCE courier.dead_letters_id_seq TO courier_admin;


--
-- Name: TABLE dead_letters; Type: ACL
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE courier.dead_letters TO courier_worker;
GRANT ALL ON TABLE courier.dead_letters TO courier_admin;


--
-- Name: replay_dead_letters(bigint[], text[], text[], text[], text[], integer[], timestamp with time zone, timestamp with time zone, double precision, timestamp with time zone, bigint, integer, boolean, boolean, timestamp with time zone); Type: FUNCTION
--

CREATE FUNCTION courier.replay_dead_letters(ids bigint[] DEFAULT NULL::bigint[], reasons text[] DEFAULT NULL::text[], destinations text[] DEFAULT NULL::text[], queues text[] DEFAULT NULL::text[], classes text[] DEFAULT NULL::text[], statuses integer[] DEFAULT NULL::integer[], since timestamp with time zone DEFAULT NULL::timestamp with time zone, until timestamp with time zone DEFAULT NULL::timestamp with time zone, rate_per_second double precision DEFAULT NULL::double precision, start_at timestamp with time zone DEFAULT now(), start_index bigint DEFAULT 0, max_rows integer DEFAULT NULL::integer, force boolean DEFAULT false, dry_run boolean DEFAULT false, replayed_before timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(dead_letter_id bigint, new_job_id bigint, destination text, run_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
begin
    if rate_per_second is not null and rate_per_second <= 0 then
        raise exception 'courier.replay_dead_letters: rate_per_second must be positive'
            using errcode = '22023', column = 'rate_per_second';
    end if;
    if max_rows is not null and max_rows < 1 then
        raise exception 'courier.replay_dead_letters: max_rows must be at least 1' using errcode = '22023', column = 'max_rows';
    end if;
    if reasons is not null and exists (select 1 from unnest(reasons) r
            where r not in ('permanent', 'invalid_response', 'exhausted', 'deadline', 'ambiguous', 'cancelled')) then
        raise exception 'courier.replay_dead_letters: reasons must be among permanent, invalid_response, exhausted, deadline, ambiguous, cancelled'
            using errcode = '22023', column = 'reasons';
    end if;
    return query
    with locked as (
        select d.id
        from courier.dead_letters d
        where (replay_dead_letters.ids is null or d.id = any(replay_dead_letters.ids))
          and (replay_dead_letters.reasons is null or d.reason = any(replay_dead_letters.reasons))
          and (replay_dead_letters.destinations is null or d.destination = any(replay_dead_letters.destinations))
          and (replay_dead_letters.queues is null or d.queue = any(replay_dead_letters.queues))
          and (replay_dead_letters.classes is null or d.last_class = any(replay_dead_letters.classes))
          and (replay_dead_letters.statuses is null or d.last_status = any(replay_dead_letters.statuses))
          and (replay_dead_letters.since is null or d.failed_at >= replay_dead_letters.since)
          and (replay_dead_letters.until is null or d.failed_at < replay_dead_letters.until)
          and (d.replayed_at is null
               or (replay_dead_letters.force
                   and (replay_dead_letters.replayed_before is null or d.replayed_at < replay_dead_letters.replayed_before)))
        order by d.failed_at, d.id
        limit replay_dead_letters.max_rows
        for update skip locked
    ),
    picked as (
        select d.*, row_number() over (order by d.failed_at, d.id) - 1 + replay_dead_letters.start_index as n
        from courier.dead_letters d join locked l on l.id = d.id
    ),
    planned as (
        select p.*,
               case when replay_dead_letters.rate_per_second is null then replay_dead_letters.start_at
                    else replay_dead_letters.start_at + (p.n / replay_dead_letters.rate_per_second) * interval '1 second'
               end as new_run_at,
               case when replay_dead_letters.dry_run then null
                    else nextval(pg_get_serial_sequence('courier.jobs', 'id')) end as new_id
        from picked p
    ),
    inserted as (
        insert into courier.jobs (id, kind, queue, priority, run_at, max_attempts, deadline, destination, method, url,
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, args, signing_secret)
        overriding system value
        select pl.new_id, pl.kind, pl.queue, pl.priority, pl.new_run_at, pl.max_attempts,
               case when pl.deadline is null then null
                    when pl.deadline > pl.new_run_at then pl.deadline
                    else pl.new_run_at + (pl.deadline - pl.created_at) end,
               pl.destination, pl.method, pl.url, pl.headers, pl.body, pl.timeout_ms, pl.expect_content_type,
               pl.idempotency_key, pl.args, pl.signing_secret
        from planned pl
        where not replay_dead_letters.dry_run
        returning id
    ),
    marked as (
        update courier.dead_letters d
        set replayed_at = now(), replay_job_id = pl.new_id
        from planned pl
        where d.id = pl.id and not replay_dead_letters.dry_run
        returning d.id
    )
    select pl.id, pl.new_id, pl.destination, pl.new_run_at
    from planned pl
    where replay_dead_letters.dry_run or pl.new_id in (select id from inserted)
    order by pl.n;
    if not dry_run then
        perform pg_notify('courier_jobs', '');
    end if;
end
$$;


--
-- Name: FUNCTION replay_dead_letters(ids bigint[], reasons text[], destinations text[], queues text[], classes text[], statuses integer[], since timestamp with time zone, until timestamp with time zone, rate_per_second double precision, start_at timestamp with time zone, start_index bigint, max_rows integer, force boolean, dry_run boolean, replayed_before timestamp with time zone); Type: ACL
--

REVOKE ALL ON FUNCTION courier.replay_dead_letters(ids bigint[], reasons text[], destinations text[], queues text[], classes text[], statuses integer[], since timestamp with time zone, until timestamp with time zone, rate_per_second double precision, start_at timestamp with time zone, start_index bigint, max_rows integer, force boolean, dry_run boolean, replayed_before timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.replay_dead_letters(ids bigint[], reasons text[], destinations text[], queues text[], classes text[], statuses integer[], since timestamp with time zone, until timestamp with time zone, rate_per_second double precision, start_at timestamp with time zone, start_index bigint, max_rows integer, force boolean, dry_run boolean, replayed_before timestamp with time zone) TO courier_admin;
