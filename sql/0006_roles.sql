-- Courier 0006: database roles and grants.
--
-- Three NOLOGIN group roles; deployers GRANT them to their own login roles:
--   courier_enqueue  may only call courier.enqueue and courier.enqueue_job. Both run
--                    as their owner (SECURITY DEFINER, with a fixed search_path), so
--                    the role holds no table privilege: it can neither read nor
--                    change courier.jobs directly.
--   courier_worker   what jobworker needs: read and write the queue tables, call
--                    the breaker and statistics functions, LISTEN.
--   courier_admin    everything in the schema, for jobctl (replay, purge, breaker
--                    commands, queue settings).
-- Example:
--   create role app_writer login password '...';   grant courier_enqueue to app_writer;
--   create role courier_w  login password '...';   grant courier_worker  to courier_w;
--   create role ops        login password '...';   grant courier_admin   to ops;
-- Run migrations (jobctl migrate) as the schema's owner, not as one of these roles.
--
-- Roles belong to the whole cluster, grants to this database. The roles are created
-- only when missing; that needs CREATEROLE (or a DBA who creates them beforehand).
-- Later migrations that replace courier.enqueue or courier.enqueue_job must keep
-- SECURITY DEFINER and the search_path setting.

do $$
declare
    v_role text;
    v_can_create boolean;
begin
    select rolsuper or rolcreaterole into v_can_create from pg_catalog.pg_roles where rolname = current_user;
    foreach v_role in array array['courier_enqueue', 'courier_worker', 'courier_admin'] loop
        continue when exists (select 1 from pg_catalog.pg_roles where rolname = v_role);
        if not v_can_create then
            raise exception 'courier 0006: role % does not exist and % may not create roles', v_role, current_user
                using hint = format('Have a DBA run: CREATE ROLE %I NOLOGIN; then migrate again.', v_role);
        end if;
        begin
            execute format('create role %I nologin', v_role);
        exception when duplicate_object or unique_violation then
            null;  -- another database's migration created it at the same moment
        end;
    end loop;
end
$$;

-- Nobody but the owner may call a Courier function unless granted below.
revoke execute on all functions in schema courier from public;

-- The enqueue functions run with their owner's rights and a search_path that
-- callers cannot change; courier_enqueue may call them and nothing else.
-- courier_worker may call them too (a handler may enqueue follow-up work), and the
-- breaker and statistics functions. (Functions are found by name, so every
-- overload is covered.)
grant usage on schema courier to courier_enqueue, courier_worker;
do $$
declare
    v_function regprocedure;
    v_name text;
begin
    for v_function, v_name in
        select p.oid::regprocedure, p.proname from pg_catalog.pg_proc p
        where p.pronamespace = 'courier'::regnamespace
    loop
        if v_name in ('enqueue', 'enqueue_job') then
            execute format('alter function %s security definer set search_path = pg_catalog, pg_temp', v_function);
            execute format('grant execute on function %s to courier_enqueue, courier_worker', v_function);
        elsif v_name = 'destination_of' or v_name like 'attempt\_stats\_%'
              or (v_name like 'breaker\_%' and v_name <> 'breaker_force') then  -- forcing a breaker is for operators
            execute format('grant execute on function %s to courier_worker', v_function);
        end if;
    end loop;
end
$$;

-- courier_worker: the tables a worker reads and writes.
grant select, insert, update, delete on courier.jobs, courier.completed_jobs, courier.dead_letters, courier.breakers,
    courier.breaker_events, courier.workers, courier.attempt_stats to courier_worker;
grant select on courier.queue_settings, courier.schema_migrations to courier_worker;
grant usage, select on all sequences in schema courier to courier_worker;

-- courier_admin: everything in the schema.
grant usage on schema courier to courier_admin;
grant all privileges on all tables in schema courier to courier_admin;
grant all privileges on all sequences in schema courier to courier_admin;
grant execute on all functions in schema courier to courier_admin;

-- Objects that later migrations create (as the same migrating role) get the same
-- treatment: no EXECUTE for PUBLIC; everything for courier_admin; tables, sequences
-- and functions for courier_worker. courier_enqueue never gains anything by default.
alter default privileges in schema courier revoke execute on functions from public;
alter default privileges in schema courier grant all privileges on tables to courier_admin;
alter default privileges in schema courier grant all privileges on sequences to courier_admin;
alter default privileges in schema courier grant execute on functions to courier_admin;
alter default privileges in schema courier grant select, insert, update, delete on tables to courier_worker;
alter default privileges in schema courier grant usage, select on sequences to courier_worker;
alter default privileges in schema courier grant execute on functions to courier_worker;
