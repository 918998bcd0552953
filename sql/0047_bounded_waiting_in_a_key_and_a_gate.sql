-- Courier 0047: bounded waiting inside a tenant and a gated destination (issue 42).
--
--   * Priority with a head start, per queue (courier.queue_settings.priority_head_start_ms,
--     `jobctl queue set Q --priority-head-start 1s`). Priority stays strict without it. With it,
--     each point of priority is that much head start: the plain and the fair claim take a queue's
--     due jobs (within each fairness key) in the order of run_at + (priority - the smallest
--     waiting priority) x head start, so a priority-10 job waits behind priority-0 jobs only
--     until ten head starts have passed, however many of them keep arriving
--     (courier.claim_head_start, a merge over the waiting priorities, one head each).
--   * A tenant's cap holds inside a gated destination too: a gated take (courier.claim_take)
--     skips the jobs of a key at its cap (its row in courier.tenants locked, as the fair claim
--     does), so a job starts only when both its destination and its key allow it.
-- Adding the column writes no row (nullable, no default).

alter table courier.queue_settings add column priority_head_start_ms bigint
    constraint queue_settings_priority_head_start_ms_check
    check (priority_head_start_ms is null or (priority_head_start_ms >= 1 and priority_head_start_ms <= 86400000));

-- The capped keys, for a gated take's one probe of whether any key has a cap.
create index tenants_capped_idx on courier.tenants (fairness_key) where max_in_flight is not null;

-- Takes up to p_limit due jobs of p_queue in head-start order: jobs without a key when p_key is
-- '' (the plain claim's and the default key's), else key p_key's. Each waiting priority (at most
-- 64, smallest first) keeps the run_at of its first due job; the priority whose head comes first
-- by run_at + (priority - smallest) x p_step_ms takes its jobs up to the next priority's turn
-- plus one step (so priorities alternate a step at a time, not job by job), and its head moves
-- past what it took or passed over. Locked rows, rows held back by a breaker and rows of a gated
-- destination are passed over as in the other claims.
create function courier.claim_head_start(p_queue text, p_key text, p_worker uuid, p_lease_ms integer, p_limit integer,
                                         p_step_ms bigint, p_any_gated boolean) RETURNS SETOF courier.jobs
    LANGUAGE plpgsql ROWS 10
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
declare
    v_left   int := p_limit;
    v_step   interval := p_step_ms * interval '1 millisecond';
    v_levels int[] := '{}';
    -- Each priority's first due job not yet taken or passed over; null once none is left.
    v_heads  timestamptz[] := '{}';
    v_level  int;
    v_head   timestamptz;
    v_best   int;
    v_best_e timestamptz;
    v_next_e timestamptz;
    v_e      timestamptz;
    v_bound  timestamptz;
    v_ids    bigint[];
    v_got    int;
    v_turns  int := 0;
begin
    if p_limit <= 0 then
        return;
    end if;
    -- The waiting priorities, smallest first, one descent each, and each one's first due job.
    loop
        if p_key = '' then
            select c.priority into v_level from courier.jobs c
            where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
              and c.priority > coalesce(v_level, -32769)
            order by c.queue, c.priority limit 1;
            exit when not found;
            select c.run_at into v_head from courier.jobs c
            where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
              and c.priority = v_level and c.run_at <= now()
            order by c.queue, c.priority, c.run_at, c.id limit 1;
        else
            select c.priority into v_level from courier.jobs c
            where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated
              and c.priority > coalesce(v_level, -32769)
            order by c.queue, c.fairness_key, c.priority limit 1;
            exit when not found;
            select c.run_at into v_head from courier.jobs c
            where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated
              and c.priority = v_level and c.run_at <= now()
            order by c.queue, c.fairness_key, c.priority, c.run_at, c.id limit 1;
        end if;
        if found then
            v_levels := v_levels || v_level;
            v_heads := v_heads || v_head;
        end if;
        exit when cardinality(v_levels) >= 64;
    end loop;
    -- Each turn ends with a job taken, a priority's head moved past its bound, or the limit.
    while v_left > 0 and v_turns < 1000 loop
        v_turns := v_turns + 1;
        v_best := null;
        v_best_e := null;
        v_next_e := null;
        for i in 1 .. cardinality(v_levels) loop
            continue when v_heads[i] is null;
            v_e := v_heads[i] + (v_levels[i] - v_levels[1]) * v_step;
            if v_best is null or v_e < v_best_e then
                v_next_e := v_best_e;
                v_best := i;
                v_best_e := v_e;
            elsif v_next_e is null or v_e < v_next_e then
                v_next_e := v_e;
            end if;
        end loop;
        exit when v_best is null;
        v_level := v_levels[v_best];
        v_bound := case when v_next_e is null then timestamptz 'infinity'
                        else v_next_e - (v_level - v_levels[1]) * v_step + v_step end;
        if p_key = '' then
            v_ids := array(
                select c.id from courier.jobs c
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
                  and c.priority = v_level and c.run_at >= v_heads[v_best] and c.run_at <= least(now(), v_bound)
                  and (select courier.holds_back(b) from courier.breakers b where b.destination = c.destination) is not true
                  and (not p_any_gated
                       or (select d.gated from courier.destinations d where d.destination = c.destination) is not true)
                order by c.queue, c.priority, c.run_at, c.id
                limit v_left
                for update skip locked);
        else
            v_ids := array(
                select c.id from courier.jobs c
                where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated
                  and c.priority = v_level and c.run_at >= v_heads[v_best] and c.run_at <= least(now(), v_bound)
                  and (select courier.holds_back(b) from courier.breakers b where b.destination = c.destination) is not true
                  and (not p_any_gated
                       or (select d.gated from courier.destinations d where d.destination = c.destination) is not true)
                order by c.queue, c.fairness_key, c.priority, c.run_at, c.id
                limit v_left
                for update skip locked);
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
            exit when v_left <= 0;
        end if;
        -- Every due job of this priority up to the bound is taken or passed over.
        if v_bound >= now() then
            v_heads[v_best] := null;
        elsif p_key = '' then
            select c.run_at into v_head from courier.jobs c
            where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
              and c.priority = v_level and c.run_at > v_bound and c.run_at <= now()
            order by c.queue, c.priority, c.run_at, c.id limit 1;
            v_heads[v_best] := case when found then v_head end;
        else
            select c.run_at into v_head from courier.jobs c
            where c.queue = p_queue and c.fairness_key = p_key and c.state = 'available' and c.held_since is null and not c.gated
              and c.priority = v_level and c.run_at > v_bound and c.run_at <= now()
            order by c.queue, c.fairness_key, c.priority, c.run_at, c.id limit 1;
            v_heads[v_best] := case when found then v_head end;
        end if;
    end loop;
end
$$;

revoke all on function courier.claim_head_start(text, text, uuid, integer, integer, bigint, boolean) from public;
grant all on function courier.claim_head_start(text, text, uuid, integer, integer, bigint, boolean) to courier_worker;
grant all on function courier.claim_head_start(text, text, uuid, integer, integer, bigint, boolean) to courier_admin;

-- The plain claim: as in 0045, and in head-start order when the queue has one.
CREATE OR REPLACE FUNCTION courier.claim(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after_priority integer, p_after_run_at_us bigint, p_after_id bigint) RETURNS SETOF courier.jobs
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
    -- The queue's head start per point of priority (0047); null: priority is strict.
    v_step     bigint;
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
                    h.last),
           (select q.priority_head_start_ms from courier.queue_settings q where q.queue = p_queue)
    into v_last, v_priority, v_step
    from (select (select c.priority from courier.jobs c
                  where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated and c.fairness_key is null
                  order by c.queue desc, c.priority desc
                  limit 1) as last
          offset 0) h
    where h.last is not null
      and not exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused);
    if v_last is not null and v_step is not null then
        return query select * from courier.claim_head_start(p_queue, '', p_worker, p_lease_ms, p_limit, v_step,
                                                            exists (select 1 from courier.destinations d where d.gated));
        return;
    end if;
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

-- The fair claim: as in 0045, with each key's take in head-start order when the queue has one.
CREATE OR REPLACE FUNCTION courier.claim_fair(p_queue text, p_limit integer, p_worker uuid, p_lease_ms integer, p_after text, p_after_left integer, p_quantum integer, p_visit integer, p_bound_keys text[], p_bound_priorities integer[], p_bound_run_at_us bigint[], p_bound_ids bigint[]) RETURNS TABLE(job courier.jobs, cursor_key text, cursor_left integer)
    LANGUAGE plpgsql SECURITY DEFINER ROWS 100
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
    -- The queue's head start per point of priority (0047); null: priority is strict in a key.
    v_step      bigint;
begin
    if p_limit <= 0 or p_quantum <= 0
       or exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused) then
        return query select null::courier.jobs, p_after, p_after_left;
        return;
    end if;
    v_any_gated := exists (select 1 from courier.destinations d where d.gated);
    v_step := (select q.priority_head_start_ms from courier.queue_settings q where q.queue = p_queue);
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
            if v_step is null then
                return query select t, null::text, null::int
                             from courier.claim_fair_take(p_queue, v_key, p_worker, p_lease_ms, v_take, v_any_gated,
                                                          v_bound.p, v_bound.r, v_bound.i) t;
            else
                return query select t, null::text, null::int
                             from courier.claim_head_start(p_queue, v_key, p_worker, p_lease_ms, v_take, v_step, v_any_gated) t;
            end if;
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

-- A take of one destination's jobs (courier.claim_gated's, within what the destination's limits
-- allow, and the spread claim's): as in 0045, and in a gated take a key at its cap gives no more
-- jobs. Each capped key among the jobs found has its courier.tenants row locked (SKIP LOCKED: a
-- key whose row another claim holds waits for the next claim) while its running jobs are
-- counted, as the fair claim does, so racing claimers of any kind never pass the cap; a priority
-- from which a key was cut is taken again without that key. Without any capped key (one probe),
-- or in a take of a destination without a policy (whose keyed jobs are the fair claim's), the
-- take is as before.
CREATE OR REPLACE FUNCTION courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms integer, p_limit integer, p_retries boolean) RETURNS SETOF courier.jobs
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
    v_capped   boolean;
    -- Keys at their cap (or whose row another claim holds): passed over from then on.
    v_full     text[] := '{}';
    v_cut      boolean := false;
    v_room     int;
    k          record;
begin
    if p_limit <= 0 then
        return;
    end if;
    v_capped := p_gated and exists (select 1 from courier.tenants t where t.max_in_flight is not null);
    loop
        if not v_cut then
            select c.priority into v_priority from courier.jobs c
            where c.destination = p_destination and c.held_since is null and c.gated = p_gated and c.queue = p_queue
              and c.state = 'available' and c.priority > coalesce(v_priority, -32769)
            order by c.destination, c.held_since, c.gated, c.queue, c.priority
            limit 1;
            exit when not found;
        end if;
        v_ids := array(
            select c.id from courier.jobs c
            where c.destination = p_destination and c.held_since is null and c.gated = p_gated
              and c.queue = p_queue and c.state = 'available'
              and c.priority = v_priority and c.run_at <= now()
              and (p_retries is null or (c.attempt > 0) = p_retries)
              and (p_gated or c.fairness_key is null)
              and (c.fairness_key is null or c.fairness_key <> all(v_full))
            order by c.destination, c.held_since, c.gated, c.queue, c.priority, c.run_at, c.id
            limit v_left
            for update skip locked);
        -- Each capped key among them keeps what its room allows, its first jobs first.
        v_cut := false;
        if v_capped and cardinality(v_ids) > 0 then
            for k in
                select j.fairness_key as key, t.max_in_flight as cap,
                       array_agg(j.id order by j.priority, j.run_at, j.id) as ids
                from courier.jobs j join courier.tenants t on t.fairness_key = j.fairness_key
                where j.id = any(v_ids) and t.max_in_flight is not null
                group by j.fairness_key, t.max_in_flight
            loop
                perform 1 from courier.tenants t where t.fairness_key = k.key for update skip locked;
                if found then
                    select greatest(0, k.cap - count(*))::int into v_room from courier.jobs c
                    where c.fairness_key = k.key and c.state = 'running';
                else
                    v_room := 0;
                end if;
                if v_room < cardinality(k.ids) then
                    v_ids := array(select i from unnest(v_ids) i where i <> all(k.ids[v_room + 1:]));
                    v_full := v_full || k.key;
                    v_cut := true;
                end if;
            end loop;
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
            exit when v_left <= 0;
        end if;
    end loop;
end
$$;
