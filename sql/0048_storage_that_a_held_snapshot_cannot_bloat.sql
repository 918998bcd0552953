-- Courier 0048: the queue's storage is reclaimed by TRUNCATE, which no snapshot holds back (issue 45).
--
-- A long transaction elsewhere (a report, an idle-in-transaction session, a standby's
-- feedback) keeps vacuum from removing the rows of jobs that have left the queue: the table
-- and its indexes grow with every job that passes, and claims walk ever more dead index
-- entries. So courier.jobs becomes a table partitioned by `slot`:
--
--   * courier.jobs_0 .. courier.jobs_3, a ring: a new job goes into the slot of its
--     transaction's start time (courier.job_slot_of(now()): 15 s per slot, 4 slots, so a
--     slot takes new jobs for 15 s once a minute);
--   * courier.jobs_parked (slot -1), the table as it was: the jobs waiting when this
--     migration ran, and those a slot held longer than its turn (a backoff, a job scheduled
--     ahead, a destination held back or a backlog older than half a minute), moved there by
--     courier.reclaim_jobs once, just before their slot takes new jobs again.
--
-- Workers call courier.reclaim_jobs every second: it truncates each slot other than the
-- current one whose rows have all left (a TRUNCATE frees the files whatever snapshot is held),
-- then moves what is still waiting in the slot that comes next. A job keeps its id, its
-- lease fence and its order ((priority, run_at, id) does not depend on the slot) through a
-- move, which is a delete and an insert in one statement: a claimer that reaches the old row
-- skips it, as it skips a row another claimer took.
--
-- A partitioned table's unique index must contain its partition key, so a role's unique keys
-- move into courier.job_unique_keys: a row trigger takes the key as a job is inserted (the row
-- is skipped when another waiting or running job of the role holds it, as `on conflict do
-- nothing` did) and gives it back when the job leaves.
--
-- The upgrade runs in the migration's transaction and holds courier.jobs exclusively for one
-- sequential read of it (the check that every existing row is in slot -1), then renames: no
-- job is copied and no index is built on the existing rows.

-- The ring's rule, one source: a slot per 15 s of transaction start, 4 slots.
create function courier.job_slot_period() returns interval
    language sql immutable parallel safe
    as $$ select interval '15 seconds' $$;
create function courier.job_slot_count() returns integer
    language sql immutable parallel safe
    as $$ select 4 $$;
-- Stable (date_part on a timestamptz is) and without a SET, so it is inlined into the column's
-- default; its names are qualified, as it runs with the inserting session's search_path.
create function courier.job_slot_of(p_at timestamptz) returns smallint
    language sql stable parallel safe
    as $$ select (pg_catalog.floor(pg_catalog.date_part('epoch', p_at)
                                   / pg_catalog.date_part('epoch', courier.job_slot_period()))::bigint
                  % courier.job_slot_count())::smallint $$;
comment on function courier.job_slot_of(timestamptz) is
    'The ring slot (partition courier.jobs_N) that takes the jobs of a transaction started at p_at.';
revoke all on function courier.job_slot_period(), courier.job_slot_count(), courier.job_slot_of(timestamptz) from public;
grant execute on function courier.job_slot_period(), courier.job_slot_count(), courier.job_slot_of(timestamptz)
    to courier_worker, courier_admin, courier_enqueue;

-- Unique keys, held while their job waits or runs.
create table courier.job_unique_keys (
    unique_scope text not null,
    unique_key   text not null,
    job_id       bigint not null,
    constraint job_unique_keys_pkey primary key (unique_scope, unique_key)
);
comment on table courier.job_unique_keys is
    'The unique keys of the waiting and running jobs, one per enqueuing role (unique_scope): taken by a job''s insert, given back when it leaves.';
grant select on courier.job_unique_keys to courier_worker, courier_admin;

lock table courier.jobs in access exclusive mode;
insert into courier.job_unique_keys (unique_scope, unique_key, job_id)
    select unique_scope, unique_key, id from courier.jobs where unique_key is not null;

-- The key is taken last of the insert triggers (they fire in name order). Taken by another job
-- of the role: skip the row. Taken by this very job (a move to jobs_parked): keep it.
create function courier.jobs_unique_key_take() returns trigger
    language plpgsql security definer
    set search_path to 'pg_catalog', 'pg_temp'
    as $$
begin
    insert into courier.job_unique_keys as k (unique_scope, unique_key, job_id)
    values (new.unique_scope, new.unique_key, new.id)
    on conflict (unique_scope, unique_key) do update set job_id = excluded.job_id
        where k.job_id = excluded.job_id;
    if not found then
        return null;
    end if;
    return new;
end
$$;
-- A job that left: its key is free, unless the job is still there (it was moved).
create function courier.jobs_unique_key_give_back() returns trigger
    language plpgsql security definer
    set search_path to 'pg_catalog', 'pg_temp'
    as $$
begin
    delete from courier.job_unique_keys k
    where k.unique_scope = old.unique_scope and k.unique_key = old.unique_key and k.job_id = old.id
      and not exists (select 1 from courier.jobs j where j.id = old.id);
    return null;
end
$$;
revoke all on function courier.jobs_unique_key_take(), courier.jobs_unique_key_give_back() from public;

-- The table as it was becomes the parked partition.
alter table courier.jobs add column slot smallint not null default -1;
alter table courier.jobs add constraint jobs_parked_slot_check check (slot = -1);
alter table courier.jobs rename to jobs_parked;
alter table courier.jobs_parked rename constraint jobs_pkey to jobs_parked_pkey;
alter index courier.jobs_unique_key_idx rename to jobs_parked_unique_key_idx;
alter index courier.jobs_destination_idx rename to jobs_parked_destination_idx;
alter index courier.jobs_fair_idx rename to jobs_parked_fair_idx;
alter index courier.jobs_fair_running_idx rename to jobs_parked_fair_running_idx;
alter index courier.jobs_gated_idx rename to jobs_parked_gated_idx;
alter index courier.jobs_gated_running_idx rename to jobs_parked_gated_running_idx;
alter index courier.jobs_held_idx rename to jobs_parked_held_idx;
alter index courier.jobs_runnable_idx rename to jobs_parked_runnable_idx;
alter index courier.jobs_running_idx rename to jobs_parked_running_idx;
drop trigger jobs_canonical_destination on courier.jobs_parked;
drop trigger jobs_enqueuer_destination_check on courier.jobs_parked;
drop trigger jobs_gate_new on courier.jobs_parked;
drop trigger jobs_trace_context on courier.jobs_parked;

create table courier.jobs (like courier.jobs_parked including defaults including constraints including comments)
    partition by list (slot);
-- The columns' comments now belong to the parent.
comment on column courier.jobs_parked.fairness_key is null;
comment on column courier.jobs_parked.lease_seq is null;
comment on column courier.jobs_parked.traceparent is null;
alter table only courier.jobs drop constraint jobs_parked_slot_check;
alter table courier.jobs alter column slot set default courier.job_slot_of(now());
-- As in the table before: checked for new rows, not proven for old ones.
alter table only courier.jobs drop constraint jobs_args_size_check;
alter table only courier.jobs drop constraint jobs_deadline_check;
alter table only courier.jobs drop constraint jobs_run_at_check;
alter table only courier.jobs add constraint jobs_args_size_check
    check (args is null or octet_length(args::text) <= 16777216) not valid;
alter table only courier.jobs add constraint jobs_deadline_check check (deadline is null or isfinite(deadline)) not valid;
alter table only courier.jobs add constraint jobs_run_at_check check (isfinite(run_at)) not valid;
comment on column courier.jobs.slot is
    'The partition the job is stored in: a ring slot (0..3, courier.job_slot_of) or -1 (courier.jobs_parked). Set by the default; do not write it.';

-- The id sequence goes on with the parent.
do $$
declare
    v_last bigint;
    v_called boolean;
begin
    select last_value, is_called into v_last, v_called from courier.jobs_id_seq;
    alter table courier.jobs_parked alter column id drop identity;
    alter table courier.jobs alter column id add generated always as identity (sequence name courier.jobs_id_seq);
    perform setval('courier.jobs_id_seq', v_last, v_called);
end
$$;
grant select, usage on sequence courier.jobs_id_seq to courier_worker;
grant all on sequence courier.jobs_id_seq to courier_admin;

-- The claim's indexes, partitioned: attaching jobs_parked makes its own indexes their parts (none is built).
create index jobs_destination_idx on courier.jobs (destination, held_since, gated, queue, priority, run_at, id)
    where state = 'available';
create index jobs_fair_idx on courier.jobs (queue, fairness_key, priority, run_at, id)
    where state = 'available' and held_since is null and not gated and fairness_key is not null;
create index jobs_fair_running_idx on courier.jobs (fairness_key) where state = 'running' and fairness_key is not null;
create index jobs_gated_idx on courier.jobs (destination, queue, priority, run_at, id)
    where state = 'available' and held_since is null and gated;
create index jobs_gated_running_idx on courier.jobs (destination) where state = 'running' and gated;
create index jobs_held_idx on courier.jobs (destination) where held_since is not null;
create index jobs_runnable_idx on courier.jobs (queue, priority, run_at, id)
    where state = 'available' and held_since is null and not gated and fairness_key is null;
create index jobs_running_idx on courier.jobs (leased_by) where state = 'running';

alter table courier.jobs attach partition courier.jobs_parked for values in (-1);
alter table courier.jobs_parked drop constraint jobs_parked_slot_check;

-- The ring: one partition courier.jobs_N per slot of courier.job_slot_count(), with the storage
-- options the table had (fillfactor and autovacuum's thresholds, now jobs_parked's). Each slot
-- also gets an index on id and one on the unique key (jobs_parked has its primary key and its
-- unique index: a partitioned index cannot take both kinds).
do $$
declare
    v_options text := (select array_to_string(c.reloptions, ', ') from pg_class c where c.oid = 'courier.jobs_parked'::regclass);
    v_table text;
begin
    for v_slot in 0 .. courier.job_slot_count() - 1 loop
        v_table := 'jobs_' || v_slot;
        execute format('create table courier.%I partition of courier.jobs for values in (%s) with (%s)', v_table, v_slot, v_options);
        execute format('create index %I on courier.%I (id)', v_table || '_id_idx', v_table);
        execute format('create index %I on courier.%I (unique_scope, unique_key) where unique_key is not null',
                       v_table || '_unique_key_idx', v_table);
    end loop;
end
$$;

grant select, insert, update, delete on courier.jobs to courier_worker;
grant all on courier.jobs to courier_admin;

-- The insert and delete triggers, on the parent (so on every partition).
create trigger jobs_canonical_destination before insert on courier.jobs for each row
    when (new.destination::text ~* '^https?://'
          and new.destination::text !~ '^https?://[a-z0-9_-]+(\.[a-z0-9_-]+)*:[1-9][0-9]{0,4}$')
    execute function courier.jobs_canonical_destination();
create trigger jobs_enqueuer_destination_check before insert on courier.jobs for each row
    when (not (pg_has_role(session_user, 'courier_worker', 'MEMBER') or pg_has_role(session_user, 'courier_admin', 'MEMBER')))
    execute function courier.check_enqueuer_destination();
create trigger jobs_gate_new before insert on courier.jobs for each row execute function courier.jobs_gate_new();
create trigger jobs_trace_context before insert on courier.jobs for each row
    when (new.traceparent is null and current_setting('courier.traceparent', true) <> '')
    execute function courier.jobs_trace_context();
create trigger jobs_unique_key before insert on courier.jobs for each row when (new.unique_key is not null)
    execute function courier.jobs_unique_key_take();
create trigger jobs_unique_key_give_back after delete on courier.jobs for each row when (old.unique_key is not null)
    execute function courier.jobs_unique_key_give_back();

-- The functions that return jobs rows were bound to the table's row type, which is now
-- jobs_parked's: each is created again from its own definition with courier.jobs' (same
-- columns), keeping its grants and comment.
do $$
declare
    f record;
    g record;
    v_path text := current_setting('search_path');
begin
    -- Definitions read with every name qualified, whatever the session's search_path.
    perform set_config('search_path', 'pg_catalog', true);
    for f in
        select p.oid::regprocedure::text as signature, pg_get_functiondef(p.oid) as definition, p.proacl,
               obj_description(p.oid, 'pg_proc') as remark
        from pg_proc p
        where p.prorettype = 'courier.jobs_parked'::regtype
           or 'courier.jobs_parked'::regtype = any (p.proallargtypes)
    loop
        execute 'drop function ' || f.signature;
        execute replace(f.definition, 'courier.jobs_parked', 'courier.jobs');
        execute 'revoke all on function ' || replace(f.signature, 'courier.jobs_parked', 'courier.jobs') || ' from public';
        for g in select a.grantee from aclexplode(f.proacl) a where a.privilege_type = 'EXECUTE' loop
            execute 'grant execute on function ' || replace(f.signature, 'courier.jobs_parked', 'courier.jobs')
                    || ' to ' || case when g.grantee = 0 then 'public' else quote_ident(g.grantee::regrole::text) end;
        end loop;
        if f.remark is not null then
            execute 'comment on function ' || replace(f.signature, 'courier.jobs_parked', 'courier.jobs')
                    || ' is ' || quote_literal(f.remark);
        end if;
    end loop;
    perform set_config('search_path', v_path, true);
end
$$;

-- Enqueue without `on conflict` (it needs a unique index on the table): the jobs_unique_key trigger
-- skips a row whose key another job of the role holds, and the function returns that job's id.
create or replace function courier.enqueue(url text, method text DEFAULT 'POST'::text, headers jsonb DEFAULT '{}'::jsonb, body text DEFAULT NULL::text, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000, expect_content_type text DEFAULT NULL::text, signing_secret text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text, fairness_key text DEFAULT NULL::text) RETURNS bigint
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
    if enqueue.traceparent is not null and not courier.is_traceparent(enqueue.traceparent) then
        raise exception 'courier.enqueue: traceparent %', courier.traceparent_rule()
            using errcode = '22023', column = 'traceparent';
    end if;
    if enqueue.tracestate is not null and enqueue.traceparent is null then
        raise exception 'courier.enqueue: tracestate needs a traceparent'
            using errcode = '22023', column = 'tracestate';
    end if;
    if enqueue.tracestate is not null and not courier.is_tracestate(enqueue.tracestate) then
        raise exception 'courier.enqueue: tracestate %', courier.tracestate_rule()
            using errcode = '22023', column = 'tracestate';
    end if;
    if enqueue.fairness_key is not null and not courier.is_fairness_key(enqueue.fairness_key) then
        raise exception 'courier.enqueue: fairness_key %', courier.fairness_key_rule()
            using errcode = '22023', column = 'fairness_key';
    end if;

    loop
        insert into courier.jobs (queue, priority, run_at, max_attempts, deadline, destination, method, url,
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, unique_key, unique_scope,
                                  signing_secret, held_since, traceparent, tracestate, fairness_key)
        values (enqueue.queue, enqueue.priority, coalesce(enqueue.run_at, now()), enqueue.max_attempts,
                enqueue.deadline, v_destination, v_method, enqueue.url, coalesce(enqueue.headers, '{}'),
                enqueue.body, enqueue.timeout_ms, lower(enqueue.expect_content_type), enqueue.idempotency_key,
                enqueue.unique_key, case when enqueue.unique_key is not null then session_user::text end, enqueue.signing_secret,
                -- A destination whose breaker is open: the job waits out of the runnable index.
                case when exists (select 1 from courier.breakers b
                                  where b.destination = v_destination and b.state <> 'closed') then now() end,
                -- NULL: courier.jobs_trace_context reads `set local courier.traceparent`, if any.
                enqueue.traceparent, nullif(enqueue.tracestate, ''), enqueue.fairness_key)
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

create or replace function courier.enqueue_job(kind text, args jsonb DEFAULT '{}'::jsonb, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000, fairness_key text DEFAULT NULL::text) RETURNS bigint
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
    if enqueue_job.fairness_key is not null and not courier.is_fairness_key(enqueue_job.fairness_key) then
        raise exception 'courier.enqueue_job: fairness_key %', courier.fairness_key_rule()
            using errcode = '22023', column = 'fairness_key';
    end if;
    loop
        insert into courier.jobs (kind, args, queue, priority, run_at, max_attempts, deadline, destination,
                                  idempotency_key, unique_key, unique_scope, timeout_ms, held_since, fairness_key)
        values (enqueue_job.kind, coalesce(enqueue_job.args, '{}'), enqueue_job.queue, coalesce(enqueue_job.priority, 0),
                coalesce(enqueue_job.run_at, now()), enqueue_job.max_attempts, enqueue_job.deadline,
                coalesce(enqueue_job.destination, 'job:' || enqueue_job.kind), enqueue_job.idempotency_key,
                enqueue_job.unique_key, case when enqueue_job.unique_key is not null then session_user::text end,
                coalesce(enqueue_job.timeout_ms, 30000),
                case when exists (select 1 from courier.breakers b
                                  where b.destination = coalesce(enqueue_job.destination, 'job:' || enqueue_job.kind)
                                    and b.state <> 'closed') then now() end,
                enqueue_job.fairness_key)
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

-- Reclaims the ring; every worker calls it each second, one at a time ('reclaim!' in ASCII is the
-- lock's key). First each slot other than the current one whose rows have all left is
-- truncated: looked at without a lock, then again under an ACCESS EXCLUSIVE lock, which waits
-- for no longer than lock_timeout (a statement still using the slot, or an insert not yet
-- committed, puts it off to the next call). Then what still waits in the slot that takes new
-- jobs next (its turn ended half a minute ago) moves to jobs_parked, p_move_limit jobs a call:
-- running jobs stay until they finish. Returns the slots truncated and the jobs moved. p_now stands
-- for the clock in tests; either choice is safe (only a slot without rows is truncated, and a move
-- changes nothing a claim sees).
create function courier.reclaim_jobs(p_move_limit integer default 5000, p_now timestamptz default now(),
                                     out truncated text[], out moved integer)
    language plpgsql security definer
    set search_path to 'pg_catalog', 'pg_temp'
    set lock_timeout to '50ms'
    as $$
declare
    v_current smallint := courier.job_slot_of(p_now);
    v_next    smallint := courier.job_slot_of(p_now + courier.job_slot_period());
    v_slot    smallint;
    v_table   regclass;
begin
    truncated := '{}';
    moved := 0;
    if not pg_try_advisory_xact_lock(8243104010113477921) then
        return;
    end if;
    for v_slot in 0 .. courier.job_slot_count() - 1 loop
        continue when v_slot = v_current;
        v_table := format('courier.jobs_%s', v_slot)::regclass;
        continue when pg_relation_size(v_table) = 0 or exists (select 1 from courier.jobs j where j.slot = v_slot);
        begin
            execute format('lock table %s in access exclusive mode', v_table);
            if not exists (select 1 from courier.jobs j where j.slot = v_slot) then
                execute format('truncate %s', v_table);
                truncated := truncated || v_table::text;
            end if;
        exception when lock_not_available then
            null;
        end;
    end loop;
    with picked as (
        select j.id from courier.jobs j
        where j.slot = v_next and j.state = 'available'
        limit greatest(p_move_limit, 1)
        for update skip locked
    ), gone as (
        delete from courier.jobs j using picked p
        where j.slot = v_next and j.id = p.id
        returning j.*
    )
    insert into courier.jobs overriding system value
    select (jsonb_populate_record(null::courier.jobs, to_jsonb(g) || jsonb_build_object('slot', -1))).*
    from gone g;
    get diagnostics moved = row_count;
end
$$;
comment on function courier.reclaim_jobs(integer, timestamptz) is
    'Truncates the ring slots of courier.jobs whose jobs have all left, and moves what still waits in the next slot to courier.jobs_parked.';
revoke all on function courier.reclaim_jobs(integer, timestamptz) from public;
grant execute on function courier.reclaim_jobs(integer, timestamptz) to courier_worker, courier_admin;

-- A partition that was empty when a statement was planned would be read by a sequential scan
-- (the cheapest way through no pages) in the plan PL/pgSQL caches for the session, and the
-- ring's slots go from empty to full every minute: the claims that did not forbid those scans
-- yet forbid them now, as courier.claim and the acknowledgements do.
alter function courier.claim_spread(text, integer, integer, uuid, integer, text, text[], integer)
    set enable_seqscan = off set enable_bitmapscan = off;
alter function courier.claim_spread_round(text, integer, integer, uuid, integer, text, text[], integer)
    set enable_seqscan = off set enable_bitmapscan = off;
alter function courier.claim_gated(text, integer, uuid, integer) set enable_seqscan = off set enable_bitmapscan = off;
alter function courier.claim_fair(text, integer, uuid, integer, text, integer, integer, integer, text[], integer[], bigint[], bigint[])
    set enable_seqscan = off set enable_bitmapscan = off;
