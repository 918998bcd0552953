-- workers.sql: courier.workers: one row per running jobworker, with its heartbeat.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: workers; Type: TABLE
--

CREATE TABLE courier.workers (
    id uuid NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    queues text[] NOT NULL,
    concurrency integer NOT NULL,
    version text NOT NULL,
    heartbeat_interval_ms integer NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    stopping_at timestamp with time zone
);


--
-- Name: workers workers_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);


--
-- Name: TABLE workers; Type: ACL
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE courier.workers TO courier_worker;
GRANT ALL ON TABLE courier.workers TO courier_admin;
