-- Courier 0015: retry defaults that survive an hour-long outage, and destinations an
-- enqueuer may name.
--
-- 1. max_attempts defaults to 25 (was 5: with a 1 s backoff base, jobs died about 10 s
--    after enqueue). With the workers' default backoff (exponential from 1 s, capped at
--    1 h, full jitter) 25 attempts span about 6.5 hours; see CourierCore.JobDefaults,
--    which states the same value for Swift (JobDefaultsAgreementTests compares them).
--    The functions are not restated here: their current definition is read back from
--    the catalog and only the default is changed, so whatever an earlier migration put
--    in their bodies stays exactly as it was.

alter table courier.jobs alter column max_attempts set default 25;

do $$
declare
    v_function regprocedure;
    v_before   text;
    v_after    text;
begin
    for v_function in
        select p.oid::regprocedure from pg_catalog.pg_proc p
        where p.pronamespace = 'courier'::regnamespace and p.proname in ('enqueue', 'enqueue_job')
    loop
        v_before := pg_catalog.pg_get_functiondef(v_function);
        v_after := regexp_replace(v_before, '(max_attempts integer DEFAULT )5\M', '\125');
        if v_after = v_before then
            raise exception 'courier 0015: % has no "max_attempts integer DEFAULT 5" to change', v_function;
        end if;
        -- CREATE OR REPLACE keeps the owner, the grants and (restated by the definition)
        -- SECURITY DEFINER and the search_path.
        execute v_after;
    end loop;
end
$$;

-- 2. An enqueuer (a role that is a member of courier_enqueue but of neither
--    courier_worker nor courier_admin) may not file a job under another destination's
--    circuit breaker: its failing jobs would then count against, and open, the breaker
--    of a partner it does not send to. Its explicit destination must be the URL's own
--    (scheme://host:port) or a sub-key of it (that, then '/' and a label), and a Swift
--    handler job's must be 'job:<kind>' or a sub-key of it. Workers and operators (and
--    superusers, and the owner of courier.jobs) may still name any label. The check runs only for enqueuers' rows (the
--    trigger's WHEN clause), so workers' and jobctl's inserts pay one role lookup.
create function courier.check_enqueuer_destination() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
    v_own text := case when new.kind = 'http' then courier.destination_of(new.url) else 'job:' || new.kind end;
begin
    if new.destination = v_own or left(new.destination, length(v_own) + 1) = v_own || '/' then
        return new;
    end if;
    -- The schema's owner (who ran the migrations) is an operator too, member or not.
    if pg_catalog.pg_has_role(session_user, (select c.relowner from pg_catalog.pg_class c where c.oid = 'courier.jobs'::regclass),
                              'MEMBER') then
        return new;
    end if;
    raise exception 'destination % is not this job''s own (%): an enqueuer may name only its URL''s destination or a sub-key of it (%/...)',
        to_json(left(new.destination, 128)), v_own, v_own
        using errcode = '42501', column = 'destination';
end
$$;
revoke execute on function courier.check_enqueuer_destination() from public;

create trigger jobs_enqueuer_destination_check
    before insert on courier.jobs
    for each row
    when (not (pg_catalog.pg_has_role(session_user, 'courier_worker', 'MEMBER')
               or pg_catalog.pg_has_role(session_user, 'courier_admin', 'MEMBER')))
    execute function courier.check_enqueuer_destination();
