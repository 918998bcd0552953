-- roles.sql: the courier schema itself, the group roles its grants name (created by migration 0006
-- when missing; roles belong to the whole cluster), who may use the schema, and the default
-- privileges objects created later receive. Each object's own grants sit beside it in its family's
-- file.
--
-- Generated, do not edit: made by scripts/schema.sh from a database migrated through
-- 0038_keeper_and_prober_read_only_what_holds_back.sql.
-- To change the schema, add a migration to sql/, then regenerate with: scripts/schema.sh
-- For reading only: jobctl migrate builds the schema from sql/NNNN_*.sql; this file is never applied.

--
-- Group roles (cluster-wide; from pg_roles, not pg_dump)
--

CREATE ROLE courier_admin;
ALTER ROLE courier_admin WITH NOSUPERUSER INHERIT NOCREATEROLE NOCREATEDB NOLOGIN NOREPLICATION NOBYPASSRLS;
CREATE ROLE courier_enqueue;
ALTER ROLE courier_enqueue WITH NOSUPERUSER INHERIT NOCREATEROLE NOCREATEDB NOLOGIN NOREPLICATION NOBYPASSRLS;
CREATE ROLE courier_worker;
ALTER ROLE courier_worker WITH NOSUPERUSER INHERIT NOCREATEROLE NOCREATEDB NOLOGIN NOREPLICATION NOBYPASSRLS;


--
-- Name: courier; Type: SCHEMA
--

CREATE SCHEMA courier;


--
-- Name: SCHEMA courier; Type: ACL
--

GRANT USAGE ON SCHEMA courier TO courier_enqueue;
GRANT USAGE ON SCHEMA courier TO courier_worker;
GRANT USAGE ON SCHEMA courier TO courier_admin;


--
-- Name: DEFAULT PRIVILEGES FOR FUNCTIONS; Type: DEFAULT ACL
--

ALTER DEFAULT PRIVILEGES FOR ROLE courier IN SCHEMA courier GRANT ALL ON FUNCTIONS  TO courier_worker;
ALTER DEFAULT PRIVILEGES FOR ROLE courier IN SCHEMA courier GRANT ALL ON FUNCTIONS  TO courier_admin;


--
-- Name: DEFAULT PRIVILEGES FOR SEQUENCES; Type: DEFAULT ACL
--

ALTER DEFAULT PRIVILEGES FOR ROLE courier IN SCHEMA courier GRANT SELECT,USAGE ON SEQUENCES  TO courier_worker;
ALTER DEFAULT PRIVILEGES FOR ROLE courier IN SCHEMA courier GRANT ALL ON SEQUENCES  TO courier_admin;


--
-- Name: DEFAULT PRIVILEGES FOR TABLES; Type: DEFAULT ACL
--

ALTER DEFAULT PRIVILEGES FOR ROLE courier IN SCHEMA courier GRANT SELECT,INSERT,DELETE,UPDATE ON TABLES  TO courier_worker;
ALTER DEFAULT PRIVILEGES FOR ROLE courier IN SCHEMA courier GRANT ALL ON TABLES  TO courier_admin;
