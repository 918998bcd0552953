-- Courier 0044: W3C trace context captured at enqueue, kept through retries and replays, and
-- an opt-in per destination to send it on (issue 44).
--
--   * courier.jobs.traceparent / tracestate (domains courier.traceparent, courier.tracestate,
--     checked by courier.is_traceparent and courier.is_tracestate: the W3C Trace Context rules,
--     the same as Swift's TraceContext) hold the context the enqueuing application was in.
--     courier.dead_letters keeps both, so a replay carries them on, and a retry is the same row.
--   * courier.enqueue(..., traceparent => ..., tracestate => ...) takes them, refusing bad values
--     with 22023 naming the field. Callers that cannot pass them per call (an ORM's INSERT, a
--     COPY, enqueue_job) say `set local courier.traceparent = '00-...'` (and courier.tracestate)
--     in the enqueuing transaction: the BEFORE INSERT trigger jobs_trace_context copies them into
--     a row that has no traceparent of its own. Its WHEN is one GUC lookup per row and false
--     unless the setting is there, so the enqueue paths pay nothing more (bench/notes.md).
--   * courier.destinations.propagate_trace (courier.destination_set(..., propagate_trace => ...),
--     `jobctl destination set D --propagate-trace`): the worker sends `traceparent` and
--     `tracestate` on that destination's requests. Off by default. Workers read the destinations
--     that opted in every 10 s with the queue settings (courier.destinations_propagating_trace
--     is the partial index), so the claim reads nothing more per job.
-- The acknowledgement functions are replaced with the same bodies plus the two columns in their
-- dead-letter inserts; their pre-0039 overloads (attempt-fenced, kept for rolling updates) are
-- left as they are: a dead letter written by such a worker keeps no trace context.

create function courier.is_traceparent(value text) returns boolean
    language sql immutable strict parallel safe
    as $$
    -- version-traceid-parentid-flags, lower-case hex; version ff is invalid, version 00 is exactly
    -- 55 characters, a later version may add fields after a '-'; ids not all zero.
    select value ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[\x21-\x7e]*)?$'
       and length(value) <= 256
       and left(value, 2) <> 'ff'
       and (left(value, 2) <> '00' or length(value) = 55)
       and substr(value, 4, 32) <> '00000000000000000000000000000000'
       and substr(value, 37, 16) <> '0000000000000000'
$$;

create function courier.is_tracestate(value text) returns boolean
    language sql immutable strict parallel safe
    as $$
    -- At most 512 characters and 32 list members, each key=value (empty members are allowed),
    -- separated by commas with optional spaces or tabs around them.
    select length(value) <= 512
       and (select count(*) filter (where m <> '') <= 32
                   and coalesce(bool_and(m = ''
                       or m ~ '^([a-z][a-z0-9_*/-]{0,255}|[a-z0-9][a-z0-9_*/-]{0,240}@[a-z][a-z0-9_*/-]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$'),
                       true)
            from unnest(string_to_array(value, ',')) as u(x), btrim(u.x, E' \t') as m)
$$;

-- The rules in words, for the errors of every door that checks in SQL.
create function courier.traceparent_rule() returns text
    language sql immutable parallel safe
    as $$ select 'must be a W3C traceparent such as 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>: lower-case hex, ids not all zero, version not ff' $$;

create function courier.tracestate_rule() returns text
    language sql immutable parallel safe
    as $$ select 'must be a W3C tracestate: at most 32 comma-separated key=value members and 512 characters' $$;

revoke all on function courier.is_traceparent(text), courier.is_tracestate(text),
    courier.traceparent_rule(), courier.tracestate_rule() from public;
grant execute on function courier.is_traceparent(text), courier.is_tracestate(text),
    courier.traceparent_rule(), courier.tracestate_rule() to courier_worker, courier_admin;

create domain courier.traceparent as text
    constraint jobs_traceparent_check check (courier.is_traceparent(value));
create domain courier.tracestate as text
    constraint jobs_tracestate_check check (courier.is_tracestate(value));

alter table courier.jobs
    add column traceparent courier.traceparent,
    add column tracestate courier.tracestate;
alter table courier.dead_letters
    add column traceparent text,
    add column tracestate text;
alter table courier.destinations
    add column propagate_trace boolean not null default false;
create index destinations_propagating_trace_idx on courier.destinations (destination) where propagate_trace;

comment on column courier.jobs.traceparent is
    'The W3C traceparent of the enqueuing application''s span: every attempt''s span links to it (or is its child).';

-- `set local courier.traceparent` (and courier.tracestate) for rows inserted without a traceparent.
create function courier.jobs_trace_context() returns trigger
    language plpgsql
    set search_path = pg_catalog, pg_temp
    as $$
declare
    v_parent text := current_setting('courier.traceparent', true);
    v_state  text := nullif(btrim(current_setting('courier.tracestate', true), E' \t'), '');
begin
    if not courier.is_traceparent(v_parent) then
        raise exception 'courier.traceparent (set local courier.traceparent): traceparent %', courier.traceparent_rule()
            using errcode = '22023', column = 'traceparent';
    end if;
    if v_state is not null and not courier.is_tracestate(v_state) then
        raise exception 'courier.tracestate (set local courier.tracestate): tracestate %', courier.tracestate_rule()
            using errcode = '22023', column = 'tracestate';
    end if;
    new.traceparent := v_parent;
    new.tracestate := coalesce(new.tracestate, v_state);
    return new;
end
$$;

revoke all on function courier.jobs_trace_context() from public;

-- After the other BEFORE INSERT triggers (they fire in name order); false for a row that has its
-- own traceparent or a transaction without the setting.
create trigger jobs_trace_context before insert on courier.jobs
    for each row
    when (new.traceparent is null and current_setting('courier.traceparent', true) <> '')
    execute function courier.jobs_trace_context();

-- courier.enqueue with traceparent and tracestate (the old signature is dropped: an overload
-- with two more defaulted parameters would make every named call ambiguous).
drop function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text);

create function courier.enqueue(url text, method text DEFAULT 'POST'::text, headers jsonb DEFAULT '{}'::jsonb, body text DEFAULT NULL::text, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000, expect_content_type text DEFAULT NULL::text, signing_secret text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text) RETURNS bigint
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

    loop
        insert into courier.jobs (queue, priority, run_at, max_attempts, deadline, destination, method, url,
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, unique_key, unique_scope,
                                  signing_secret, held_since, traceparent, tracestate)
        values (enqueue.queue, enqueue.priority, coalesce(enqueue.run_at, now()), enqueue.max_attempts,
                enqueue.deadline, v_destination, v_method, enqueue.url, coalesce(enqueue.headers, '{}'),
                enqueue.body, enqueue.timeout_ms, lower(enqueue.expect_content_type), enqueue.idempotency_key,
                enqueue.unique_key, case when enqueue.unique_key is not null then session_user::text end, enqueue.signing_secret,
                -- A destination whose breaker is open: the job waits out of the runnable index.
                case when exists (select 1 from courier.breakers b
                                  where b.destination = v_destination and b.state <> 'closed') then now() end,
                -- NULL: courier.jobs_trace_context reads `set local courier.traceparent`, if any.
                enqueue.traceparent, nullif(enqueue.tracestate, ''))
        on conflict (unique_scope, unique_key) where unique_key is not null do nothing
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

create or replace function courier.retry_jobs(p_ids bigint[], p_leases bigint[], p_delays_ms bigint[], p_errors text[], p_uses_attempt boolean[], p_worker uuid) RETURNS SETOF bigint
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    return query
    with a as (
        select * from unnest(p_ids, p_leases, p_delays_ms, p_errors, p_uses_attempt)
            as a(id, lease, delay_ms, error, uses_attempt)
    ),
    retried as (
        update courier.jobs j
        set state = 'available', run_at = now() + a.delay_ms * interval '1 millisecond', last_delay_ms = a.delay_ms,
            leased_by = null, lease_expires_at = null, errors = j.errors || jsonb_build_array(a.error::jsonb),
            attempt = j.attempt - case when a.uses_attempt then 0 else 1 end,
            held_since = case when courier.breaker_holds(j.destination) then now() end
        from a
        where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
          and j.cancel_requested_at is null
        returning j.id
    ),
    cancelled as (
        delete from courier.jobs j
        using a
        where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
          and j.cancel_requested_at is not null
        returning j.*, a.error as dl_error, a.uses_attempt as dl_uses_attempt
    ),
    recorded as (
        insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate)
        select id, 'cancelled', attempt - case when dl_uses_attempt then 0 else 1 end,
            errors || jsonb_build_array(dl_error::jsonb), 'cancelled', null, leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate
        from cancelled
        returning job_id
    )
    select retried.id from retried
    union all
    select recorded.job_id from recorded;
end
$$;

create or replace function courier.dead_letter_jobs(p_ids bigint[], p_leases bigint[], p_reasons text[], p_errors text[], p_classes text[], p_statuses integer[], p_worker uuid) RETURNS SETOF bigint
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
begin
    return query
    with a as (
        select *, (reason = 'deadline' and error = '') as never_ran
        from unnest(p_ids, p_leases, p_reasons, p_errors, p_classes, p_statuses)
            as a(id, lease, reason, error, last_class, last_status)
    ),
    early as (
        update courier.jobs j
        set state = 'available', attempt = j.attempt - 1, leased_by = null, lease_expires_at = null,
            run_at = greatest(j.run_at, j.deadline)
        from a
        where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
          and a.never_ran and coalesce(j.deadline > now(), false)
        returning j.id
    ),
    gone as (
        delete from courier.jobs j
        using a
        where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
          and not (a.never_ran and coalesce(j.deadline > now(), false))
        returning j.*, a.reason as dl_reason, a.error as dl_error, a.last_class as dl_class, a.last_status as dl_status,
                  a.never_ran as dl_never_ran
    ),
    recorded as (
        insert into courier.dead_letters (job_id, reason, attempt, errors, last_class, last_status, worker,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate)
        select id, dl_reason, case when dl_never_ran then attempt - 1 else attempt end,
            case when dl_error = '' then errors else errors || jsonb_build_array(dl_error::jsonb) end,
            nullif(dl_class, ''), nullif(dl_status, -1), leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate
        from gone
        returning job_id
    )
    select recorded.job_id from recorded
    union all
    select early.id from early;
end
$$;

create or replace function courier.replay_dead_letters(ids bigint[] DEFAULT NULL::bigint[], reasons text[] DEFAULT NULL::text[], destinations text[] DEFAULT NULL::text[], queues text[] DEFAULT NULL::text[], classes text[] DEFAULT NULL::text[], statuses integer[] DEFAULT NULL::integer[], since timestamp with time zone DEFAULT NULL::timestamp with time zone, until timestamp with time zone DEFAULT NULL::timestamp with time zone, rate_per_second double precision DEFAULT NULL::double precision, start_at timestamp with time zone DEFAULT now(), start_index bigint DEFAULT 0, max_rows integer DEFAULT NULL::integer, force boolean DEFAULT false, dry_run boolean DEFAULT false, replayed_before timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(dead_letter_id bigint, new_job_id bigint, destination text, run_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
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
                                  headers, body, timeout_ms, expect_content_type, idempotency_key, args, signing_secret,
                                  traceparent, tracestate)
        overriding system value
        select pl.new_id, pl.kind, pl.queue, pl.priority, pl.new_run_at, pl.max_attempts,
               case when pl.deadline is null then null
                    when pl.deadline > pl.new_run_at then pl.deadline
                    else pl.new_run_at + (pl.deadline - pl.created_at) end,
               pl.destination, pl.method, pl.url, pl.headers, pl.body, pl.timeout_ms, pl.expect_content_type,
               pl.idempotency_key, pl.args, pl.signing_secret, pl.traceparent, pl.tracestate
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

-- destination_set with propagate_trace (dropped and made anew, as enqueue).
drop function courier.destination_set(text, text, int, float8, int, bigint, float8, text[]);

create function courier.destination_set(destination text, signing_secret text DEFAULT NULL::text, max_in_flight integer DEFAULT NULL::integer, rate double precision DEFAULT NULL::double precision, burst integer DEFAULT NULL::integer, slow_start_ms bigint DEFAULT NULL::bigint, retry_budget_pct double precision DEFAULT NULL::double precision, clear text[] DEFAULT '{}'::text[], propagate_trace boolean DEFAULT NULL::boolean) RETURNS SETOF courier.destinations
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
declare
    v_destination text := courier.destination_canonical(destination_set.destination);
    v_origin text := courier.destination_of(destination_set.destination);
    v_row courier.destinations;
    v_new boolean;
begin
    if v_destination is null or length(v_destination) not between 1 and 300 then
        raise exception 'courier.destination_set: destination must be 1 to 300 characters'
            using errcode = '22023', column = 'destination';
    end if;
    if destination_set.signing_secret is not null and not courier.is_secret_name(destination_set.signing_secret) then
        raise exception 'courier.destination_set: signing_secret must be a secret name: 1 to 128 letters, digits, _ . -'
            using errcode = '22023', column = 'signing_secret';
    end if;
    if destination_set.max_in_flight is not null and destination_set.max_in_flight not between 1 and 100000 then
        raise exception 'courier.destination_set: max_in_flight must be 1 to 100000' using errcode = '22023', column = 'max_in_flight';
    end if;
    if destination_set.rate is not null and not (destination_set.rate > 0 and destination_set.rate <= 1000000) then
        raise exception 'courier.destination_set: rate must be above 0 and at most 1000000 per second'
            using errcode = '22023', column = 'rate';
    end if;
    if destination_set.burst is not null and destination_set.burst not between 1 and 1000000 then
        raise exception 'courier.destination_set: burst must be 1 to 1000000' using errcode = '22023', column = 'burst';
    end if;
    if destination_set.slow_start_ms is not null and destination_set.slow_start_ms not between 0 and 86400000 then
        raise exception 'courier.destination_set: slow_start_ms must be 0 to 86400000' using errcode = '22023', column = 'slow_start_ms';
    end if;
    if destination_set.retry_budget_pct is not null and destination_set.retry_budget_pct not between 0 and 100 then
        raise exception 'courier.destination_set: retry_budget_pct must be 0 to 100' using errcode = '22023', column = 'retry_budget_pct';
    end if;
    if exists (select 1 from unnest(destination_set.clear) c
               where c not in ('max_in_flight', 'rate', 'burst', 'slow_start_ms', 'retry_budget_pct', 'signing_secret')) then
        raise exception 'courier.destination_set: clear may name max_in_flight, rate, burst, slow_start_ms, retry_budget_pct, signing_secret'
            using errcode = '22023', column = 'clear';
    end if;
    v_new := not exists (select 1 from courier.destinations d where d.destination = v_destination);
    insert into courier.destinations as d (destination, signing_secret, max_in_flight, rate, burst, slow_start_ms, retry_budget_pct,
                                           propagate_trace)
    values (v_destination, destination_set.signing_secret, destination_set.max_in_flight, destination_set.rate,
            destination_set.burst, destination_set.slow_start_ms, destination_set.retry_budget_pct,
            coalesce(destination_set.propagate_trace, false))
    on conflict (destination) do update
    set signing_secret = case when 'signing_secret' = any(destination_set.clear) then null
                              else coalesce(excluded.signing_secret, d.signing_secret) end,
        max_in_flight = case when 'max_in_flight' = any(destination_set.clear) then null
                             else coalesce(excluded.max_in_flight, d.max_in_flight) end,
        rate = case when 'rate' = any(destination_set.clear) then null else coalesce(excluded.rate, d.rate) end,
        burst = case when 'burst' = any(destination_set.clear) then null else coalesce(excluded.burst, d.burst) end,
        slow_start_ms = case when 'slow_start_ms' = any(destination_set.clear) then null
                             else coalesce(excluded.slow_start_ms, d.slow_start_ms) end,
        retry_budget_pct = case when 'retry_budget_pct' = any(destination_set.clear) then null
                                else coalesce(excluded.retry_budget_pct, d.retry_budget_pct) end,
        propagate_trace = coalesce(destination_set.propagate_trace, d.propagate_trace),
        -- (Every expression here reads the row as it was before this statement.)
        tokens = courier.traffic_tokens_after_change(
            d.rate, d.burst, d.tokens, d.tokens_at,
            case when 'rate' = any(destination_set.clear) then null else coalesce(excluded.rate, d.rate) end,
            case when 'burst' = any(destination_set.clear) then null else coalesce(excluded.burst, d.burst) end,
            now()),
        tokens_at = case
            when (case when 'rate' = any(destination_set.clear) then null else coalesce(excluded.rate, d.rate) end,
                  case when 'burst' = any(destination_set.clear) then null else coalesce(excluded.burst, d.burst) end)
                 is not distinct from (d.rate, d.burst) then d.tokens_at
            else now() end,
        updated_at = now()
    returning d.* into v_row;
    -- A sub-key declared while its origin is paused is paused with it, as courier.destination_pause
    -- pauses an origin's declared sub-keys.
    if v_new and v_origin <> v_destination
       and exists (select 1 from courier.destinations o where o.destination = v_origin and o.paused) then
        update courier.destinations d set paused = true, updated_at = now() where d.destination = v_destination
        returning d.* into v_row;
    end if;
    if v_row.gated then
        update courier.jobs set gated = true where state = 'running' and destination = v_destination and not gated;
        perform pg_notify('courier_traffic', v_destination);
    end if;
    return next v_row;
end
$$;

revoke execute on function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text, text, text) from public;
grant execute on function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text, text, text)
    to courier_enqueue, courier_worker, courier_admin;
revoke execute on function courier.destination_set(text, text, int, float8, int, bigint, float8, text[], boolean) from public, courier_worker;
grant execute on function courier.destination_set(text, text, int, float8, int, bigint, float8, text[], boolean) to courier_admin;
