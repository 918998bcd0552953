-- Courier 0009: periodic jobs.
--
-- A schedule is a row holding its next run. Any worker enqueues a due run: in one
-- transaction it locks the row (FOR UPDATE SKIP LOCKED), enqueues the job, records the
-- run in courier.schedule_runs (primary key: schedule and slot, so a slot can never be
-- run twice) and advances next_run. A worker killed half-way leaves nothing: the
-- transaction rolls back and the row lock goes with the connection. No leader, no lease.
--
-- The cron grammar and time-zone rules live in one place, the workers' Swift code
-- (CourierCore's CronExpression and ScheduleRule). So the SQL functions below store a
-- schedule with next_run NULL, and the first worker (or jobctl) that sees the row
-- computes it; a row whose cron expression or time zone cannot be read gets last_error
-- and is not run until it is updated. `jobctl schedule add` checks everything first.

create table courier.schedules (
    name          text        primary key,
    cron          text,                         -- five-field cron expression or @macro, read in timezone
    every_seconds bigint,                       -- or a fixed interval: slots at multiples of it since 1970
    timezone      text        not null default 'UTC',   -- IANA name, for cron
    missed        text        not null default 'one',   -- after all workers were down: skip | one | all
    paused        boolean     not null default false,
    -- The job each run enqueues: the fields of courier.enqueue (url, method, headers,
    -- body, queue, priority, max_attempts, unique_key, destination, timeout_ms,
    -- expect_content_type), or kind and args (and queue, priority, max_attempts,
    -- unique_key, destination, timeout_ms) for a Swift handler as courier.enqueue_job
    -- takes them; optionally within_ms, a deadline that long after the slot. Each run's
    -- idempotency key is 'schedule:<name>:<slot in UTC>', so a template has none.
    template      jsonb       not null,
    next_run      timestamptz,                  -- NULL: computed by the first worker or jobctl that sees it
    last_error    text,                         -- why the schedule cannot run; cleared by an update
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now(),
    constraint schedules_name_check check (name ~ '^[A-Za-z0-9_.:-]+$' and length(name) between 1 and 128),
    constraint schedules_rule_check check ((cron is null) <> (every_seconds is null)),
    constraint schedules_cron_check check (length(cron) between 1 and 200),
    constraint schedules_every_seconds_check check (every_seconds between 1 and 31622400),
    constraint schedules_timezone_check check (length(timezone) between 1 and 64),
    constraint schedules_missed_check check (missed in ('skip', 'one', 'all')),
    constraint schedules_template_check check (jsonb_typeof(template) = 'object'
        and (template ? 'url') <> (template ? 'kind')
        and not template ?| array['run_at', 'deadline', 'idempotency_key'])
);
-- What the scheduler looks for: rows due (or never computed) that can run.
create index schedules_due_idx on courier.schedules (next_run nulls first) where not paused and last_error is null;

-- Each run: which slot, which job. Kept for the last 100 runs of each schedule.
create table courier.schedule_runs (
    schedule    text        not null references courier.schedules (name) on delete cascade on update cascade,
    slot        timestamptz not null,
    job_id      bigint      not null,
    enqueued_at timestamptz not null default now(),
    primary key (schedule, slot)
);

-- Checks a schedule's fields that SQL can check; cron and timezone are read by the workers.
create function courier.schedule_check(
    p_name text, p_cron text, p_every interval, p_missed text, p_template jsonb
) returns void
language plpgsql immutable as $$
begin
    if p_name is null or p_name !~ '^[A-Za-z0-9_.:-]+$' or length(p_name) > 128 then
        raise exception 'courier.schedule: name must be 1 to 128 characters of letters, digits, _ . : -'
            using errcode = '22023', column = 'name';
    end if;
    if (p_cron is null) = (p_every is null) then
        raise exception 'courier.schedule: give exactly one of cron and every'
            using errcode = '22023', column = 'cron';
    end if;
    if p_every is not null and (p_every < interval '1 second'
            or extract(epoch from p_every) <> floor(extract(epoch from p_every))) then
        raise exception 'courier.schedule: every must be a whole number of seconds, at least 1 second'
            using errcode = '22023', column = 'every';
    end if;
    if p_missed is null or p_missed not in ('skip', 'one', 'all') then
        raise exception 'courier.schedule: missed must be skip, one or all'
            using errcode = '22023', column = 'missed';
    end if;
    if p_template is null or jsonb_typeof(p_template) <> 'object' or (p_template ? 'url') = (p_template ? 'kind') then
        raise exception 'courier.schedule: template must be a JSON object with url (an HTTP job) or kind (a handler job)'
            using errcode = '22023', column = 'template';
    end if;
    if p_template ?| array['run_at', 'deadline', 'idempotency_key'] then
        raise exception 'courier.schedule: template must not set run_at, deadline or idempotency_key (each run gets its slot, within_ms and a key of its own)'
            using errcode = '22023', column = 'template';
    end if;
end
$$;

-- Adds a schedule. The first worker to see it computes its next run.
-- Example: select courier.schedule_add('nightly-report', cron => '0 2 * * *', timezone => 'Europe/Berlin',
--              template => '{"url": "https://reports.example.com/run", "method": "POST"}');
create function courier.schedule_add(
    name     text,
    template jsonb,
    cron     text     default null,
    every    interval default null,
    timezone text     default 'UTC',
    missed   text     default 'one',
    paused   boolean  default false
) returns void
language plpgsql volatile as $$
begin
    perform courier.schedule_check(schedule_add.name, schedule_add.cron, schedule_add.every, schedule_add.missed,
                                   schedule_add.template);
    insert into courier.schedules (name, cron, every_seconds, timezone, missed, paused, template)
    values (schedule_add.name, schedule_add.cron, extract(epoch from schedule_add.every)::bigint,
            coalesce(schedule_add.timezone, 'UTC'), schedule_add.missed, coalesce(schedule_add.paused, false),
            schedule_add.template);
exception when unique_violation then
    raise exception 'courier.schedule_add: schedule % exists (use courier.schedule_update)', name
        using errcode = '22023', column = 'name';
end
$$;

-- Changes a schedule; NULL arguments keep what is stored. Giving cron clears every and the
-- other way round. A change of the rule or time zone makes the next run be computed anew
-- (from now: slots between the old and the new rule are not caught up).
create function courier.schedule_update(
    name     text,
    template jsonb    default null,
    cron     text     default null,
    every    interval default null,
    timezone text     default null,
    missed   text     default null
) returns boolean
language plpgsql volatile as $$
declare
    v courier.schedules;
begin
    select * into v from courier.schedules s where s.name = schedule_update.name for update;
    if not found then
        return false;
    end if;
    if schedule_update.cron is not null and schedule_update.every is not null then
        raise exception 'courier.schedule_update: give at most one of cron and every'
            using errcode = '22023', column = 'cron';
    end if;
    perform courier.schedule_check(schedule_update.name,
        case when schedule_update.every is null then coalesce(schedule_update.cron, v.cron) end,
        case when schedule_update.cron is null
             then coalesce(schedule_update.every, make_interval(secs => v.every_seconds)) end,
        coalesce(schedule_update.missed, v.missed), coalesce(schedule_update.template, v.template));
    update courier.schedules s
    set cron = case when schedule_update.every is not null then null else coalesce(schedule_update.cron, s.cron) end,
        every_seconds = case when schedule_update.cron is not null then null
                             else coalesce(extract(epoch from schedule_update.every)::bigint, s.every_seconds) end,
        timezone = coalesce(schedule_update.timezone, s.timezone),
        missed = coalesce(schedule_update.missed, s.missed),
        template = coalesce(schedule_update.template, s.template),
        next_run = case when schedule_update.cron is not null or schedule_update.every is not null
                             or schedule_update.timezone is not null
                        then null else s.next_run end,
        last_error = null,
        updated_at = now()
    where s.name = schedule_update.name;
    return true;
end
$$;

-- Pausing stops the runs; resuming starts again from the next slot after now (the slots
-- of the pause are not caught up). Both return false for an unknown name.
create function courier.schedule_pause(name text) returns boolean
language sql volatile as $$
    with changed as (
        update courier.schedules s set paused = true, updated_at = now()
        where s.name = schedule_pause.name returning 1)
    select exists (select 1 from changed)
$$;

create function courier.schedule_resume(name text) returns boolean
language sql volatile as $$
    with changed as (
        update courier.schedules s
        set paused = false, next_run = case when s.paused then null else s.next_run end, last_error = null,
            updated_at = now()
        where s.name = schedule_resume.name returning 1)
    select exists (select 1 from changed)
$$;

-- Removes a schedule and its run history (the jobs it enqueued stay). False for an unknown name.
create function courier.schedule_remove(name text) returns boolean
language sql volatile as $$
    with removed as (delete from courier.schedules s where s.name = schedule_remove.name returning 1)
    select exists (select 1 from removed)
$$;

-- PostgreSQL's global default lets PUBLIC execute new functions, and a per-schema default
-- (0006) cannot take that away: as 0006 did for the functions before it, nobody but the
-- owner, courier_worker and courier_admin (0006's defaults) may call these.
revoke execute on function courier.schedule_check(text, text, interval, text, jsonb),
    courier.schedule_add(text, jsonb, text, interval, text, text, boolean),
    courier.schedule_update(text, jsonb, text, interval, text, text),
    courier.schedule_pause(text), courier.schedule_resume(text), courier.schedule_remove(text)
    from public;
