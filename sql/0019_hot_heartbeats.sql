-- Courier 0019: heartbeats are HOT updates.
-- A lease renewal changes only lease_expires_at. jobs_lease_idx indexed that column, so
-- every renewal wrote a new index entry (and a new heap tuple outside HOT): the index
-- and the table bloated with every heartbeat of every running job. The rescue, the only
-- reader, now finds running jobs through their worker (a column renewals never change)
-- and sorts the few expired ones itself; running jobs are bounded by the fleet's slots.
drop index courier.jobs_lease_idx;
create index jobs_running_idx on courier.jobs (leased_by) where state = 'running';
-- Room on each page for the new versions renewals write, so they stay HOT.
alter table courier.jobs set (fillfactor = 80);
