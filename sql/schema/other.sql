-- other.sql: what belongs to no family: courier.schema_migrations, the ledger of applied migrations
-- (written by jobctl migrate), and any object the mapping in scripts/schema.py does not name yet
-- (the generator warns about each; add it to FAMILIES there).
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Name: schema_migrations; Type: TABLE
--

CREATE TABLE courier.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    checksum text
);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT
--

ALTER TABLE ONLY courier.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: TABLE schema_migrations; Type: ACL
--

GRANT SELECT ON TABLE courier.schema_migrations TO courier_worker;
GRANT ALL ON TABLE courier.schema_migrations TO courier_admin;
