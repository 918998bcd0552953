-- Probes: a probe's lease is renewed like a job's lease while its request runs, and a
-- destination that answered with Retry-After gets no probe before that time.

-- Renews the probe lease a worker holds for a destination, if its generation is still
-- current. Returns whether it was renewed (false: the probe was taken over or settled).
create function courier.breaker_probe_renew(p_destination text, p_generation bigint, p_worker uuid, p_probe_lease_ms bigint)
returns boolean
-- Runs as its owner, like every breaker function since 0010: courier_worker cannot write courier.breakers.
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
    update courier.breakers
    set probe_lease_until = now() + p_probe_lease_ms * interval '1 millisecond'
    where destination = p_destination and generation = p_generation and probe_owner = p_worker and state = 'half_open'
    returning true
$$;

-- As in 0003, and a destination paused by Retry-After (not_before in the future) is not probed yet.
create or replace function courier.breaker_try_probe(p_destination text, p_worker uuid, p_probe_lease_ms bigint)
returns bigint
-- create or replace resets SECURITY DEFINER and search_path: restate 0010's.
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
    v_from text;
    v_generation bigint;
begin
    with current as (
        select state from courier.breakers where destination = p_destination
    )
    update courier.breakers b
    set state = 'half_open', changed_at = now(), probe_owner = p_worker,
        probe_lease_until = now() + p_probe_lease_ms * interval '1 millisecond', generation = b.generation + 1,
        open_ms_total = b.open_ms_total + case when b.state = 'open'
            then (extract(epoch from now() - b.changed_at) * 1000)::bigint else 0 end
    from current
    where b.destination = p_destination and not b.forced
      and (b.not_before is null or b.not_before <= now())
      and ((b.state = 'open' and b.open_until <= now()) or (b.state = 'half_open' and b.probe_lease_until < now()))
    returning current.state, b.generation into v_from, v_generation;
    if v_generation is not null then
        perform courier.breaker_transition_logged(p_destination, v_from, 'half_open',
            case when v_from = 'open' then 'cooldown_elapsed' else 'probe_lease_expired' end, v_generation, p_worker::text);
    end if;
    return v_generation;
end
$$;

-- As every Courier function: not for PUBLIC (a schema's default privileges cannot take
-- EXECUTE away from PUBLIC, so it is revoked here), for workers and admins.
revoke execute on function courier.breaker_probe_renew(text, bigint, uuid, bigint) from public;
grant execute on function courier.breaker_probe_renew(text, bigint, uuid, bigint) to courier_worker, courier_admin;
