-- attempt_stats.sql: courier.attempt_stats, the attempt and retry counters behind the metrics, and
-- attempt_stats_add, which workers call to add to them.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: attempt_stats; Type: TABLE
--

CREATE TABLE courier.attempt_stats (
    bucket timestamp with time zone NOT NULL,
    queue text NOT NULL,
    destination text NOT NULL,
    class text NOT NULL,
    attempts bigint DEFAULT 0 NOT NULL,
    retries bigint DEFAULT 0 NOT NULL,
    succeeded_after_retry bigint DEFAULT 0 NOT NULL,
    delay_buckets bigint[] DEFAULT '{0,0,0,0,0,0,0,0}'::bigint[] NOT NULL,
    delay_ms_sum bigint DEFAULT 0 NOT NULL
);


--
-- Name: attempt_stats attempt_stats_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.attempt_stats
    ADD CONSTRAINT attempt_stats_pkey PRIMARY KEY (bucket, queue, destination, class);


--
-- Name: TABLE attempt_stats; Type: ACL
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE courier.attempt_stats TO courier_worker;
GRANT ALL ON TABLE courier.attempt_stats TO courier_admin;


--
-- Name: attempt_stats_add(text[], text[], text[], bigint[], bigint[], bigint[], text[], bigint[]); Type: FUNCTION
--

CREATE FUNCTION courier.attempt_stats_add(p_queues text[], p_destinations text[], p_classes text[], p_attempts bigint[], p_retries bigint[], p_succeeded_after_retry bigint[], p_delay_buckets text[], p_delay_ms_sum bigint[]) RETURNS void
    LANGUAGE sql
    AS $$
    insert into courier.attempt_stats as s (bucket, queue, destination, class, attempts, retries, succeeded_after_retry,
                                            delay_buckets, delay_ms_sum)
    select date_trunc('minute', now()), q, d, c, a, r, sar, db::bigint[], dms
    from unnest(p_queues, p_destinations, p_classes, p_attempts, p_retries, p_succeeded_after_retry, p_delay_buckets,
                p_delay_ms_sum) as t(q, d, c, a, r, sar, db, dms)
    on conflict (bucket, queue, destination, class) do update
    set attempts = s.attempts + excluded.attempts,
        retries = s.retries + excluded.retries,
        succeeded_after_retry = s.succeeded_after_retry + excluded.succeeded_after_retry,
        delay_buckets = array(select x + y from unnest(s.delay_buckets, excluded.delay_buckets) as u(x, y)),
        delay_ms_sum = s.delay_ms_sum + excluded.delay_ms_sum
$$;


--
-- Name: FUNCTION attempt_stats_add(p_queues text[], p_destinations text[], p_classes text[], p_attempts bigint[], p_retries bigint[], p_succeeded_after_retry bigint[], p_delay_buckets text[], p_delay_ms_sum bigint[]); Type: ACL
--

REVOKE ALL ON FUNCTION courier.attempt_stats_add(p_queues text[], p_destinations text[], p_classes text[], p_attempts bigint[], p_retries bigint[], p_succeeded_after_retry bigint[], p_delay_buckets text[], p_delay_ms_sum bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION courier.attempt_stats_add(p_queues text[], p_destinations text[], p_classes text[], p_attempts bigint[], p_retries bigint[], p_succeeded_after_retry bigint[], p_delay_buckets text[], p_delay_ms_sum bigint[]) TO courier_worker;
GRANT ALL ON FUNCTION courier.attempt_stats_add(p_queues text[], p_destinations text[], p_classes text[], p_attempts bigint[], p_retries bigint[], p_succeeded_after_retry bigint[], p_delay_buckets text[], p_delay_ms_sum bigint[]) TO courier_admin;
