-- queues.sql: courier.queue_settings (per-queue pause and settings) and queue_pause.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: queue_settings; Type: TABLE
--

CREATE TABLE courier.queue_settings (
    queue text NOT NULL,
    backoff text,
    backoff_base_ms bigint,
    backoff_cap_ms bigint,
    backoff_multiplier double precision,
    jitter text,
    retry_after_cap_ms bigint,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    CONSTRAINT queue_settings_backoff_base_ms_check CHECK (((backoff_base_ms IS NULL) OR ((backoff_base_ms >= 1) AND (backoff_base_ms <= 86400000)))),
    CONSTRAINT queue_settings_backoff_cap_ms_check CHECK (((backoff_cap_ms IS NULL) OR ((backoff_cap_ms >= 1) AND (backoff_cap_ms <= 604800000)))),
    CONSTRAINT queue_settings_backoff_check CHECK (((backoff IS NULL) OR (backoff = ANY (ARRAY['exponential'::text, 'linear'::text, 'constant'::text])))),
    CONSTRAINT queue_settings_backoff_multiplier_check CHECK (((backoff_multiplier IS NULL) OR ((backoff_multiplier >= (1)::double precision) AND (backoff_multiplier <= (100)::double precision)))),
    CONSTRAINT queue_settings_jitter_check CHECK (((jitter IS NULL) OR (jitter = ANY (ARRAY['full'::text, 'equal'::text, 'decorrelated'::text, 'none'::text])))),
    CONSTRAINT queue_settings_queue_check CHECK ((queue ~ '^[A-Za-z0-9_.:-]{1,64}$'::text)),
    CONSTRAINT queue_settings_retry_after_cap_ms_check CHECK (((retry_after_cap_ms IS NULL) OR ((retry_after_cap_ms >= 0) AND (retry_after_cap_ms <= 604800000))))
);


--
-- Name: queue_settings queue_settings_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.queue_settings
    ADD CONSTRAINT queue_settings_pkey PRIMARY KEY (queue);


--
-- Name: TABLE queue_settings; Type: ACL
--

GRANT SELECT ON TABLE courier.queue_settings TO courier_worker;
GRANT ALL ON TABLE courier.queue_settings TO courier_admin;


--
-- Name: queue_pause(text, boolean); Type: FUNCTION
--

CREATE FUNCTION courier.queue_pause(queue text, paused boolean) RETURNS boolean
    LANGUAGE plpgsql
    AS $_$
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
$_$;


--
-- Name: FUNCTION queue_pause(queue text, paused boolean); Type: ACL
--

REVOKE ALL ON FUNCTION courier.queue_pause(queue text, paused boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.queue_pause(queue text, paused boolean) TO courier_admin;
