-- Courier 0001: the core schema.
-- courier.jobs holds only waiting and running jobs; a job leaves it in the same
-- transaction that records its success, its dead letter or its cancellation.
-- Every CHECK is named <table>_<field>_check so a violation names the field.

create schema if not exists courier;

-- Value formats are domains rather than table CHECKs: PostgreSQL checks a domain only
-- when a value is stored in the column, but re-evaluates every table CHECK on every
-- UPDATE of the row, and claims and acknowledgements update each job several times.
-- The constraints keep the <table>_<field>_check names, so a violation still names the field.
create domain courier.job_kind as text
    constraint jobs_kind_check check (value ~ '^[a-z][a-z0-9_.-]{0,63}$');
create domain courier.queue_name as text
    constraint jobs_queue_check check (value ~ '^[A-Za-z0-9_.:-]{1,64}$');
create domain courier.destination_key as text
    constraint jobs_destination_check check (length(value) between 1 and 300);
create domain courier.http_method as text
    constraint jobs_method_check check (value ~ '^[A-Z][A-Z0-9_-]{0,19}$');
create domain courier.http_url as text
    constraint jobs_url_check check (value ~* '^https?://[^/?#]+' and length(value) <= 8192);
create domain courier.header_map as jsonb
    constraint jobs_headers_check check (jsonb_typeof(value) = 'object');
create domain courier.request_body as text
    constraint jobs_body_check check (octet_length(value) <= 16777216);
create domain courier.media_type as text
    constraint jobs_expect_content_type_check check (value ~* '^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+*-]+$');
create domain courier.idempotency_key as text
    constraint jobs_idempotency_key_check check (length(value) between 1 and 255);
create domain courier.unique_key as text
    constraint jobs_unique_key_check check (length(value) between 1 and 255);

create table courier.jobs (
    id                  bigint generated always as identity primary key,
    kind                courier.job_kind   not null default 'http',
    queue               courier.queue_name not null default 'default',
    state               text        not null default 'available',
    priority            int         not null default 0,
    run_at              timestamptz not null default now(),
    attempt             int         not null default 0,
    max_attempts        int         not null default 5,
    deadline            timestamptz,
    destination         courier.destination_key not null,
    method              courier.http_method not null default 'POST',
    url                 courier.http_url,             -- required for kind 'http'
    headers             courier.header_map not null default '{}',
    body                courier.request_body,
    timeout_ms          int         not null default 30000,
    expect_content_type courier.media_type,
    idempotency_key     courier.idempotency_key,
    unique_key          courier.unique_key,
    args                jsonb,                        -- arguments of job kinds other than 'http'
    errors              jsonb       not null default '[]',
    last_delay_ms       bigint,                       -- the previous retry delay (decorrelated jitter)
    leased_by           uuid,                         -- the worker holding the lease
    lease_expires_at    timestamptz,
    attempted_at        timestamptz,                  -- start of the current or last attempt
    cancel_requested_at timestamptz,
    -- Set while the destination's circuit breaker is open: the job is out of the
    -- runnable index (so claims never scan it) until the breaker closes. run_at is
    -- left alone, so schedules and replay pacing survive an outage.
    held_since          timestamptz,
    created_at          timestamptz not null default now(),

    constraint jobs_state_check        check (state in ('available', 'running')),
    constraint jobs_priority_check     check (priority between -32768 and 32767),
    constraint jobs_attempt_check      check (attempt >= 0),
    constraint jobs_max_attempts_check check (max_attempts between 1 and 1000),
    constraint jobs_url_required_check check (url is not null or kind <> 'http'),
    constraint jobs_timeout_ms_check   check (timeout_ms between 1 and 3600000),
    constraint jobs_running_lease_check
        check (state <> 'running' or (leased_by is not null and lease_expires_at is not null))
) with (
    -- A queue table churns: vacuum it early so dead tuples do not slow claims.
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05
);

-- Only runnable jobs: finished rows never exist here, and neither running jobs nor jobs
-- held back by an open breaker are scanned by claims.
create index jobs_runnable_idx on courier.jobs (queue, priority, run_at, id)
    where state = 'available' and held_since is null;
-- Held jobs, for releasing them when their breaker closes.
create index jobs_held_idx on courier.jobs (destination) where held_since is not null;
-- Rescue of expired leases scans only running jobs.
create index jobs_lease_idx on courier.jobs (lease_expires_at) where state = 'running';
-- Holding back or counting one destination's waiting jobs.
create index jobs_destination_idx on courier.jobs (destination) where state = 'available';
-- unique_key: at most one waiting or running job per key.
create unique index jobs_unique_key_idx on courier.jobs (unique_key) where unique_key is not null;

create table courier.dead_letters (
    id                  bigint generated always as identity primary key,
    job_id              bigint      not null,
    reason              text        not null,
    kind                text        not null,
    queue               text        not null,
    priority            int         not null,
    destination         text        not null,
    method              text        not null,
    url                 text,
    headers             jsonb       not null,
    body                text,
    timeout_ms          int         not null,
    expect_content_type text,
    idempotency_key     text,
    unique_key          text,
    args                jsonb,
    max_attempts        int         not null,
    deadline            timestamptz,
    attempt             int         not null,
    errors              jsonb       not null default '[]',
    last_class          text,
    last_status         int,
    worker              text,
    created_at          timestamptz not null,         -- when the original job was enqueued
    failed_at           timestamptz not null default now(),
    replayed_at         timestamptz,
    replay_job_id       bigint,
    constraint dead_letters_reason_check
        check (reason in ('permanent', 'invalid_response', 'exhausted', 'deadline', 'ambiguous', 'cancelled'))
);
create index dead_letters_failed_at_idx on courier.dead_letters (failed_at);
create index dead_letters_destination_idx on courier.dead_letters (destination, failed_at);
create index dead_letters_unreplayed_idx on courier.dead_letters (id) where replayed_at is null;

-- One row per destination that has ever needed one. No row means closed.
create table courier.breakers (
    destination          text primary key,
    state                text        not null default 'closed',
    changed_at           timestamptz not null default now(),
    consecutive_failures int         not null default 0,
    window_started_at    timestamptz not null default now(),
    window_failures      int         not null default 0,
    window_successes     int         not null default 0,
    open_until           timestamptz,                 -- open: when a probe may start
    cooldown_ms          bigint      not null default 0,
    probe_owner          uuid,
    probe_lease_until    timestamptz,
    generation           bigint      not null default 0,  -- bumped on every transition; fences probe results
    forced               boolean     not null default false,
    not_before           timestamptz,                 -- Retry-After: no request before this time
    constraint breakers_state_check check (state in ('closed', 'open', 'half_open'))
);

-- Derives scheme://host:port from an http(s) URL (lower-cased, default port filled in).
-- NULL for anything else, including URLs with credentials (user:pass@host), which are refused.
create function courier.destination_of(url text) returns text
language sql immutable strict parallel safe as $$
    select lower(m[1]) || '://' || lower(m[2]) || ':' ||
           coalesce(m[3], case lower(m[1]) when 'https' then '443' else '80' end)
    from regexp_match(url, '^(https?)://(\[[0-9A-Fa-f:.]+\]|[^:/?#\[\]@]+)(?::([0-9]{1,5}))?(?:[/?#]|$)', 'i') as m
$$;

-- The SQL way to enqueue. Usable inside the caller's transaction: the job becomes
-- visible, and workers are notified, when that transaction commits.
-- Bad input raises SQLSTATE 22023 with a message that names the parameter.
-- idempotency_key defaults to a fresh UUID; pass NULL explicitly to send no key.
create function courier.enqueue(
    url                 text,
    method              text        default 'POST',
    headers             jsonb       default '{}',
    body                text        default null,
    queue               text        default 'default',
    priority            int         default 0,
    run_at              timestamptz default now(),
    max_attempts        int         default 5,
    deadline            timestamptz default null,
    idempotency_key     text        default gen_random_uuid()::text,
    unique_key          text        default null,
    destination         text        default null,
    timeout_ms          int         default 30000,
    expect_content_type text        default null
) returns bigint
language plpgsql volatile as $$
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

    loop
        insert into courier.jobs (queue, priority, run_at, max_attempts, deadline, destination, method, url,
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, unique_key, held_since)
        values (enqueue.queue, enqueue.priority, coalesce(enqueue.run_at, now()), enqueue.max_attempts,
                enqueue.deadline, v_destination, v_method, enqueue.url, coalesce(enqueue.headers, '{}'),
                enqueue.body, enqueue.timeout_ms, lower(enqueue.expect_content_type), enqueue.idempotency_key,
                enqueue.unique_key,
                -- A destination whose breaker is open: the job waits out of the runnable index.
                case when exists (select 1 from courier.breakers b
                                  where b.destination = v_destination and b.state <> 'closed') then now() end)
        on conflict (unique_key) where unique_key is not null do nothing
        returning id into v_id;
        exit when v_id is not null;
        -- Another waiting or running job holds the key: return its id. If it left the
        -- queue between our insert and this read, try the insert again.
        select j.id into v_id from courier.jobs j where j.unique_key = enqueue.unique_key;
        exit when v_id is not null;
    end loop;

    perform pg_notify('courier_jobs', enqueue.queue);
    return v_id;
end
$$;

-- Succeeded jobs, kept for a retention period so `jobctl show` can still report them.
-- Written by the acknowledging statement in the same transaction that deletes the job.
create table courier.completed_jobs (
    id              bigint primary key,
    kind            text        not null,
    queue           text        not null,
    destination     text        not null,
    method          text        not null,
    url             text,
    attempt         int         not null,
    status          int,
    duration_ms     int,
    idempotency_key text,
    errors          jsonb       not null default '[]',
    worker          uuid,
    created_at      timestamptz not null,
    finished_at     timestamptz not null default now()
);
create index completed_jobs_finished_at_idx on courier.completed_jobs (finished_at);
