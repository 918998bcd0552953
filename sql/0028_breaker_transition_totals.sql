-- Courier 0028: breaker transition totals that pruning cannot lower, read in O(1).
--
-- courier_breaker_transitions_total was a count(*) over courier.breaker_events on every
-- metrics sample: its cost grew with the events table, and since 0018 prunes events older
-- than --breaker-events-retention, the "counter" went down after each prune. Totals per
-- (from, to) are now kept beside the events, by the one function that logs a transition.
-- Each breaker function logs at most one transition per call (one statement, one
-- transaction), so a transaction locks at most one totals row: no lock-order cycle.

create table courier.breaker_transition_totals (
    from_state  text   not null,
    to_state    text   not null,
    transitions bigint not null,
    primary key (from_state, to_state)
);
insert into courier.breaker_transition_totals (from_state, to_state, transitions)
select from_state, to_state, count(*) from courier.breaker_events group by from_state, to_state;

create or replace function courier.breaker_transition_logged(
    p_destination text, p_from text, p_to text, p_reason text, p_generation bigint, p_worker text
) returns void
language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
    insert into courier.breaker_events (destination, from_state, to_state, reason, generation, worker)
    values (p_destination, p_from, p_to, p_reason, p_generation, p_worker);
    insert into courier.breaker_transition_totals (from_state, to_state, transitions)
    values (p_from, p_to, 1)
    on conflict (from_state, to_state) do update
    set transitions = courier.breaker_transition_totals.transitions + 1;
    select pg_notify('courier_breakers', p_destination || ' ' || p_to);
$$;

-- Workers read the totals; only the breaker functions (running as their owner) write them.
revoke all on courier.breaker_transition_totals from courier_worker;
grant select on courier.breaker_transition_totals to courier_worker;
grant all on courier.breaker_transition_totals to courier_admin;
