-- Courier 0008: signed webhooks (the Standard Webhooks scheme).
-- A job may name a signing secret; the worker resolves the NAME at send time (from
-- COURIER_SECRET_<NAME> or its secrets directory), exactly as it resolves header
-- secrets, and signs each attempt with webhook-id, webhook-timestamp and
-- webhook-signature. Only names are stored, never values.
-- A destination may name a default secret in courier.destinations; a job's own wins.
-- Workers read the destination's default when they claim a job, so a change applies
-- to the next claim, with no restart and no cache to go stale.

-- The rule for a secret name, written once: letters, digits, _ . - (1 to 128). The same
-- rule as header secret references in the Swift EnqueueRequest validation. Not STRICT,
-- so PostgreSQL inlines it into the domain check (NULL passes, as in any CHECK).
create function courier.is_secret_name(name text) returns boolean
language sql immutable parallel safe as $$
    select name !~ '[^A-Za-z0-9_.-]' and length(name) between 1 and 128
$$;

create domain courier.secret_name as text
    constraint jobs_signing_secret_check check (courier.is_secret_name(value));

-- The job's own signing secret name, carried wherever the job goes (dead letters,
-- the success archive, replays).
alter table courier.jobs add column signing_secret courier.secret_name;
alter table courier.dead_letters add column signing_secret text;
alter table courier.completed_jobs add column signing_secret text;

-- One row per destination with a policy of its own. NULL in a policy column means
-- "no policy": every column but the key is optional, so later policies (concurrency
-- cap, rate, burst, slow start, retry budget, paused) are added as nullable columns.
create table courier.destinations (
    destination    courier.destination_key primary key,
    -- The default signing secret NAME for the destination's jobs that name none.
    signing_secret courier.secret_name,
    created_at     timestamptz not null default now(),
    updated_at     timestamptz not null default now()
);

-- Sets a destination's policy fields that are given (not NULL) and keeps the others;
-- a destination without a row gets one. destination is normalised as enqueue derives
-- destinations: a URL becomes scheme://host:port, anything else is kept as written.
-- Bad input raises SQLSTATE 22023 naming the parameter. Returns the row afterwards.
create function courier.destination_set(
    destination    text,
    signing_secret text default null
) returns setof courier.destinations
language plpgsql volatile as $$
#variable_conflict use_column
declare
    v_destination text := coalesce(courier.destination_of(destination_set.destination), destination_set.destination);
begin
    if v_destination is null or length(v_destination) not between 1 and 300 then
        raise exception 'courier.destination_set: destination must be 1 to 300 characters'
            using errcode = '22023', column = 'destination';
    end if;
    if destination_set.signing_secret is not null and not courier.is_secret_name(destination_set.signing_secret) then
        raise exception 'courier.destination_set: signing_secret must be a secret name: 1 to 128 letters, digits, _ . -'
            using errcode = '22023', column = 'signing_secret';
    end if;
    return query
    insert into courier.destinations as d (destination, signing_secret)
    values (v_destination, destination_set.signing_secret)
    on conflict (destination) do update
    set signing_secret = coalesce(excluded.signing_secret, d.signing_secret),
        updated_at = now()
    returning d.*;
end
$$;

-- Deletes a destination's row (every policy of it). Returns whether there was one.
create function courier.destination_reset(destination text) returns boolean
language sql volatile as $$
    with gone as (
        delete from courier.destinations d
        where d.destination = coalesce(courier.destination_of(destination_reset.destination), destination_reset.destination)
        returning 1
    )
    select exists (select 1 from gone)
$$;

-- PUBLIC may execute no Courier function (0006). Per-schema default privileges cannot
-- take away PostgreSQL's global default EXECUTE for PUBLIC, so every new function is
-- revoked here by name.
revoke execute on function courier.is_secret_name(text), courier.destination_set(text, text),
    courier.destination_reset(text) from public;

-- Destination policy is the operators' (courier_admin, jobctl): workers only read it,
-- as they read courier.queue_settings.
revoke insert, update, delete, truncate on courier.destinations from courier_worker;
revoke execute on function courier.destination_set(text, text), courier.destination_reset(text) from courier_worker;

-- courier.enqueue gains signing_secret. The old signature is dropped, so exactly one
-- courier.enqueue exists; a later migration that adds parameters drops this one.
drop function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text);

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
    expect_content_type text        default null,
    signing_secret      text        default null
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
    if enqueue.signing_secret is not null and not courier.is_secret_name(enqueue.signing_secret) then
        raise exception 'courier.enqueue: signing_secret must be a secret name: 1 to 128 letters, digits, _ . -'
            using errcode = '22023', column = 'signing_secret';
    end if;

    loop
        insert into courier.jobs (queue, priority, run_at, max_attempts, deadline, destination, method, url,
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, unique_key, signing_secret,
                                  held_since)
        values (enqueue.queue, enqueue.priority, coalesce(enqueue.run_at, now()), enqueue.max_attempts,
                enqueue.deadline, v_destination, v_method, enqueue.url, coalesce(enqueue.headers, '{}'),
                enqueue.body, enqueue.timeout_ms, lower(enqueue.expect_content_type), enqueue.idempotency_key,
                enqueue.unique_key, enqueue.signing_secret,
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

-- As 0006 requires of every courier.enqueue: run as the owner with a fixed search_path,
-- callable by courier_enqueue and courier_worker.
alter function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text)
    security definer set search_path = pg_catalog, pg_temp;
revoke execute on function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text) from public;
grant execute on function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text)
    to courier_enqueue, courier_worker;

-- Replays keep the job's signing secret name, as they keep its idempotency key.
create or replace function courier.replay_dead_letters(
    ids             bigint[]    default null,
    reasons         text[]      default null,
    destinations    text[]      default null,
    queues          text[]      default null,
    classes         text[]      default null,
    statuses        int[]       default null,
    since           timestamptz default null,
    until           timestamptz default null,
    rate_per_second float8      default null,
    start_at        timestamptz default now(),
    start_index     bigint      default 0,
    max_rows        int         default null,
    force           boolean     default false,
    dry_run         boolean     default false,
    replayed_before timestamptz default null
) returns table (dead_letter_id bigint, new_job_id bigint, destination text, run_at timestamptz)
language plpgsql volatile as $$
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
