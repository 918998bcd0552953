-- Courier 0010: one set of input rules at every door, and grants that match the roles.
--
-- Who may do what (the README's "Security" section has the whole threat model):
--   courier_enqueue  calls courier.enqueue and courier.enqueue_job (SECURITY DEFINER) and
--                    nothing else: no table privilege, no other function. What it enqueues
--                    is checked by the rules below whichever door it came through.
--   courier_worker   reads and writes courier.jobs, completed_jobs, dead_letters, workers and
--                    attempt_stats; READS courier.breakers and breaker_events, and changes a
--                    breaker only through the breaker_* functions, which run as their owner
--                    (so a worker reports evidence, probes and pauses for Retry-After, but
--                    cannot force, close or rewrite a breaker row: courier.breaker_force is
--                    the operators' alone).
--   courier_admin    everything in the schema (jobctl).
-- A role with none of these may still connect and NOTIFY any channel: workers treat a
-- notification only as a reason to look at the database, never act on its payload.
--
-- The value rules are domain constraints (and two table CHECKs), so courier.enqueue,
-- courier.enqueue_job, COPY (jobctl enqueue --ndjson, JobsTable.enqueueMany) and plain
-- INSERTs by privileged roles all meet the same rule. They are added NOT VALID: rows
-- already stored are left alone, every new value is checked. The Swift side
-- (CourierCore.HeaderRules, EnqueueRequest.validate) checks the same limits before a
-- request reaches the database; HeaderRulesAgreementTests holds the two together.

-- The rules for a job's stored headers. Raises 22023 naming the field and what is wrong
-- (a domain CHECK could only say that the value broke it); true when the headers pass.
--   * an object of at most 100 headers;
--   * names are RFC 9110 tokens, no two differing only in case;
--   * a value is a string without control characters (tab allowed), or exactly
--     {"secret": "NAME"} with NAME 1 to 128 of A-Z a-z 0-9 _ . -;
--   * names plus values (secret names for references) at most 65536 bytes in total.
create function courier.check_headers(p_headers jsonb) returns boolean
language plpgsql immutable parallel safe as $$
declare
    v_name  text;
    v_value jsonb;
    v_text  text;
    v_count int := 0;
    v_bytes bigint := 0;
begin
    if jsonb_typeof(p_headers) <> 'object' then
        raise exception 'headers must be a JSON object of name to value' using errcode = '22023', column = 'headers';
    end if;
    for v_name, v_value in select key, value from jsonb_each(p_headers) loop
        v_count := v_count + 1;
        if v_count > 100 then
            raise exception 'headers: more than 100 headers' using errcode = '22023', column = 'headers';
        end if;
        if v_name !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]+$' then
            raise exception 'headers: % is not a valid header name', to_json(left(v_name, 64))
                using errcode = '22023', column = 'headers';
        end if;
        if jsonb_typeof(v_value) = 'string' then
            v_text := v_value #>> '{}';
            if v_text ~ '[\x01-\x08\x0a-\x1f\x7f]' then
                -- Never echo the value: it may be a credential.
                raise exception 'headers: the value of % contains a control character', to_json(v_name)
                    using errcode = '22023', column = 'headers';
            end if;
        elsif jsonb_typeof(v_value) = 'object' and jsonb_typeof(v_value -> 'secret') = 'string'
              and v_value - 'secret' = '{}'::jsonb then
            v_text := v_value ->> 'secret';
            if length(v_text) not between 1 and 128 or v_text ~ '[^A-Za-z0-9_.-]' then
                raise exception 'headers: the secret name for % must be 1 to 128 letters, digits, _ . -', to_json(v_name)
                    using errcode = '22023', column = 'headers';
            end if;
        else
            raise exception 'headers: the value of % must be a string or {"secret": "NAME"} and nothing else', to_json(v_name)
                using errcode = '22023', column = 'headers';
        end if;
        v_bytes := v_bytes + octet_length(v_name) + octet_length(v_text);
    end loop;
    if v_bytes > 65536 then
        raise exception 'headers: names and values exceed 65536 bytes in total' using errcode = '22023', column = 'headers';
    end if;
    if v_count > 1 and (select count(distinct lower(k)) from jsonb_object_keys(p_headers) as k) < v_count then
        raise exception 'headers: a header is given twice (names that differ only in case are the same header)'
            using errcode = '22023', column = 'headers';
    end if;
    return true;
end
$$;

-- Most jobs have no headers: answer those without a function call.
alter domain courier.header_map add constraint jobs_headers_rules_check
    check (value = '{}'::jsonb or courier.check_headers(value)) not valid;

-- No whitespace or control character in a URL or a destination (a CR/LF breaker key
-- would break `jobctl breakers` lines; the Swift URL parser already refused them).
alter domain courier.http_url add constraint jobs_url_characters_check
    check (value !~ '[\x01-\x20\x7f]') not valid;
alter domain courier.destination_key add constraint jobs_destination_characters_check
    check (value !~ '[\x01-\x20\x7f]') not valid;

-- 'infinity' and '-infinity' are not times a job can run at or must finish by
-- (-infinity broke jobctl stats and the metrics sampler). isfinite is cheap enough to
-- run on every update of a job.
alter table courier.jobs add constraint jobs_run_at_check check (isfinite(run_at)) not valid;
alter table courier.jobs add constraint jobs_deadline_check check (deadline is null or isfinite(deadline)) not valid;

-- Retry-After pauses, which workers used to write with a plain upsert: now a function,
-- so courier_worker needs no write privilege on courier.breakers.
create function courier.breaker_pause(p_destination text, p_milliseconds bigint) returns void
language sql volatile as $$
    insert into courier.breakers (destination, not_before)
    values (p_destination, now() + p_milliseconds * interval '1 millisecond')
    on conflict (destination) do update
    set not_before = greatest(courier.breakers.not_before, excluded.not_before)
$$;

-- Every breaker function runs as its owner with a fixed search_path; courier_worker may
-- call all of them but breaker_force, and may no longer write the breaker tables itself.
do $$
declare
    v_function regprocedure;
    v_name text;
begin
    for v_function, v_name in
        select p.oid::regprocedure, p.proname from pg_catalog.pg_proc p
        where p.pronamespace = 'courier'::regnamespace and p.proname like 'breaker\_%'
    loop
        execute format('alter function %s security definer set search_path = pg_catalog, pg_temp', v_function);
        execute format('revoke execute on function %s from public', v_function);
        if v_name <> 'breaker_force' then
            execute format('grant execute on function %s to courier_worker', v_function);
        else
            execute format('revoke execute on function %s from courier_worker', v_function);
        end if;
    end loop;
end
$$;
revoke insert, update, delete, truncate on courier.breakers, courier.breaker_events from courier_worker;
grant select on courier.breakers, courier.breaker_events to courier_worker;
-- courier_enqueue holds nothing but EXECUTE on the two enqueue functions.
revoke all on all tables in schema courier from courier_enqueue;
-- Per-schema default privileges cannot take EXECUTE away from PUBLIC (0006 tried), so
-- every function created here is closed by hand.
revoke execute on function courier.check_headers(jsonb) from public;
grant execute on function courier.check_headers(jsonb) to courier_worker, courier_admin;
