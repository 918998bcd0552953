-- Courier 0023: single-job enqueue under concurrency (issue 12).
--
-- A transaction that sent NOTIFY takes a database-wide lock at commit, so concurrent
-- single-job enqueues, each of which notified, committed one at a time (8-32 clients:
-- 148-176 jobs/s with the NOTIFY, 465-872 without). Now only one transaction at a time
-- per queue sends it: courier.enqueue notifies when it gets the queue's transaction-level
-- advisory lock (pg_try_advisory_xact_lock never waits), and the others commit without a
-- NOTIFY, so without the commit lock. A notification only wakes workers; a worker woken
-- claims, and claims once more shortly after (Claimer.Configuration.wakeFollowUp), so the
-- jobs of transactions that skipped the NOTIFY while another held the lock are picked up
-- then, and by the poll (default 1 s) at worst.
--
-- The function is otherwise 0008's (and 0015's grants and settings): its one NOTIFY line is
-- replaced in place, so the rest cannot drift from it. The lock is the two-key form, in a
-- space of its own (class 0x636f7572, "cour"), keyed by the queue's hash.
do $$
declare
    v_function regprocedure := 'courier.enqueue(text, text, jsonb, text, text, int, timestamptz, int, timestamptz, text, text, text, int, text, text)'::regprocedure;
    v_old text := $q$perform pg_notify('courier_jobs', enqueue.queue);$q$;
    v_new text := $q$if pg_try_advisory_xact_lock(1668248946, hashtext(enqueue.queue)) then
        perform pg_notify('courier_jobs', enqueue.queue);
    end if;$q$;
    v_definition text := pg_get_functiondef(v_function);
begin
    if position(v_old in v_definition) = 0 then
        raise exception 'courier 0023: courier.enqueue does not contain the NOTIFY line it replaces';
    end if;
    -- pg_get_functiondef keeps SECURITY DEFINER and SET search_path; grants survive CREATE OR REPLACE.
    execute replace(v_definition, v_old, v_new);
end
$$;
