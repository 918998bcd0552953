-- Courier 0021: unique_key is unique per enqueuing role, not across all of them.
--
-- A unique_key used to be one namespace for every caller, so enqueue told any caller
-- whether another caller's key was in use, and returned that job's id (issue 18, item
-- 12: an enqueuer could probe for other enqueuers' work). Keys are now scoped by the
-- role that logged in (session_user; the enqueue functions run as their owner, so
-- current_user would be the owner for everyone): one role's key never matches, reveals
-- or blocks another role's. Jobs enqueued before this migration get an empty scope and
-- match no new enqueue. courier.enqueue and courier.enqueue_job are restated whole with
-- the scope (defaults as 0015 left them: max_attempts 25); nothing else in them changes.

alter table courier.jobs add column unique_scope text;
update courier.jobs set unique_scope = '' where unique_key is not null;
alter table courier.jobs add constraint jobs_unique_scope_check
    check ((unique_key is null) = (unique_scope is null));

drop index courier.jobs_unique_key_idx;
-- unique_key: at most one waiting or running job per key and enqueuing role.
create unique index jobs_unique_key_idx on courier.jobs (unique_scope, unique_key) where unique_key is not null;

create or replace function courier.enqueue(url text, method text DEFAULT 'POST'::text, headers jsonb DEFAULT '{}'::jsonb, body text DEFAULT NULL::text, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000, expect_content_type text DEFAULT NULL::text, signing_secret text DEFAULT NULL::text)
returns bigint
language plpgsql security definer set search_path = pg_catalog, pg_temp as $function$
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

    perform pg_notify('courier_jobs', enqueue.queue);
    return v_id;
end
$function$;

create or replace function courier.enqueue_job(kind text, args jsonb DEFAULT '{}'::jsonb, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000)
returns bigint
language plpgsql security definer set search_path = pg_catalog, pg_temp as $function$
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
$function$;
