-- Courier 0002: what the worker runtime needs beyond the core tables.

-- Live workers. Each worker upserts its row at start and on every heartbeat, and
-- deletes it when it stops; rows of workers that died age out (see jobctl workers).
create table courier.workers (
    id                    uuid primary key,
    host                  text        not null,
    pid                   int         not null,
    queues                text[]      not null,
    concurrency           int         not null,
    version               text        not null,
    heartbeat_interval_ms int         not null,
    started_at            timestamptz not null default now(),
    heartbeat_at          timestamptz not null default now(),
    stopping_at           timestamptz
);

-- Enqueues a job of a kind other than 'http', handled by a Swift handler registered
-- with the worker. Same rules and defaults as courier.enqueue; destination defaults
-- to 'job:<kind>' so each kind gets its own circuit breaker.
create function courier.enqueue_job(
    kind            text,
    args            jsonb       default '{}',
    queue           text        default 'default',
    priority        int         default 0,
    run_at          timestamptz default now(),
    max_attempts    int         default 5,
    deadline        timestamptz default null,
    idempotency_key text        default gen_random_uuid()::text,
    unique_key      text        default null,
    destination     text        default null,
    timeout_ms      int         default 30000
) returns bigint
language plpgsql volatile as $$
#variable_conflict use_column
declare
    v_id bigint;
begin
    if enqueue_job.kind is null or enqueue_job.kind !~ '^[a-z][a-z0-9_.-]{0,63}$' or enqueue_job.kind = 'http' then
        raise exception 'courier.enqueue_job: kind must be a lower-case name other than http (use courier.enqueue for HTTP jobs)'
            using errcode = '22023', column = 'kind';
    end if;
    if enqueue_job.queue is null or enqueue_job.queue !~ '^[A-Za-z0-9_.:-]{1,64}$' then
        raise exception 'courier.enqueue_job: queue must be 1 to 64 characters of letters, digits, _ . : -'
            using errcode = '22023', column = 'queue';
    end if;
    if enqueue_job.max_attempts is null or enqueue_job.max_attempts not between 1 and 1000 then
        raise exception 'courier.enqueue_job: max_attempts must be between 1 and 1000'
            using errcode = '22023', column = 'max_attempts';
    end if;
    if enqueue_job.deadline is not null and enqueue_job.deadline <= greatest(now(), coalesce(enqueue_job.run_at, now())) then
        raise exception 'courier.enqueue_job: deadline must be later than now and than run_at'
            using errcode = '22023', column = 'deadline';
    end if;
    loop
        insert into courier.jobs (kind, args, queue, priority, run_at, max_attempts, deadline, destination,
                                  idempotency_key, unique_key, timeout_ms, held_since)
        values (enqueue_job.kind, coalesce(enqueue_job.args, '{}'), enqueue_job.queue, coalesce(enqueue_job.priority, 0),
                coalesce(enqueue_job.run_at, now()), enqueue_job.max_attempts, enqueue_job.deadline,
                coalesce(enqueue_job.destination, 'job:' || enqueue_job.kind), enqueue_job.idempotency_key,
                enqueue_job.unique_key, coalesce(enqueue_job.timeout_ms, 30000),
                case when exists (select 1 from courier.breakers b
                                  where b.destination = coalesce(enqueue_job.destination, 'job:' || enqueue_job.kind)
                                    and b.state <> 'closed') then now() end)
        on conflict (unique_key) where unique_key is not null do nothing
        returning id into v_id;
        exit when v_id is not null;
        select j.id into v_id from courier.jobs j where j.unique_key = enqueue_job.unique_key;
        exit when v_id is not null;
    end loop;
    perform pg_notify('courier_jobs', enqueue_job.queue);
    return v_id;
end
$$;
