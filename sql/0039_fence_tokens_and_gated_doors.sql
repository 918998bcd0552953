-- Courier 0039: a lease token that never repeats, gating at every door, and a spread claim
-- that moves on.
--
-- 1. The fence. Every write about a running job was fenced by (id, attempt, leased_by). But
--    attempt goes down again: a hand-back, a retry that uses no attempt, and a deadline
--    dead letter whose attempt never ran all give the claim's increment back. So the same
--    triple could name two leases of one worker: a hand-back that committed but whose reply
--    was lost, re-sent by the worker's acknowledgement writer after the worker had claimed
--    the job again, matched the new lease and put the job back to `available` while it was
--    being sent (and another worker could claim it: one job on two workers).
--    Now courier.jobs.lease_seq counts the job's leases: every claim (courier.claim,
--    courier.claim_take for the spread and gated claims, the probe's claim in
--    JobsTable.claimProbe) sets it to lease_seq + 1, and nothing else changes it. Claims
--    return it, and every write about the lease (success, retry, dead letter, hand-back,
--    renewal) matches (id, lease_seq, leased_by). A write re-sent after its first commit, or
--    sent late, matches nothing. Kept per row, so a claim pays for no sequence.
--    The attempt-fenced functions of 0034 stay for workers of the previous release during a
--    rolling update (migrations run before the rollout, see deploy/README.md); the overloads
--    below take the lease tokens (bigint[]) where those took attempts (int[]).
--
-- 2. Gated at every door. A job of a destination with a traffic policy or a pause must wait
--    in the gated index, where only courier.claim_gated takes it. Until now no enqueue path
--    set jobs.gated: the keeper moved such jobs, 2,000 a pass, and meanwhile the plain claim
--    locked them, found them gated after its LIMIT, and took nothing: 5,000 waiting jobs of
--    a just-paused destination stalled another destination's jobs at the same priority for
--    three claims in a row. Now
--      * a BEFORE INSERT trigger gates every new row whose destination is gated, whatever
--        the door (courier.enqueue, courier.enqueue_job, COPY, replay);
--      * the plain claim's locking subquery skips rows of gated destinations, so the backlog
--        of a destination gated a moment ago (until the keeper moves it) uses up no claim.
--
-- 3. The spread claim moves on. courier.claim_spread visited destinations with any waiting
--    job (another queue's, or only jobs scheduled ahead) and the worker's cursor moved only
--    past destinations it took a job from: twenty destinations with nothing due after the
--    cursor took every visit, on every call, and a due job of another destination waited.
--    courier.claim_spread_round returns, after the jobs it took, one row with no job that
--    names the last destination it visited, and the worker's next call starts after it. It
--    looks at a destination only when that destination has a due job of the queue
--    (courier.has_due_job), so a visit costs a descent or two, never a walk of jobs not due.

alter table courier.jobs add column lease_seq bigint not null default 0;
comment on column courier.jobs.lease_seq is
    'How many times the job was leased: the fence token of its current lease (never repeats for the row).';

-- 2. Gated at every door.
create function courier.jobs_gate_new()
returns trigger
language plpgsql security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    new.gated := coalesce((select d.gated from courier.destinations d where d.destination = new.destination), false);
    return new;
end
$$;
revoke execute on function courier.jobs_gate_new() from public;
create trigger jobs_gate_new before insert on courier.jobs
    for each row execute function courier.jobs_gate_new();

-- The plain claim (0037), bumping lease_seq, and skipping gated destinations' rows inside
-- the locking subquery (no longer after its LIMIT).
create or replace function courier.claim(p_queue text, p_limit int, p_worker uuid, p_lease_ms int,
                                         p_after_priority int, p_after_run_at_us bigint, p_after_id bigint)
returns setof courier.jobs
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_sort = off
set jit = off
as $$
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
                     where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
                       and c.priority < h.last
                     order by c.queue, c.priority
                     limit 1),
                    h.last)
    into v_last, v_priority
    from (select (select c.priority from courier.jobs c
                  where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
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
                where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
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
        where c.queue = p_queue and c.state = 'available' and c.held_since is null and not c.gated
          and c.priority > v_priority
        order by c.queue, c.priority
        limit 1;
        exit when not found;
        v_after := '-infinity';
        v_after_id := 0;
    end loop;
end
$$;

-- The lease-taking statement of the spread and gated claims (0033), bumping lease_seq.
create or replace function courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid,
                                              p_lease_ms int, p_limit int, p_retries boolean)
returns setof courier.jobs
language plpgsql volatile rows 10
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_sort = off
set jit = off
as $$
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

-- 3. The spread claim with a cursor that moves past every destination visited. Rows with a
-- job come first, in visit order; the last row has job null and `visited` the last
-- destination looked at (null when none was), the worker's next p_after.
create function courier.claim_spread_round(p_queue text, p_limit int, p_per_destination int, p_worker uuid,
                                           p_lease_ms int, p_after text, p_exclude text[], p_visit int)
returns table (job courier.jobs, visited text)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
    v_left    int := p_limit;
    v_cursor  text := coalesce(p_after, '');
    v_wrapped boolean := p_after is null;
    v_visits  int := 0;
    v_next    text;
    v_skip    text;
    v_last    text;
    v_got     int;
begin
    if p_limit <= 0 or p_per_destination <= 0
       or exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused) then
        return;
    end if;
    while v_left > 0 and v_visits < p_visit loop
        -- The next destination with a waiting job: one descent of jobs_destination_idx,
        -- stopping before the next excluded destination (0030).
        select min(e) into v_skip from unnest(p_exclude) e where e > v_cursor;
        if v_skip is null then
            select min(j.destination) into v_next from courier.jobs j
            where j.state = 'available' and j.destination > v_cursor;
        else
            select min(j.destination) into v_next from courier.jobs j
            where j.state = 'available' and j.destination > v_cursor and j.destination < v_skip;
            if v_next is null then
                v_cursor := v_skip;
                v_last := v_skip;
                v_visits := v_visits + 1;
                continue;
            end if;
        end if;
        if v_next is null or (v_wrapped and p_after is not null and v_next > p_after) then
            exit when v_wrapped;
            v_wrapped := true;
            v_cursor := '';
            continue;
        end if;
        v_cursor := v_next;
        v_last := v_next;
        v_visits := v_visits + 1;
        continue when v_next = any(p_exclude)
            or exists (select 1 from courier.breakers b
                       where b.destination = v_next and (b.state <> 'closed' or b.not_before > now()))
            or exists (select 1 from courier.destinations d where d.destination = v_next and d.gated)
            or not courier.has_due_job(v_next, p_queue, false, null);
        return query select t, null::text
                     from courier.claim_take(v_next, p_queue, false, p_worker, p_lease_ms,
                                             least(v_left, p_per_destination), null) t;
        get diagnostics v_got = row_count;
        v_left := v_left - v_got;
    end loop;
    return query select null::courier.jobs, v_last;
end
$$;
revoke execute on function courier.claim_spread_round(text, int, int, uuid, int, text, text[], int) from public;
grant execute on function courier.claim_spread_round(text, int, int, uuid, int, text, text[], int)
    to courier_worker, courier_admin;

-- 1. The acknowledgements and the renewal of 0034, fenced by lease token. Same plans, same
-- settings, same behaviour; p_leases where 0034 took p_attempts.
create function courier.complete_jobs(p_ids bigint[], p_leases bigint[], p_statuses int[], p_durations_ms int[],
                                      p_worker uuid, p_archive boolean)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    -- p_statuses: the HTTP status, -1 for none.
    return query
    with done as (
        delete from courier.jobs j
        using unnest(p_ids, p_leases, p_statuses, p_durations_ms) as a(id, lease, status, duration_ms)
        where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
        returning j.id, j.kind, j.queue, j.destination, j.method, j.url, j.attempt, nullif(a.status, -1) as status,
                  a.duration_ms, j.idempotency_key, j.errors, j.created_at, j.signing_secret
    ),
    archived as (
        insert into courier.completed_jobs (id, kind, queue, destination, method, url, attempt, status, duration_ms,
                                            idempotency_key, errors, worker, created_at, signing_secret)
        select id, kind, queue, destination, method, url, attempt, status, duration_ms, idempotency_key, errors,
               p_worker, created_at, signing_secret
        from done
        where p_archive
    )
    select done.id from done;
end
$$;

create function courier.renew_leases(p_ids bigint[], p_leases bigint[], p_worker uuid, p_lease_ms int)
returns table (job_id bigint, job_lease bigint, cancel_requested boolean)
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    return query
    with mine as (
        select j.id
        from courier.jobs j
        join unnest(p_ids, p_leases) as w(id, lease) on j.id = w.id and j.lease_seq = w.lease
        where j.id = any(p_ids) and j.leased_by = p_worker
        order by j.id
        for update of j skip locked
    )
    update courier.jobs j
    set lease_expires_at = now() + p_lease_ms * interval '1 millisecond'
    where j.id = any(array(select mine.id from mine))
    returning j.id, j.lease_seq, j.cancel_requested_at is not null;
end
$$;

create function courier.hand_back_jobs(p_ids bigint[], p_leases bigint[], p_worker uuid, p_not_before_ms bigint)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
begin
    return query
    update courier.jobs j
    set state = 'available', attempt = j.attempt - 1, leased_by = null, lease_expires_at = null,
        run_at = greatest(j.run_at, now() + p_not_before_ms * interval '1 millisecond')
    from unnest(p_ids, p_leases) as a(id, lease)
    where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
    returning j.id;
end
$$;

create function courier.retry_jobs(p_ids bigint[], p_leases bigint[], p_delays_ms bigint[], p_errors text[],
                                   p_uses_attempt boolean[], p_worker uuid)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
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
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret)
        select id, 'cancelled', attempt - case when dl_uses_attempt then 0 else 1 end,
            errors || jsonb_build_array(dl_error::jsonb), 'cancelled', null, leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret
        from cancelled
        returning job_id
    )
    select retried.id from retried
    union all
    select recorded.job_id from recorded;
end
$$;

create function courier.dead_letter_jobs(p_ids bigint[], p_leases bigint[], p_reasons text[], p_errors text[],
                                         p_classes text[], p_statuses int[], p_worker uuid)
returns setof bigint
language plpgsql volatile rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set enable_nestloop = off
set enable_mergejoin = off
set jit = off
as $$
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
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret)
        select id, dl_reason, case when dl_never_ran then attempt - 1 else attempt end,
            case when dl_error = '' then errors else errors || jsonb_build_array(dl_error::jsonb) end,
            nullif(dl_class, ''), nullif(dl_status, -1), leased_by::text,
            kind, queue, priority, destination, method, url, headers, body, timeout_ms, expect_content_type,
            idempotency_key, unique_key, args, max_attempts, deadline, created_at, signing_secret
        from gone
        returning job_id
    )
    select recorded.job_id from recorded
    union all
    select early.id from early;
end
$$;

revoke execute on function courier.complete_jobs(bigint[], bigint[], int[], int[], uuid, boolean) from public;
grant execute on function courier.complete_jobs(bigint[], bigint[], int[], int[], uuid, boolean) to courier_worker, courier_admin;
revoke execute on function courier.renew_leases(bigint[], bigint[], uuid, int) from public;
grant execute on function courier.renew_leases(bigint[], bigint[], uuid, int) to courier_worker, courier_admin;
revoke execute on function courier.hand_back_jobs(bigint[], bigint[], uuid, bigint) from public;
grant execute on function courier.hand_back_jobs(bigint[], bigint[], uuid, bigint) to courier_worker, courier_admin;
revoke execute on function courier.retry_jobs(bigint[], bigint[], bigint[], text[], boolean[], uuid) from public;
grant execute on function courier.retry_jobs(bigint[], bigint[], bigint[], text[], boolean[], uuid) to courier_worker, courier_admin;
revoke execute on function courier.dead_letter_jobs(bigint[], bigint[], text[], text[], text[], int[], uuid) from public;
grant execute on function courier.dead_letter_jobs(bigint[], bigint[], text[], text[], text[], int[], uuid)
    to courier_worker, courier_admin;
