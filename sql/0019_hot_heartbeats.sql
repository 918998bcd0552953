-- Courier 0019: heartbeats are HOT updates; destinations derived as in Swift.
-- A lease renewal changes only lease_expires_at. jobs_lease_idx indexed that column, so
-- every renewal wrote a new index entry (and a new heap tuple outside HOT): the index
-- and the table bloated with every heartbeat of every running job. The rescue, the only
-- reader, now finds running jobs through their worker (a column renewals never change)
-- and sorts the few expired ones itself; running jobs are bounded by the fleet's slots.
drop index courier.jobs_lease_idx;
create index jobs_running_idx on courier.jobs (leased_by) where state = 'running';
-- Room on each page for the new versions renewals write, so they stay HOT.
alter table courier.jobs set (fillfactor = 80);

-- Destinations agree with the Swift door (RequestURL): an IPv6 host is written in its
-- canonical form ([::0001] and [0:0::1] are both [::1]), and a port must be 1 to 65535.
-- Still NULL for anything that is not an http(s) URL with a host.
create or replace function courier.destination_of(url text) returns text
language plpgsql immutable strict parallel safe as $$
declare
    m text[];
    v_host text;
begin
    m := regexp_match(url, '^(https?)://(\[[0-9A-Fa-f:.]+\]|[^:/?#\[\]@]+)(?::([0-9]{1,5}))?(?:[/?#]|$)', 'i');
    if m is null or (m[3] is not null and m[3]::int not between 1 and 65535) then
        return null;
    end if;
    v_host := lower(m[2]);
    if left(v_host, 1) = '[' then
        begin
            v_host := '[' || host(substr(v_host, 2, length(v_host) - 2)::inet) || ']';
        exception when invalid_text_representation then
            return null;
        end;
    end if;
    return lower(m[1]) || '://' || v_host || ':' || coalesce(m[3], case lower(m[1]) when 'https' then '443' else '80' end);
end
$$;
