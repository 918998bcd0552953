-- Courier 0042: one canonical destination at every door, and no key an operator cannot
-- steer (issue 43, items 3 and 10).
--
-- Before: courier.destination_of kept spellings that Swift's RequestURL normalises or
-- refuses, so one URL got two destinations depending on the door (`:0443` through
-- `courier.enqueue`, `:443` through COPY), a job spelled `http://host:09731` escaped the
-- pause of `http://host:9731`, and SQL took hosts every other door refuses (`%70`,
-- homoglyphs, `2130706433`). And an enqueuer could file its jobs under any sub-key
-- `scheme://host:port/anything` of its own destination: a key no operator had made, so no
-- pause or limit of the destination applied to it, and `jobctl destination pause|set`
-- could not even name it (they cut the path off).
--
-- Now:
--   * courier.destination_of(url) reads a URL exactly as RequestURL does: a DNS name of
--     letters, digits, - _ . (one trailing dot, the root, dropped), a canonical dotted quad,
--     or a bracketed IPv6 address in PostgreSQL's canonical form; a port of 1 to 5 digits
--     (leading zeros dropped) or the scheme's default. Anything else is NULL, which
--     courier.enqueue refuses naming `url`. DestinationAgreementTests runs one list of
--     spellings through both.
--   * courier.destination_canonical(text) is the canonical form of any destination key. A
--     sub-key is written after an explicit port, `scheme://host:port/rest`: its canonical
--     origin plus the rest as written (a lone "/" dropped). URL-like text without a port is
--     a URL, whose key is its origin (so a pasted `https://host/hooks` still names
--     `https://host:443`, as before). Any other label (job:KIND, an operator's own) is
--     kept. (Not named destination_key: that is the domain's name, and a call spelled like
--     the domain is read as a cast to it.) A BEFORE INSERT trigger puts
--     every new job's destination in that form, whatever the door; rows whose destination
--     is already a plain canonical origin skip the function (the trigger's WHEN).
--   * An enqueuer may name its URL's own destination, or a sub-key of it that an operator
--     declared (`jobctl destination set https://host:443/billing`, a row in courier.destinations);
--     any other sub-key is refused (42501, naming `destination`).
--   * destination_set, destination_pause and destination_reset address the key as given,
--     path included, so operators can steer sub-keys; pausing or resuming an origin pauses
--     or resumes every sub-key declared under it, and a sub-key declared under a paused
--     origin starts paused.
--   * courier.idempotency_key refuses control characters (CR/LF reached the send before),
--     and a handler job's args are at most 16 MiB of JSON, as a body is.
-- Rows already waiting keep the destination they were stored with (rewriting them would
-- scan the queue inside the migration); new jobs are canonical.

create or replace function courier.destination_of(url text) returns text
    language plpgsql immutable strict parallel safe
    as $$
declare
    m text[];
    v_host text;
    v_port int;
begin
    m := regexp_match(url, '^(https?)://(\[[^\]/?#]*\]|[^:/?#\[\]@]*)(?::([0-9]*))?(?:[/?#]|$)', 'i');
    if m is null then
        return null;
    end if;
    v_host := lower(m[2]);
    if left(v_host, 1) = '[' then
        -- IPv6 only, without a zone, in canonical form.
        if strpos(v_host, '%') > 0 or strpos(v_host, ':') = 0 then
            return null;
        end if;
        begin
            v_host := '[' || host(substr(v_host, 2, length(v_host) - 2)::inet) || ']';
        exception when invalid_text_representation then
            return null;
        end;
    else
        if length(v_host) > 253 or v_host !~ '^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$' then
            return null;
        end if;
        -- Digits and dots only: a dotted quad without leading zeros, or nothing.
        if v_host ~ '^[0-9.]+$'
           and v_host !~ '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$' then
            return null;
        end if;
        if right(v_host, 1) = '.' then
            v_host := left(v_host, -1);
        end if;
    end if;
    if coalesce(m[3], '') <> '' then
        if length(m[3]) > 5 then
            return null;
        end if;
        v_port := m[3]::int;
        if v_port not between 1 and 65535 then
            return null;
        end if;
    end if;
    return lower(m[1]) || '://' || v_host || ':'
        || coalesce(v_port, case lower(m[1]) when 'https' then 443 else 80 end);
end
$$;

create function courier.destination_canonical(p_destination text) returns text
    language sql immutable strict parallel safe
    as $$
    select case
        when courier.destination_of(p_destination) is null then p_destination
        -- A sub-key is written after an explicit port (scheme://host:port/...); without a
        -- port the text is a URL, and its destination is its origin.
        when p_destination !~ '^[A-Za-z]+://(\[[^]/?#]*\]|[^:/?#]*):[0-9]+' then courier.destination_of(p_destination)
        else courier.destination_of(p_destination)
             || coalesce(nullif(substring(p_destination from '^[A-Za-z]+://[^/?#]*(.*)$'), '/'), '')
    end
$$;

revoke all on function courier.destination_canonical(text) from public;
grant execute on function courier.destination_canonical(text) to courier_worker, courier_admin;

create function courier.jobs_canonical_destination() returns trigger
    language plpgsql
    set search_path = pg_catalog, pg_temp
    as $$
begin
    new.destination := courier.destination_canonical(new.destination);
    return new;
end
$$;

revoke all on function courier.jobs_canonical_destination() from public;

-- Before jobs_enqueuer_destination_check and jobs_gate_new (triggers fire in name order),
-- so both see the canonical key.
create trigger jobs_canonical_destination before insert on courier.jobs
    for each row
    when (new.destination ~* '^https?://' and new.destination !~ '^https?://[a-z0-9_-]+(\.[a-z0-9_-]+)*:[1-9][0-9]{0,4}$')
    execute function courier.jobs_canonical_destination();

create or replace function courier.check_enqueuer_destination() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
    as $$
declare
    v_own text := case when new.kind = 'http' then courier.destination_of(new.url) else 'job:' || new.kind end;
begin
    if new.destination = v_own then
        return new;
    end if;
    -- A sub-key of its own destination, when an operator declared it: every key an enqueuer
    -- can use is one operators see and steer.
    if left(new.destination, length(v_own) + 1) = v_own || '/'
       and exists (select 1 from courier.destinations d where d.destination = new.destination) then
        return new;
    end if;
    -- The schema's owner (who ran the migrations) is an operator too, member or not.
    if pg_catalog.pg_has_role(session_user, (select c.relowner from pg_catalog.pg_class c where c.oid = 'courier.jobs'::regclass),
                              'MEMBER') then
        return new;
    end if;
    raise exception 'destination % is not this job''s own (%) nor a sub-key of it that an operator declared (jobctl destination set %/...)',
        to_json(left(new.destination, 128)), v_own, v_own
        using errcode = '42501', column = 'destination';
end
$$;

create or replace function courier.destination_set(destination text, signing_secret text DEFAULT NULL::text, max_in_flight integer DEFAULT NULL::integer, rate double precision DEFAULT NULL::double precision, burst integer DEFAULT NULL::integer, slow_start_ms bigint DEFAULT NULL::bigint, retry_budget_pct double precision DEFAULT NULL::double precision, clear text[] DEFAULT '{}'::text[]) RETURNS SETOF courier.destinations
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
    insert into courier.destinations as d (destination, signing_secret, max_in_flight, rate, burst, slow_start_ms, retry_budget_pct)
    values (v_destination, destination_set.signing_secret, destination_set.max_in_flight, destination_set.rate,
            destination_set.burst, destination_set.slow_start_ms, destination_set.retry_budget_pct)
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

create or replace function courier.destination_pause(destination text, paused boolean) returns setof courier.destinations
    language plpgsql
    as $$
#variable_conflict use_column
declare
    v_destination text := courier.destination_canonical(destination_pause.destination);
    v_paused boolean := coalesce(destination_pause.paused, false);
    v_keys text[];
    v_row courier.destinations;
begin
    if v_destination is null or length(v_destination) not between 1 and 300 then
        raise exception 'courier.destination_pause: destination must be 1 to 300 characters'
            using errcode = '22023', column = 'destination';
    end if;
    insert into courier.destinations as d (destination, paused) values (v_destination, v_paused)
    on conflict (destination) do update
    set paused = excluded.paused, updated_at = now(),
        ramp_started_at = case when d.paused and not excluded.paused then now() else d.ramp_started_at end
    returning d.* into v_row;
    -- An origin's pause and resume apply to every sub-key an operator declared under it
    -- (scheme://host:port/...), so no key of a paused partner is sent to.
    with keys as (
        update courier.destinations d
        set paused = v_paused, updated_at = now(),
            ramp_started_at = case when d.paused and not v_paused then now() else d.ramp_started_at end
        where left(d.destination, length(v_destination) + 1) = v_destination || '/' and d.paused <> v_paused
          and v_destination = courier.destination_of(v_destination)
        returning d.destination, d.gated
    )
    select coalesce(array_agg(k.destination) filter (where k.gated), '{}') into v_keys from keys k;
    if v_row.gated then
        v_keys := v_keys || v_destination;
    end if;
    if cardinality(v_keys) > 0 then
        update courier.jobs set gated = true where state = 'running' and destination = any(v_keys) and not gated;
    end if;
    perform pg_notify('courier_traffic', v_destination);
    return next v_row;
end
$$;

create or replace function courier.destination_reset(destination text) returns boolean
    language sql
    as $$
    with gone as (
        delete from courier.destinations d
        where d.destination = courier.destination_canonical(destination_reset.destination)
        returning 1
    )
    select exists (select 1 from gone)
$$;

alter domain courier.idempotency_key
    add constraint jobs_idempotency_key_characters_check check (value !~ '[\x01-\x1f\x7f]') not valid;

alter table courier.jobs
    add constraint jobs_args_size_check check (args is null or octet_length(args::text) <= 16777216) not valid;
