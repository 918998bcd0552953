-- Courier 0041: a job that no worker's configuration can run is bounded (issue 43, item 2).
--
-- A worker that may not run a job (a private address without --allow-private-networks, a
-- secret or a handler it lacks) hands it back without using an attempt, for another worker
-- of a mixed fleet. Until now nothing remembered those hand-backs: the job came back every
-- 30 s for 24 h after its enqueue, and `jobctl show` could not say why it waited.
--
-- Now each refusal is written with the job:
--   * refusals: how many times in a row workers refused it since its last real attempt;
--   * refused_since: when the first of those refusals happened;
--   * refused_attempt: the attempts the job had used at that refusal, so a real attempt in
--     between (a capable worker ran it, and it came back as a retry) starts a new run;
--   * refusal: the last refusal's reason, as the refusing worker wrote it (no secret values:
--     a refusal names a secret or an address, never a resolved value).
-- The worker reads them from its claim and ends the job as a dead letter once the run is an
-- hour old or 120 refusals long (jobworker's LocalRefusal says which), so a job nobody can
-- run waits at most about an hour, not a day.
--
-- The columns are added without a default rewrite (a constant default is metadata only), and
-- courier.refuse_jobs is new: workers of 0040 still hand refused jobs back with
-- courier.hand_back_jobs, unchanged, during a rolling update.

alter table courier.jobs
    add column refusals int not null default 0,
    add column refused_since timestamptz,
    add column refused_attempt int,
    add column refusal text;

-- A refused job back to the queue, fenced by its lease like courier.hand_back_jobs, attempt
-- returned, not before now + p_not_before_ms, its refusal counted.
create function courier.refuse_jobs(p_ids bigint[], p_leases bigint[], p_worker uuid, p_not_before_ms bigint,
                                    p_reasons text[])
returns setof bigint
language plpgsql rows 100
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_bitmapscan = off
set jit = off
as $$
begin
    return query
    update courier.jobs j
    set state = 'available', attempt = j.attempt - 1, leased_by = null, lease_expires_at = null,
        run_at = greatest(j.run_at, now() + p_not_before_ms * interval '1 millisecond'),
        -- The same run of refusals while no attempt was used since its first one.
        refused_since = case when j.refusals > 0 and j.refused_attempt = j.attempt - 1
                             then j.refused_since else now() end,
        refusals = case when j.refusals > 0 and j.refused_attempt = j.attempt - 1
                        then j.refusals + 1 else 1 end,
        refused_attempt = j.attempt - 1,
        refusal = left(a.reason, 500)
    from unnest(p_ids, p_leases, p_reasons) as a(id, lease, reason)
    where j.id = any(p_ids) and j.id = a.id and j.lease_seq = a.lease and j.leased_by = p_worker
    returning j.id;
end
$$;

revoke all on function courier.refuse_jobs(bigint[], bigint[], uuid, bigint, text[]) from public;
grant execute on function courier.refuse_jobs(bigint[], bigint[], uuid, bigint, text[]) to courier_worker, courier_admin;
