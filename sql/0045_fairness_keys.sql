-- Courier 0045: fairness keys (issue 42). Every job may name the tenant it works for; within a
-- queue, workers share their starts between the keys that have due jobs by weight, and a key may
-- have a cap on its running jobs.
--
--   * courier.jobs.fairness_key (domain courier.fairness_key: 1 to 128 printable ASCII characters
--     without spaces); NULL is the default key, which every job without a key shares and which
--     has weight 1 like any other key. Every door takes it: courier.enqueue(..., fairness_key =>),
--     courier.enqueue_job(..., fairness_key =>), a plain INSERT or COPY naming the column, the
--     NDJSON key, jobctl enqueue --fairness-key, the Swift API. courier.dead_letters keeps it, so
--     a replay carries it on.
--   * courier.tenants: a key's weight (1-1000, default 1) and optional max_in_flight, set by
--     courier.tenant_set and removed by courier.tenant_reset (jobctl tenant set/reset). The fair
--     claim reads them on every visit, so a change holds from the next claim.
--   * Indexes: keyed jobs leave jobs_runnable_idx (its predicate gains `fairness_key is null`)
--     for jobs_fair_idx (queue, fairness_key, priority, run_at, id). A queue without keyed jobs
--     is claimed as before, by courier.claim over an index of the same shape, and pays nothing for
--     keys; jobs_fair_running_idx counts a key's running jobs for its cap.
--   * courier.claim_fair: weighted round robin over the keys with waiting jobs, from a cursor the
--     worker keeps (see the function). Deficit round robin with a cost of one per job, so a key
--     that was idle comes back with one quantum, never a catch-up burst.
--   * Jobs of destinations with a traffic policy (gated) stay courier.claim_gated's: the
--     destination's limits decide them, in priority order, whatever their key; a key's cap counts
--     them when they run but does not hold them back (docs/fairness.md).
-- Building the indexes locks courier.jobs against writes while they are built: on a large queue,
-- migrate in a quiet minute.

create function courier.is_fairness_key(value text) returns boolean
    language sql immutable strict parallel safe
    as $$ select value ~ '^[\x21-\x7e]{1,128}$' $$;

create function courier.fairness_key_rule() returns text
    language sql immutable parallel safe
    as $$ select 'must be 1 to 128 printable ASCII characters without spaces' $$;

revoke all on function courier.is_fairness_key(text), courier.fairness_key_rule() from public;
grant execute on function courier.is_fairness_key(text), courier.fairness_key_rule()
    to courier_worker, courier_admin, courier_enqueue;

create domain courier.fairness_key as text
    constraint jobs_fairness_key_check check (courier.is_fairness_key(value));

alter table courier.jobs add column fairness_key courier.fairness_key;
alter table courier.dead_letters add column fairness_key text;
comment on column courier.jobs.fairness_key is
    'The tenant the job works for: keys share a queue''s starts by weight (courier.tenants); NULL is the default key.';

create table courier.tenants (
    fairness_key  courier.fairness_key primary key,
    weight        integer not null default 1 constraint tenants_weight_check check (weight between 1 and 1000),
    max_in_flight integer constraint tenants_max_in_flight_check check (max_in_flight between 1 and 1000000),
    updated_at    timestamptz not null default now()
);
comment on table courier.tenants is
    'Weights and caps of fairness keys; a key without a row has weight 1 and no cap.';
revoke all on courier.tenants from public;
grant select on courier.tenants to courier_worker, courier_admin;
grant insert, update, delete on courier.tenants to courier_admin;

-- Keyed jobs move from the runnable index to their own.
create index jobs_fair_idx on courier.jobs (queue, fairness_key, priority, run_at, id)
    where state = 'available' and held_since is null and not gated and fairness_key is not null;
create index jobs_fair_running_idx on courier.jobs (fairness_key)
    where state = 'running' and fairness_key is not null;
create index jobs_runnable_unkeyed_idx on courier.jobs (queue, priority, run_at, id)
    where state = 'available' and held_since is null and not gated and fairness_key is null;
drop index courier.jobs_runnable_idx;
alter index courier.jobs_runnable_unkeyed_idx rename to jobs_runnable_idx;

-- A key's weight and cap: given values are set, the rest kept (a new key starts at weight 1 without a
-- cap); `clear` names settings to put back to their defaults. Refusals name the parameter (22023).
create function courier.tenant_set(fairness_key text, weight integer DEFAULT NULL::integer,
                                   max_in_flight integer DEFAULT NULL::integer, clear text[] DEFAULT '{}'::text[])
    returns setof courier.tenants
    language plpgsql security definer
    set search_path to 'pg_catalog', 'pg_temp'
    as $$
#variable_conflict use_column
begin
    if tenant_set.fairness_key is null or not courier.is_fairness_key(tenant_set.fairness_key) then
        raise exception 'courier.tenant_set: fairness_key %', courier.fairness_key_rule()
            using errcode = '22023', column = 'fairness_key';
    end if;
    if tenant_set.weight is not null and tenant_set.weight not between 1 and 1000 then
        raise exception 'courier.tenant_set: weight must be between 1 and 1000'
            using errcode = '22023', column = 'weight';
    end if;
    if tenant_set.max_in_flight is not null and tenant_set.max_in_flight not between 1 and 1000000 then
        raise exception 'courier.tenant_set: max_in_flight must be between 1 and 1000000'
            using errcode = '22023', column = 'max_in_flight';
    end if;
    if exists (select 1 from unnest(coalesce(tenant_set.clear, '{}')) c where c not in ('weight', 'max_in_flight')) then
        raise exception 'courier.tenant_set: clear must name weight or max_in_flight'
            using errcode = '22023', column = 'clear';
    end if;
    if (tenant_set.weight is not null and 'weight' = any(tenant_set.clear))
       or (tenant_set.max_in_flight is not null and 'max_in_flight' = any(tenant_set.clear)) then
        raise exception 'courier.tenant_set: a setting cannot be both set and cleared'
            using errcode = '22023', column = 'clear';
    end if;
    return query
    insert into courier.tenants as t (fairness_key, weight, max_in_flight)
    values (tenant_set.fairness_key, coalesce(tenant_set.weight, 1), tenant_set.max_in_flight)
    on conflict (fairness_key) do update
    set weight = case when 'weight' = any(tenant_set.clear) then 1 else coalesce(tenant_set.weight, t.weight) end,
        max_in_flight = case when 'max_in_flight' = any(tenant_set.clear) then null
                             else coalesce(tenant_set.max_in_flight, t.max_in_flight) end,
        updated_at = now()
    returning t.*;
end
$$;

create function courier.tenant_reset(fairness_key text) returns boolean
    language sql security definer
    set search_path to 'pg_catalog', 'pg_temp'
    as $$
    with gone as (delete from courier.tenants t where t.fairness_key = tenant_reset.fairness_key returning 1)
    select exists (select 1 from gone)
$$;

revoke all on function courier.tenant_set(text, integer, integer, text[]), courier.tenant_reset(text) from public;
grant execute on function courier.tenant_set(text, integer, integer, text[]), courier.tenant_reset(text) to courier_admin;

-- Takes up to p_limit due jobs of one key of p_queue (p_key '' is the default key, NULL in the
-- table), a priority at a time, smaller first, through jobs_runnable_idx or jobs_fair_idx;
-- p_after_* is where the worker's last claim of the key stopped (NULL: none). Rows whose
-- destination is held back or gated but not yet moved by the keeper are passed over, as
-- courier.claim does.
create function courier.claim_fair_take(p_queue text, p_key text, p_worker uuid, p_lease_ms integer, p_limit integer,
                                        p_any_gated boolean, p_after_priority integer, p_after_run_at timestamptz,
                                        p_after_id bigint)
    returns setof courier.jobs
    language plpgsql rows 10
    set search_path to 'pg_catalog', 'pg_temp'
    set plan_cache_mode to 'force_generic_plan'
    set enable_seqscan to 'off'
    set enable_bitmapscan to 'off'
    set enable_sort to 'off'
    set jit to 'off'
    as $$
declare
    v_left     int := p_limit;
    v_priority int;
    v_last     int;
    v_ids      bigint[];
    v_got      int;
begin
    loop
        exit when v_left <= 0;
        if p_key = '' then
            -- The highest waiting priority from the index's tail first (claimed jobs leave dead
            -- entries at the head until VACUUM: 0037), then the lowest only below it.
            if v_last is null then
                select c.priority into v_last from courier.jobs c
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
                order by c.queue, c.priority desc limit 1;
                exit when not found;
                select c.priority into v_priority from courier.jobs c
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null and c.priority < v_last
                order by c.queue, c.priority limit 1;
                v_priority := coalesce(v_priority, v_last);
            else
                exit when v_priority >= v_last;
                select c.priority into v_priority from courier.jobs c
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null and c.priority > v_priority
                order by c.queue, c.priority limit 1;
                exit when not found;
            end if;
            -- From the worker's bound in this priority (where its last claim of the key stopped),
            -- then, if that came back short, from the start.
            v_ids := case when v_priority = p_after_priority then array(
                select c.id from courier.jobs c
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null and c.priority = v_priority and c.run_at <= now()
                  and (c.run_at, c.id) > (p_after_run_at, p_after_id)
                  and (select courier.holds_back(b) from courier.breakers b where b.destination = c.destination) is not true
                  and (not p_any_gated
                       or (select d.gated from courier.destinations d where d.destination = c.destination) is not true)
                order by c.queue, c.priority, c.run_at, c.id
                limit v_left
                for update skip locked) else '{}' end;
            if cardinality(v_ids) < v_left then
                v_ids := v_ids || array(
                    select c.id from courier.jobs c
                    where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null and c.priority = v_priority and c.run_at <= now() and c.id <> all(v_ids)
                      and (select courier.holds_back(b) from courier.breakers b where b.destination = c.destination) is not true
                      and (not p_any_gated
                           or (select d.gated from courier.destinations d where d.destination = c.destination) is not true)
                    order by c.queue, c.priority, c.run_at, c.id
                    limit v_left - cardinality(v_ids)
                    for update skip locked);
            end if;
        else
            -- The highest waiting priority from the index's tail first (claimed jobs leave dead
            -- entries at the head until VACUUM: 0037), then the lowest only below it.
            if v_last is null then
                select c.priority into v_last from courier.jobs c
                where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated
                order by c.queue, c.fairness_key, c.priority desc limit 1;
                exit when not found;
                select c.priority into v_priority from courier.jobs c
                where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated and c.priority < v_last
                order by c.queue, c.fairness_key, c.priority limit 1;
                v_priority := coalesce(v_priority, v_last);
            else
                exit when v_priority >= v_last;
                select c.priority into v_priority from courier.jobs c
                where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated and c.priority > v_priority
                order by c.queue, c.fairness_key, c.priority limit 1;
                exit when not found;
            end if;
            -- From the worker's bound in this priority (where its last claim of the key stopped),
            -- then, if that came back short, from the start.
            v_ids := case when v_priority = p_after_priority then array(
                select c.id from courier.jobs c
                where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated and c.priority = v_priority and c.run_at <= now()
                  and (c.run_at, c.id) > (p_after_run_at, p_after_id)
                  and (select courier.holds_back(b) from courier.breakers b where b.destination = c.destination) is not true
                  and (not p_any_gated
                       or (select d.gated from courier.destinations d where d.destination = c.destination) is not true)
                order by c.queue, c.fairness_key, c.priority, c.run_at, c.id
                limit v_left
                for update skip locked) else '{}' end;
            if cardinality(v_ids) < v_left then
                v_ids := v_ids || array(
                    select c.id from courier.jobs c
                    where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated and c.priority = v_priority and c.run_at <= now() and c.id <> all(v_ids)
                      and (select courier.holds_back(b) from courier.breakers b where b.destination = c.destination) is not true
                      and (not p_any_gated
                           or (select d.gated from courier.destinations d where d.destination = c.destination) is not true)
                    order by c.queue, c.fairness_key, c.priority, c.run_at, c.id
                    limit v_left - cardinality(v_ids)
                    for update skip locked);
            end if;
        end if;
        if cardinality(v_ids) > 0 then
            return query
            update courier.jobs j
            set state = 'running', attempt = j.attempt + 1, lease_seq = j.lease_seq + 1, leased_by = p_worker,
                lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
            where j.id = any(v_ids)
            returning j.*;
            get diagnostics v_got = row_count;
            v_left := v_left - v_got;
        end if;
    end loop;
end
$$;

-- The fair claim of a queue that has keyed jobs: weighted round robin over its keys.
--
-- A round visits the default key ('') and then every key with waiting jobs in key order, and
-- gives each up to its quantum: its weight times p_quantum jobs, fewer when its cap leaves less
-- room. The worker keeps the cursor between calls (the last row: the key visited last and how
-- much of its quantum is left), so a call that ran out of slots halfway through a key's quantum
-- goes on with that key and the shares hold across calls. A key's unused quantum is not kept: a
-- key that had nothing due, or was idle, starts its next visit with one quantum (deficit round
-- robin, cost one per job, deficit reset when the key runs dry), so nothing is owed for idle time.
--
-- Bound on waiting: a due job of a key is reached within one round, at most the sum of
-- weight x p_quantum over the keys with due jobs claimed by this worker, since a worker's cursor
-- visits every key with waiting jobs once per round (p_visit bounds the visits of one call; the
-- next call goes on from the cursor).
--
-- A capped key's row in courier.tenants is locked (SKIP LOCKED: a key another claimer is
-- counting is passed over this call) while its running jobs are counted and its jobs taken, so
-- racing claimers never pass the cap.
create function courier.claim_fair(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer,
                                   p_after text, p_after_left integer, p_quantum integer, p_visit integer,
                                   p_bound_keys text[], p_bound_priorities integer[], p_bound_run_at_us bigint[],
                                   p_bound_ids bigint[])
    returns table(job courier.jobs, cursor_key text, cursor_left integer)
    language plpgsql security definer rows 100
    set search_path to 'pg_catalog', 'pg_temp'
    as $$
declare
    v_left      int := p_limit;
    v_key       text := p_after;       -- the key being visited; NULL before a round's start
    v_quantum   int := coalesce(p_after_left, 0);
    v_visits    int := 0;
    v_rounds    int := 0;              -- rounds begun in this call
    v_took      boolean := false;      -- whether the round being walked took a job
    v_takers    int := 0;              -- keys of that round that gave jobs, and the last of them
    v_taker     text;
    v_solo      text;                  -- the only key with due jobs: it may take all that is left
    v_first     text;
    v_last      text;
    v_weight    int;
    v_cap       int;
    v_running   int;
    v_take      int;
    v_offer     int;
    v_got       int;
    v_any_gated boolean;
    v_bound     record;
    v_known     text;
    v_tenants   boolean;
begin
    if p_limit <= 0 or p_quantum <= 0
       or exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused) then
        return query select null::courier.jobs, p_after, p_after_left;
        return;
    end if;
    v_any_gated := exists (select 1 from courier.destinations d where d.gated);
    -- Without any row in courier.tenants every key has weight 1 and no cap: no look-up per visit.
    v_tenants := exists (select 1 from courier.tenants);
    -- One key alone waiting (no key below the last of jobs_fair_idx, read from its tail, and no
    -- job without a key): it is the whole round, and takes all in one visit.
    -- (Looked for only when the call may take more than one quantum.)
    if p_limit > p_quantum then
        select max(c.fairness_key) into v_last from courier.jobs c
        where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
          and c.fairness_key is not null;
        select max(c.fairness_key) into v_first from courier.jobs c
        where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
          and c.fairness_key is not null and c.fairness_key < v_last;
    end if;
    if p_limit > p_quantum and v_first is null
       and not exists (select 1 from courier.jobs c
                       where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
                         and c.fairness_key is null) then
        v_solo := coalesce(v_last, '');
    end if;
    while v_left > 0 and v_visits < p_visit loop
        if v_quantum <= 0 then
            -- The next key with waiting jobs, or the round's end. A descent of jobs_fair_idx to
            -- the next key steps over the dead entries claimed jobs leave at the head of that
            -- key's range until VACUUM (thousands for a busy key); so when the worker has a
            -- bound for a later key, only the gap before it is looked into (no entry there: one
            -- descent), and that key is visited from its bound.
            if v_key is not null then
                select min(b) into v_known from unnest(p_bound_keys) b where b > v_key;
                if v_known is not null
                   and not exists (select 1 from courier.jobs c
                                   where c.queue = p_queue and c.state = 'available' and c.held_since is null
                                     and not c.gated and c.fairness_key is not null
                                     and c.fairness_key > v_key and c.fairness_key < v_known) then
                    v_key := v_known;
                else
                    select min(c.fairness_key) into v_key from courier.jobs c
                    where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
                      and c.fairness_key is not null and c.fairness_key > v_key;
                end if;
            end if;
            if v_key is null then
                -- A round begins with the default key; a whole round that took nothing ends the call.
                exit when v_rounds > 0 and not v_took;
                -- A round in which one key alone had due jobs: while that holds it may take
                -- all that is left when its turn comes (a single tenant drains in few visits).
                v_solo := case when v_rounds > 0 and v_takers = 1 then v_taker else v_solo end;
                v_rounds := v_rounds + 1;
                v_took := false;
                v_takers := 0;
                v_taker := null;
                v_key := '';
            end if;
            v_weight := null;
            v_cap := null;
            if v_tenants then
                select t.weight, t.max_in_flight into v_weight, v_cap from courier.tenants t where t.fairness_key = v_key;
            end if;
            v_quantum := case when v_key = v_solo then v_left else coalesce(v_weight, 1) * p_quantum end;
        else
            -- Going on with the cursor's key: its cap may have changed since.
            v_cap := null;
            if v_tenants then
                select t.max_in_flight into v_cap from courier.tenants t where t.fairness_key = v_key;
            end if;
        end if;
        v_visits := v_visits + 1;
        v_take := least(v_left, v_quantum);
        v_offer := v_take;
        if v_cap is not null then
            perform 1 from courier.tenants t where t.fairness_key = v_key for update skip locked;
            if not found then
                v_take := 0;
            else
                select count(*) into v_running from courier.jobs c
                where c.fairness_key = v_key and c.state = 'running';
                v_take := least(v_take, greatest(0, v_cap - v_running));
            end if;
        end if;
        v_got := 0;
        if v_take > 0 then
            select b.p, timestamptz 'epoch' + b.r * interval '1 microsecond' as r, b.i into v_bound
            from unnest(p_bound_keys, p_bound_priorities, p_bound_run_at_us, p_bound_ids) b(k, p, r, i)
            where b.k = v_key;
            return query select t, null::text, null::int
                         from courier.claim_fair_take(p_queue, v_key, p_worker, p_lease_ms, v_take, v_any_gated,
                                                      v_bound.p, v_bound.r, v_bound.i) t;
            get diagnostics v_got = row_count;
            v_left := v_left - v_got;
            v_took := v_took or v_got > 0;
            if v_got > 0 and v_taker is distinct from v_key then
                v_takers := v_takers + 1;
                v_taker := v_key;
            end if;
        end if;
        -- A key held to less by its cap, or that gave less than it was offered (nothing more is
        -- due), ends its visit, and what it did not use is not kept; one cut short by this call's
        -- limit goes on in the next call.
        v_quantum := case when v_take < v_offer or v_got < v_take then 0 else v_quantum - v_got end;
    end loop;
    return query select null::courier.jobs, v_key, v_quantum;
end
$$;

revoke all on function courier.claim_fair_take(text, text, uuid, integer, integer, boolean, integer, timestamptz, bigint),
    courier.claim_fair(text, integer, uuid, integer, text, integer, integer, integer, text[], integer[], bigint[], bigint[])
    from public;
grant execute on function courier.claim_fair_take(text, text, uuid, integer, integer, boolean, integer, timestamptz, bigint),
    courier.claim_fair(text, integer, uuid, integer, text, integer, integer, integer, text[], integer[], bigint[], bigint[])
    to courier_worker, courier_admin;

-- Which of these queues have keyed jobs waiting (one descent of jobs_fair_idx each): the worker
-- claims those with courier.claim_fair.
create function courier.queues_with_fairness_keys(p_queues text[]) returns setof text
    language sql stable security definer
    set search_path to 'pg_catalog', 'pg_temp'
    as $$
    select q from unnest(p_queues) q
    where exists (select 1 from courier.jobs c
                  where c.queue = q and c.state = 'available' and c.held_since is null and not c.gated
                    and c.fairness_key is not null)
$$;
revoke all on function courier.queues_with_fairness_keys(text[]) from public;
grant execute on function courier.queues_with_fairness_keys(text[]) to courier_worker, courier_admin;

-- The doors. courier.enqueue and courier.enqueue_job with fairness_key (each dropped and made anew,
-- as 0044 did: an overload with one more defaulted parameter would make named calls ambiguous).
drop function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text, text, text);

create function courier.enqueue(url text, method text DEFAULT 'POST'::text, headers jsonb DEFAULT '{}'::jsonb, body text DEFAULT NULL::text, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000, expect_content_type text DEFAULT NULL::text, signing_secret text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text, fairness_key text DEFAULT NULL::text) RETURNS bigint
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

revoke all on function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text, text, text, text) from public;
grant execute on function courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text, text, text, text) to courier_enqueue, courier_worker, courier_admin;

drop function courier.enqueue_job(text, jsonb, text, int, timestamptz, int, timestamptz, text, text, text, int);

create function courier.enqueue_job(kind text, args jsonb DEFAULT '{}'::jsonb, queue text DEFAULT 'default'::text, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT now(), max_attempts integer DEFAULT 25, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, idempotency_key text DEFAULT (gen_random_uuid())::text, unique_key text DEFAULT NULL::text, destination text DEFAULT NULL::text, timeout_ms integer DEFAULT 30000, fairness_key text DEFAULT NULL::text) RETURNS bigint
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
$_$;

revoke all on function courier.enqueue_job(text, jsonb, text, int, timestamptz, int, timestamptz, text, text, text, int, text) from public;
grant execute on function courier.enqueue_job(text, jsonb, text, int, timestamptz, int, timestamptz, text, text, text, int, text) to courier_enqueue, courier_worker, courier_admin;

-- Dead letters keep the key, and a replay carries it on: the acknowledgement functions and the
-- replay with the same bodies as 0044's plus the column (their pre-0039 overloads stay as they are).
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
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate, fairness_key)
        select id, 'cancelled', attempt - case when dl_uses_attempt then 0 else 1 end,
            errors || jsonb_build_array(dl_error::jsonb), 'cancelled', null, leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate, fairness_key
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
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate, fairness_key)
        select id, dl_reason, case when dl_never_ran then attempt - 1 else attempt end,
            case when dl_error = '' then errors else errors || jsonb_build_array(dl_error::jsonb) end,
            nullif(dl_class, ''), nullif(dl_status, -1), leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret, traceparent, tracestate, fairness_key
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
                                  traceparent, tracestate, fairness_key)
        overriding system value
        select pl.new_id, pl.kind, pl.queue, pl.priority, pl.new_run_at, pl.max_attempts,
               case when pl.deadline is null then null
                    when pl.deadline > pl.new_run_at then pl.deadline
                    else pl.new_run_at + (pl.deadline - pl.created_at) end,
               pl.destination, pl.method, pl.url, pl.headers, pl.body, pl.timeout_ms, pl.expect_content_type,
               pl.idempotency_key, pl.args, pl.signing_secret, pl.traceparent, pl.tracestate, pl.fairness_key
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

-- courier.claim takes unkeyed jobs only: its walks name the runnable index's new predicate
-- (`fairness_key is null`), so keyed jobs are claim_fair's. Otherwise the same as 0037's.
create or replace function courier.claim(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after_priority integer, p_after_run_at_us bigint, p_after_id bigint) RETURNS SETOF courier.jobs
    LANGUAGE plpgsql ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
declare
    v_left     int := p_limit;
    v_priority int;
    -- The highest waiting priority: once it is taken, no later priority needs a look.
    v_last     int;
    v_after    timestamptz := timestamptz 'epoch' + p_after_run_at_us * interval '1 microsecond';
    v_after_id bigint := p_after_id;
    v_got      int;
    -- Whether any destination is gated (one probe of destinations_gated_idx): when none is,
    -- the per-row check below is skipped.
    v_any_gated boolean;
begin
    if p_limit <= 0 then
        return;
    end if;
    -- No row when the queue is paused; v_last is null when nothing waits. The highest
    -- waiting priority first, then the lowest only below it.
    select h.last,
           coalesce(p_after_priority,
                    (select c.priority from courier.jobs c
                     where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
                       and c.priority < h.last
                     order by c.queue, c.priority
                     limit 1),
                    h.last)
    into v_last, v_priority
    from (select (select c.priority from courier.jobs c
                  where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
                  order by c.queue desc, c.priority desc
                  limit 1) as last
          offset 0) h
    where h.last is not null
      and not exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused);
    if v_last is null or v_priority > v_last then
        return;
    end if;
    if p_after_priority is null then
        v_after := '-infinity';
        v_after_id := 0;
    end if;
    v_any_gated := exists (select 1 from courier.destinations d where d.gated);
    loop
        -- One priority's due jobs from the position, in the index's order, locked as read,
        -- then updated through the primary key. Rows of a destination that is held back or
        -- gated (not yet moved by the keeper) are passed over before the LIMIT counts them.
        return query
        update courier.jobs j
        set state = 'running', attempt = j.attempt + 1, lease_seq = j.lease_seq + 1, leased_by = p_worker,
            lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
        where j.id = any(array(
                select c.id from courier.jobs c
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
                  and c.priority = v_priority and (c.run_at, c.id) > (v_after, v_after_id) and c.run_at <= now()
                  and (select courier.holds_back(b) from courier.breakers b
                       where b.destination = c.destination) is not true
                  and (not v_any_gated
                       or (select d.gated from courier.destinations d where d.destination = c.destination) is not true)
                order by c.queue, c.priority, c.run_at, c.id
                limit v_left
                for update skip locked))
        returning j.*;
        get diagnostics v_got = row_count;
        v_left := v_left - v_got;
        exit when v_left <= 0 or v_priority >= v_last;
        select c.priority into v_priority from courier.jobs c
        where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
          and c.priority > v_priority
        order by c.queue, c.priority
        limit 1;
        exit when not found;
        v_after := '-infinity';
        v_after_id := 0;
    end loop;
end
$$;

-- courier.claim_take: the spread claim's takes (p_gated false) leave keyed jobs to claim_fair, so
-- a worker that has not yet seen a queue's keys cannot start a capped key's job past its cap. The
-- gated claim's (p_gated true) take every key's jobs: the destination's limits decide them.
create or replace function courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) RETURNS SETOF courier.jobs
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
declare
    v_left     int := p_limit;
    v_priority int;
    v_ids      bigint[];
    v_got      int;
begin
    if p_limit <= 0 then
        return;
    end if;
    loop
        select c.priority into v_priority from courier.jobs c
        where c.destination = p_destination and c.held_since is null and c.gated = p_gated and c.queue = p_queue
          and c.state = 'available' and c.priority > coalesce(v_priority, -32769)
        order by c.destination, c.held_since, c.gated, c.queue, c.priority
        limit 1;
        exit when not found;
        v_ids := array(
            select c.id from courier.jobs c
            where c.destination = p_destination and c.held_since is null and c.gated = p_gated
              and c.queue = p_queue and c.state = 'available'
              and c.priority = v_priority and c.run_at <= now()
              and (p_retries is null or (c.attempt > 0) = p_retries)
              and (p_gated or c.fairness_key is null)
            order by c.destination, c.held_since, c.gated, c.queue, c.priority, c.run_at, c.id
            limit v_left
            for update skip locked);
        if cardinality(v_ids) > 0 then
            return query
            update courier.jobs j
            set state = 'running', attempt = j.attempt + 1, lease_seq = j.lease_seq + 1, leased_by = p_worker,
                lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
            where j.id = any(v_ids)
            returning j.*;
            get diagnostics v_got = row_count;
            v_left := v_left - v_got;
            exit when v_left <= 0;
        end if;
    end loop;
end
$$;
