-- Courier 0024: claiming stays fair across destinations without a traffic policy.
--
-- The plain claim (JobsTable.claimSQL) takes the runnable jobs of a queue in priority,
-- run_at, id order: a large backlog for one destination enqueued first is claimed before
-- anything that arrives behind it. courier.claim_spread is the other way in: it takes a
-- few runnable jobs per distinct destination, in destination order from a cursor, wrapping,
-- skipping the destinations it is told to exclude. Workers run it beside the plain claim
-- when their plain batches were all one destination, and for the slots a destination may
-- not fill alone (see ClaimPlanner); a worker with one destination never runs it.
--
-- The walk is a loose index scan: each step is one probe of jobs_destination_idx for the
-- next destination above the cursor and one probe for that destination's head runnable
-- jobs, so a destination's backlog of any size costs a step one descent, not a scan.
-- jobs_destination_idx gains (queue, priority, run_at, id) after its (destination,
-- held_since, gated) prefix for that head probe; the keeper's batches use the prefix as
-- before. One index entry per waiting job, as before: an enqueue writes the same number of
-- index entries, each a little wider.
drop index courier.jobs_destination_idx;
create index jobs_destination_idx on courier.jobs (destination, held_since, gated, queue, priority, run_at, id)
    where state = 'available';

-- The one lease-taking statement for one destination and queue: up to p_limit runnable jobs
-- (not held, gated as p_gated says, due), in the claim's order, skipping rows others hold;
-- any of them (p_retries null), only retries (true) or only first attempts (false).
-- p_gated is compared, not assumed, so one plan serves both kinds through
-- jobs_destination_idx (parameters cannot prove a partial index's predicate).
create function courier.claim_take(p_destination text, p_queue text, p_gated boolean, p_worker uuid, p_lease_ms int,
                                   p_limit int, p_retries boolean)
returns setof courier.jobs
language sql volatile set search_path = pg_catalog, pg_temp as $$
    update courier.jobs j
    set state = 'running', attempt = j.attempt + 1, leased_by = p_worker,
        lease_expires_at = now() + p_lease_ms * interval '1 millisecond', attempted_at = now()
    -- The picked ids as an array: the update then probes the primary key per id. (Joined
    -- to a CTE instead, the generic plan hashed a sequential scan of every job.)
    where j.id = any(array(
        select c.id from courier.jobs c
        where c.destination = p_destination and c.held_since is null and c.gated = p_gated and c.queue = p_queue
          and c.state = 'available' and c.run_at <= now()
          and (p_retries is null or (c.attempt > 0) = p_retries)
        -- The index's own order (its leading columns are fixed above): with the parameters
        -- unknown to the planner (a SQL function's plan is generic), only this ORDER BY keeps
        -- it from sorting every row of a large destination instead of walking the index.
        order by c.destination, c.held_since, c.gated, c.queue, c.priority, c.run_at, c.id
        limit p_limit
        for update skip locked))
    returning j.*
$$;
revoke execute on function courier.claim_take(text, text, boolean, uuid, int, int, boolean) from public;

-- The gated claim's take is now the shared statement. (0014's own statement had the
-- generic plan's sequential scan of courier.jobs in its UPDATE, see above.)
create or replace function courier.claim_gated_take(p_destination text, p_queue text, p_worker uuid, p_lease_ms int,
                                                    p_limit int, p_retries boolean)
returns setof courier.jobs
language sql volatile set search_path = pg_catalog, pg_temp as $$
    select * from courier.claim_take(p_destination, p_queue, true, p_worker, p_lease_ms, p_limit, p_retries)
$$;

-- Leases up to p_limit runnable jobs of p_queue to p_worker, at most p_per_destination per
-- destination, destination by destination in text order starting after p_after (NULL: from
-- the first), wrapping once, skipping the destinations in p_exclude. Looks at no more than
-- p_visit destinations, so its cost is bounded whatever the number of destinations. The
-- plain claim's rules: nothing from a paused queue; a destination whose breaker is not
-- closed or that asked for no requests yet (Retry-After) is skipped, as are held jobs and
-- destinations with a traffic policy (courier.claim_gated's); rows other workers hold are
-- skipped (FOR UPDATE SKIP LOCKED). Returns the claimed rows as updated, in the order the
-- destinations were visited: the last row's destination is the next call's p_after.
create function courier.claim_spread(p_queue text, p_limit int, p_per_destination int, p_worker uuid, p_lease_ms int,
                                     p_after text, p_exclude text[], p_visit int)
returns setof courier.jobs
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
    v_left    int := p_limit;
    v_cursor  text := coalesce(p_after, '');
    v_wrapped boolean := p_after is null;
    v_visits  int := 0;
    v_next    text;
    v_got     int;
begin
    if p_limit <= 0 or p_per_destination <= 0
       or exists (select 1 from courier.queue_settings q where q.queue = p_queue and q.paused) then
        return;
    end if;
    while v_left > 0 and v_visits < p_visit loop
        -- The next destination with a waiting job: one descent of jobs_destination_idx.
        select min(j.destination) into v_next from courier.jobs j
        where j.state = 'available' and j.destination > v_cursor;
        if v_next is null or (v_wrapped and p_after is not null and v_next > p_after) then
            exit when v_wrapped;
            v_wrapped := true;
            v_cursor := '';
            continue;
        end if;
        v_cursor := v_next;
        v_visits := v_visits + 1;
        continue when v_next = any(p_exclude)
            or exists (select 1 from courier.breakers b
                       where b.destination = v_next and (b.state <> 'closed' or b.not_before > now()))
            or exists (select 1 from courier.destinations d where d.destination = v_next and d.gated);
        return query select * from courier.claim_take(v_next, p_queue, false, p_worker, p_lease_ms,
                                                      least(v_left, p_per_destination), null);
        get diagnostics v_got = row_count;
        v_left := v_left - v_got;
    end loop;
end
$$;
revoke execute on function courier.claim_spread(text, int, int, uuid, int, text, text[], int) from public;
grant execute on function courier.claim_spread(text, int, int, uuid, int, text, text[], int) to courier_worker, courier_admin;
