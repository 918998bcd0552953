-- Courier 0032: the traffic keeper's pass walks indexes, whatever the statistics say.
--
-- courier.traffic_maintain (0022) picks each batch with `... where c.destination = $1 and
-- c.state = 'available' and c.held_since is null limit $2 for update skip locked`. The
-- planner multiplies the selectivities of those columns as if they were independent. They
-- are not: behind an open breaker every waiting job of the destination is already held. With
-- 4.5M held jobs of one destination and 4.5M scheduled jobs of another (the backlog bench),
-- it expected 2.2M rows to match, chose a sequential scan that the LIMIT would cut short,
-- and read all 10M rows to find none: 3.2 s and 243k buffers per pass, every second, on
-- one of the database's two cores. Every statement of the pass has an index made for it
-- (jobs_destination_idx, jobs_held_idx, jobs_gated_idx, jobs_running_idx and the primary
-- keys), so sequential and bitmap scans are turned off for the function, as for
-- courier.claim (0031), and JIT with them (the scan's plan was costed at 375k, over
-- jit_above_cost, so with jit on it would be compiled as well).
alter function courier.traffic_maintain(int) set enable_seqscan = off;
alter function courier.traffic_maintain(int) set enable_bitmapscan = off;
alter function courier.traffic_maintain(int) set jit = off;
