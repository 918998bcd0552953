#!/usr/bin/env python3
"""Writes sql/schema/, today's courier schema in one file per table family, or checks it.

Usually run through scripts/schema.sh, which with no database URL starts a throw-away
PostgreSQL cluster, migrates it with `jobctl migrate` and passes its URL here.

    schema.py URL                 dump the migrated database at URL into sql/schema/
    schema.py URL --out DIR       ... into DIR
    schema.py URL --check DIR     compare DIR with what would be written; exit 1 when they
                                  differ (with a diff summary and the command that regenerates)

URL is a libpq URL or key=value conninfo string of a database that `jobctl migrate` has
brought up to date. Python 3 standard library only, plus the server's pg_dump and psql.

What it does:
  1. pg_dump --schema-only --schema=courier --no-owner --no-tablespaces (grants kept), and
     the attributes of the group roles those grants name, from pg_roles.
  2. Normalises the dump: no version banner, no SET lines, no \\restrict keys, no owners;
     every object is placed by name, never by OID or dump order, so the text is the same on
     every run and machine (with the same PostgreSQL major version).
  3. Splits it by FAMILIES below, the one place that says which file holds what: tables,
     sequences and domains by name; functions by exact name, else by name prefix.
     Indexes, constraints, defaults, triggers, comments and grants follow their object; a
     partition is one PARTITION OF line and the indexes of its own.
     Anything the mapping does not name goes to other.sql, with a warning on stderr.

The files are for reading: the migrations in sql/ build the database; these are never
applied. Exit status: 0 done (or up to date), 1 out of date (--check), 2 usage or failure.
"""

import difflib
import glob
import os
import re
import subprocess
import sys

REGENERATE = "scripts/schema.sh"
DEFAULT_DIR = "sql/schema"
CATCH_ALL = "other.sql"
ROLES = "roles.sql"

# The one mapping. Each family: its file, what the file holds (its opening comment), the
# tables / sequences / domains it holds by name (in reading order), and its functions by
# exact name or by name prefix. An exact name wins over a prefix, a longer prefix over a
# shorter one. roles.sql (the schema, its grants, default privileges, group roles) and
# other.sql (the catch-all) are filled by rule, not by name.
FAMILIES = [
    {
        "file": "jobs.sql",
        "about": "courier.jobs, the queue itself (waiting and running jobs), partitioned into a ring of slots "
                 "(jobs_0 .. jobs_3) and jobs_parked, with its unique keys (job_unique_keys), and courier.completed_jobs, "
                 "the optional archive of finished ones; the functions that enqueue (enqueue, enqueue_job), "
                 "claim (claim and its helpers), renew leases and acknowledge (complete_jobs, retry_jobs, "
                 "hand_back_jobs, refuse_jobs, dead_letter_jobs) jobs, reclaim the ring (reclaim_jobs, job_slot_of), "
                 "and the trigger that checks an enqueuer's destination.",
        "objects": ["jobs", "jobs_0", "jobs_1", "jobs_2", "jobs_3", "jobs_parked", "jobs_id_seq", "job_unique_keys",
                    "completed_jobs"],
        "functions": ["has_due_job", "complete_jobs", "retry_jobs", "hand_back_jobs", "refuse_jobs", "dead_letter_jobs",
                      "renew_leases", "check_enqueuer_destination", "queues_with_fairness_keys", "reclaim_jobs"],
        "prefixes": ["claim", "enqueue", "jobs_", "job_slot"],
    },
    {
        "file": "domains.sql",
        "about": "the value types (domains) that columns across the tables share, with their checks, "
                 "and the functions those checks call (headers, secret names, W3C trace context).",
        "objects": ["destination_key", "header_map", "http_method", "http_url", "idempotency_key",
                    "job_kind", "media_type", "queue_name", "request_body", "secret_name", "traceparent",
                    "tracestate", "unique_key", "fairness_key"],
        "functions": ["is_secret_name", "check_headers", "headers_plainly_valid", "is_traceparent", "is_tracestate",
                      "traceparent_rule", "tracestate_rule", "is_fairness_key", "fairness_key_rule"],
        "prefixes": [],
    },
    {
        "file": "breakers.sql",
        "about": "circuit breakers: courier.breakers (one row per destination), courier.breaker_events "
                 "(the transition log), courier.breaker_transition_totals, and the breaker_* functions "
                 "workers, the keeper and the prober call.",
        "objects": ["breakers", "breaker_events", "breaker_events_id_seq", "breaker_transition_totals"],
        "functions": ["breakers_holding_back", "holds_back"],
        "prefixes": ["breaker_"],
    },
    {
        "file": "tenants.sql",
        "about": "fairness keys: courier.tenants (a key's weight and cap; a key without a row has weight 1 "
                 "and no cap) and the tenant_* functions that set and clear it. The fair claim that reads it "
                 "(claim_fair) is in jobs.sql.",
        "objects": ["tenants"],
        "functions": [],
        "prefixes": ["tenant_"],
    },
    {
        "file": "destinations.sql",
        "about": "destination traffic control: courier.destinations (per-destination concurrency, rate, "
                 "slow start, retry budget, pause, signing secret) and the destination_* and traffic_* "
                 "functions that set and maintain it.",
        "objects": ["destinations"],
        "functions": ["destinations_inherit_limits", "destinations_pass_limits_on"],
        "prefixes": ["destination_", "traffic_"],
    },
    {
        "file": "dead_letters.sql",
        "about": "courier.dead_letters, jobs that failed for good, and replay_dead_letters. Rows arrive "
                 "through courier.dead_letter_jobs (jobs.sql), a worker's acknowledgement of a final failure.",
        "objects": ["dead_letters", "dead_letters_id_seq"],
        "functions": ["replay_dead_letters"],
        "prefixes": [],
    },
    {
        "file": "schedules.sql",
        "about": "recurring jobs: courier.schedules, courier.schedule_runs (one row per run enqueued) "
                 "and the schedule_* functions behind `jobctl schedules`.",
        "objects": ["schedules", "schedule_runs"],
        "functions": [],
        "prefixes": ["schedule_"],
    },
    {
        "file": "workers.sql",
        "about": "courier.workers: one row per running jobworker, with its heartbeat, and fleet_slots, "
                 "the live workers' summed concurrency (what an uncapped slow start ramps up to).",
        "objects": ["workers"],
        "functions": ["fleet_slots"],
        "prefixes": [],
    },
    {
        "file": "queues.sql",
        "about": "courier.queue_settings (per-queue pause and settings) and queue_pause.",
        "objects": ["queue_settings"],
        "functions": [],
        "prefixes": ["queue_"],
    },
    {
        "file": "attempt_stats.sql",
        "about": "courier.attempt_stats, the attempt and retry counters behind the metrics, "
                 "and attempt_stats_add, which workers call to add to them.",
        "objects": ["attempt_stats"],
        "functions": [],
        "prefixes": ["attempt_stats_"],
    },
    {
        "file": CATCH_ALL,
        "about": "what belongs to no family: courier.schema_migrations, the ledger of applied migrations "
                 "(written by jobctl migrate), and any object the mapping in scripts/schema.py does not "
                 "name yet (the generator warns about each; add it to FAMILIES there).",
        "objects": ["schema_migrations"],
        "functions": [],
        "prefixes": [],
    },
]

ROLES_ABOUT = ("the courier schema itself, the group roles its grants name (created by migration 0006 when "
               "missing; roles belong to the whole cluster), who may use the schema, and the default "
               "privileges objects created later receive. Each object's own grants sit beside it in its "
               "family's file.")

# Entry kinds within one object, in reading order.
KIND_ORDER = ["SCHEMA", "TYPE", "DOMAIN", "TABLE", "VIEW", "MATERIALIZED VIEW", "SEQUENCE", "SEQUENCE OWNED BY",
              "DEFAULT", "CONSTRAINT", "CHECK CONSTRAINT", "FK CONSTRAINT", "INDEX", "TRIGGER", "RULE",
              "POLICY", "ROW SECURITY", "COMMENT", "ACL", "DEFAULT ACL"]
FUNCTION_KINDS = {"FUNCTION", "PROCEDURE", "AGGREGATE"}
# Kinds whose header Name starts with the object they belong to ("jobs jobs_pkey").
NAMED_AFTER_OWNER = {"DEFAULT", "CONSTRAINT", "CHECK CONSTRAINT", "FK CONSTRAINT", "TRIGGER", "RULE",
                     "POLICY", "ROW SECURITY"}


def fail(message):
    print(f"schema: {message}", file=sys.stderr)
    sys.exit(2)


def warn(message):
    print(f"schema: warning: {message}", file=sys.stderr)


class Mapping:
    def __init__(self):
        self.objects = {}
        self.functions = {}
        self.prefixes = []
        self.order = {}
        for family in FAMILIES:
            for index, name in enumerate(family["objects"]):
                self._claim(self.objects, name, family["file"])
                self.order[name] = index
            for name in family["functions"]:
                self._claim(self.functions, name, family["file"])
            for prefix in family["prefixes"]:
                self.prefixes.append((prefix, family["file"]))
        self.prefixes.sort(key=lambda item: -len(item[0]))

    @staticmethod
    def _claim(table, name, file):
        if name in table:
            fail(f"FAMILIES names {name} twice ({table[name]} and {file})")
        table[name] = file

    def function_family(self, name):
        if name in self.functions:
            return self.functions[name]
        for prefix, file in self.prefixes:
            if name.startswith(prefix):
                return file
        return None


# ---------------------------------------------------------------------------------------
# Reading the database


def program(name):
    """pg_dump / psql from COURIER_PG_BINDIR, else the newest /usr/lib/postgresql/N/bin (as
    jobctl devdb chooses its server), else PATH."""
    explicit = os.environ.get("COURIER_PG_BINDIR")
    if explicit:
        return os.path.join(explicit, name)
    candidates = []
    for path in glob.glob(f"/usr/lib/postgresql/*/bin/{name}"):
        version = path.split("/")[4]
        if version.isdigit() and os.access(path, os.X_OK):
            candidates.append((int(version), path))
    if candidates:
        return max(candidates)[1]
    return name


def run(arguments):
    try:
        result = subprocess.run(arguments, capture_output=True, text=True)
    except FileNotFoundError:
        fail(f"{arguments[0]} not found: install the PostgreSQL client (scripts/install-deps.sh)")
    if result.returncode != 0:
        fail(f"{os.path.basename(arguments[0])} failed (exit {result.returncode}):\n{result.stderr.strip()}")
    return result.stdout


def psql(url, sql):
    output = run([program("psql"), "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                  "-d", url, "-c", sql])
    return [line.split("\t") for line in output.splitlines() if line]


def dump(url):
    return run([program("pg_dump"), "--schema-only", "--schema=courier", "--no-owner", "--no-tablespaces",
                "--dbname", url])


# ---------------------------------------------------------------------------------------
# Parsing and normalising the dump


class Entry:
    def __init__(self, name, kind, index):
        self.name = name
        self.kind = kind
        self.index = index
        self.lines = []

    def body(self):
        lines = list(self.lines)
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines)

    def render(self):
        return f"--\n-- Name: {self.name}; Type: {self.kind}\n--\n\n{self.body()}\n"


HEADER = re.compile(r"^-- (?:Data for )?Name: (?P<name>.*); Type: (?P<kind>[^;]+); Schema: [^;]*(?:; Owner: .*)?$")
DROPPED = [
    re.compile(r"^\\(?:un)?restrict\b"),                 # pg_dump 17.6/16.10/15.14+: random keys
    re.compile(r"^SET \w+ = .*;$"),                       # session settings between entries
    re.compile(r"^SELECT pg_catalog\.set_config\('search_path', '', false\);$"),
    re.compile(r"^ALTER .* OWNER TO .*;$"),               # in case --no-owner leaves any
]


def parse(text):
    """The dump's entries, each with its pg_dump header Name and Type. The banner, SET lines,
    \\restrict lines and the closing line are dropped (never inside a function's body)."""
    entries = []
    current = None
    lines = text.splitlines()
    i = 0
    in_body = False
    while i < len(lines):
        line = lines[i]
        header = HEADER.match(lines[i + 1]) if line == "--" and i + 2 < len(lines) and lines[i + 2] == "--" else None
        if header:
            current = Entry(header["name"], header["kind"], len(entries))
            entries.append(current)
            in_body = False
            i += 3
            continue
        if line.startswith("-- PostgreSQL database dump complete"):
            current = None
        elif current is not None:
            if in_body or not any(pattern.match(line) for pattern in DROPPED):
                current.lines.append(line)
            if current.kind in FUNCTION_KINDS:
                # A function's $$ (or $tag$) body is kept whole, whatever its lines look like.
                for _ in re.findall(r"\$[A-Za-z_]*\$", line):
                    in_body = not in_body
        i += 1
    # Drop the "--" line that opens the closing trailer after the last entry.
    for entry in entries:
        while entry.lines and entry.lines[-1] in ("--", ""):
            entry.lines.pop()
    return entries


def unquote(name):
    return name.strip().strip('"')


def collapse_partitions(entries):
    """A partition restates its parent's columns, checks and indexes: each is shown as one
    CREATE TABLE ... PARTITION OF (with its storage options), and only the indexes the
    parent's do not cover are kept."""
    bounds = {}
    for entry in entries:
        if entry.kind == "TABLE ATTACH":
            found = re.search(r"ALTER TABLE ONLY courier\.(\"?\w+\"?) ATTACH PARTITION courier\.(\"?\w+\"?) (.*);$", entry.body())
            if found:
                bounds[unquote(found.group(2))] = (unquote(found.group(1)), found.group(3))
    covered = set()
    for entry in entries:
        if entry.kind == "INDEX ATTACH":
            found = re.search(r"ATTACH PARTITION courier\.(\"?\w+\"?);$", entry.body())
            if found:
                covered.add(unquote(found.group(1)))
    kept = []
    for entry in entries:
        if entry.kind in ("TABLE ATTACH", "INDEX ATTACH") or (entry.kind == "INDEX" and unquote(entry.name) in covered):
            continue
        name = unquote(entry.name)
        if entry.kind == "TABLE" and name in bounds:
            parent, bound = bounds[name]
            options = re.search(r"^WITH \((.*)\);$", entry.body(), re.M)
            entry.lines = [f"CREATE TABLE courier.{name} PARTITION OF courier.{parent} {bound}"
                           + (f"\nWITH ({options.group(1)})" if options else "") + ";"]
        kept.append(entry)
    return kept


class Placed:
    """Entries sorted into families: family file -> anchor -> list of entries."""

    def __init__(self, mapping):
        self.mapping = mapping
        self.families = {}
        self.unknown = set()

    def add(self, file, anchor, entry):
        self.families.setdefault(file, {}).setdefault(anchor, []).append(entry)


def place(entries, mapping):
    # First pass: which table owns each sequence and index, so that their own entries,
    # comments and grants can follow it.
    owner_of = {}
    for entry in entries:
        body = "\n".join(entry.lines)
        if entry.kind in ("SEQUENCE", "SEQUENCE OWNED BY"):
            found = re.search(r"ALTER TABLE (?:ONLY )?courier\.(\"?\w+\"?) ALTER COLUMN", body) or \
                re.search(r"OWNED BY courier\.(\"?\w+\"?)\.", body)
            if found:
                owner_of[unquote(entry.name)] = unquote(found.group(1))
        elif entry.kind == "INDEX":
            found = re.search(r" ON (?:ONLY )?courier\.(\"?\w+\"?) ", body)
            if found:
                owner_of[unquote(entry.name)] = unquote(found.group(1))

    placed = Placed(mapping)

    def place_object(name, entry):
        name = owner_of.get(name, name)  # a sequence or index follows its table
        file = mapping.objects.get(name)
        if file is None:
            placed.unknown.add(f"{entry.kind.lower()} courier.{name}")
            file = CATCH_ALL
        placed.add(file, ("object", name), entry)

    def place_function(name, entry):
        file = mapping.function_family(name)
        if file is None:
            placed.unknown.add(f"function courier.{name}")
            file = CATCH_ALL
        placed.add(file, ("function", name), entry)

    for entry in entries:
        kind, name = entry.kind, entry.name
        if kind in ("SCHEMA", "DEFAULT ACL") or (kind in ("ACL", "COMMENT") and name.startswith("SCHEMA ")):
            placed.add(ROLES, ("schema", kind), entry)
        elif kind in FUNCTION_KINDS:
            place_function(unquote(name.split("(")[0]), entry)
        elif kind in ("ACL", "COMMENT"):
            # "TABLE jobs", "FUNCTION claim(p_queue text, ...)", "COLUMN jobs.state", "CONSTRAINT c ON t",
            # "INDEX i", "SEQUENCE s", "DOMAIN d", "TRIGGER t ON tbl".
            what, _, rest = name.partition(" ")
            if what in FUNCTION_KINDS:
                place_function(unquote(rest.split("(")[0]), entry)
            elif " ON " in rest:
                place_object(unquote(rest.split(" ON ")[-1]), entry)
            elif what == "COLUMN":
                place_object(unquote(rest.split(".")[0]), entry)
            else:
                place_object(unquote(rest), entry)
        elif kind in NAMED_AFTER_OWNER:
            place_object(unquote(name.split(" ")[0]), entry)
        elif kind in ("TABLE", "VIEW", "MATERIALIZED VIEW", "SEQUENCE", "SEQUENCE OWNED BY", "DOMAIN", "TYPE",
                      "INDEX"):
            place_object(unquote(name), entry)
        else:
            placed.unknown.add(f"{kind.lower()} {name}")
            placed.add(CATCH_ALL, ("object", name), entry)
    return placed


def kind_rank(entry):
    return KIND_ORDER.index(entry.kind) if entry.kind in KIND_ORDER else len(KIND_ORDER)


def entry_key(entry):
    """Within one object: its definition, then what hangs off it, its comments, its grants.
    A function's overloads come first, then their comments and grants."""
    return (-1 if entry.kind in FUNCTION_KINDS else kind_rank(entry), entry.name, entry.index)


# ---------------------------------------------------------------------------------------
# Roles


def role_names(entries):
    names = set()
    for entry in entries:
        if entry.kind not in ("ACL", "DEFAULT ACL"):
            continue
        for line in entry.lines:
            for found in re.finditer(r"\b(?:TO|FROM) (\"?[\w$]+\"?)(?: WITH GRANT OPTION)?;", line):
                names.add(unquote(found.group(1)))
    names.discard("PUBLIC")
    return sorted(names)


def roles_text(url, names):
    """CREATE ROLE and ALTER ROLE lines in pg_dumpall's form for the group roles the grants
    name (not the schema's owner, the role that ran the migrations), and the memberships
    among them."""
    owner = psql(url, "select nspowner::regrole::text from pg_namespace where nspname = 'courier'")[0][0]
    names = [name for name in names if name != owner]
    for name in names:
        if not re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
            fail(f"unexpected role name {name!r} in the grants")
    if not names:
        return ""
    listed = ", ".join(f"'{name}'" for name in names)
    rows = psql(url, f"""
        select rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication,
               rolbypassrls, rolconnlimit
        from pg_roles where rolname in ({listed}) order by rolname""")
    lines = []
    for row in rows:
        name, flags, limit = row[0], [value == "t" for value in row[1:8]], row[8]
        words = ["SUPERUSER", "INHERIT", "CREATEROLE", "CREATEDB", "LOGIN", "REPLICATION", "BYPASSRLS"]
        attributes = " ".join(word if on else "NO" + word for word, on in zip(words, flags))
        if limit != "-1":
            attributes += f" CONNECTION LIMIT {limit}"
        lines.append(f"CREATE ROLE {name};")
        lines.append(f"ALTER ROLE {name} WITH {attributes};")
    memberships = psql(url, f"""
        select r.rolname, m.rolname from pg_auth_members a
        join pg_roles r on r.oid = a.roleid join pg_roles m on m.oid = a.member
        where r.rolname in ({listed}) and m.rolname in ({listed}) order by 1, 2""")
    for role, member in memberships:
        lines.append(f"GRANT {role} TO {member};")
    return "--\n-- Group roles (cluster-wide; from pg_roles, not pg_dump)\n--\n\n" + "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Writing


def opening(file, about):
    words = about.split()
    wrapped, line = [], f"-- {file}:"
    for word in words:
        if len(line) + 1 + len(word) > 100:
            wrapped.append(line)
            line = "--"
        line += " " + word
    wrapped.append(line)
    return "\n".join(wrapped + [
        "--",
        f"-- Generated by {REGENERATE} from a freshly migrated database (every sql/NNNN_*.sql); do not edit.",
        f"-- Change the schema with a new migration in sql/, then regenerate: {REGENERATE}",
        "-- For reading: the migrations build the database (jobctl migrate); this file is never applied.",
    ])


def render(url):
    """The files, by name, as they should be committed."""
    mapping = Mapping()
    entries = collapse_partitions(parse(dump(url)))
    if not entries:
        fail("the dump holds no courier objects: is the database migrated (jobctl migrate)?")
    placed = place(entries, mapping)
    for name in sorted(placed.unknown):
        warn(f"{name} is in no family: it went to {CATCH_ALL}; name it in FAMILIES in scripts/schema.py")

    files = {}
    about = {family["file"]: family["about"] for family in FAMILIES}
    about[ROLES] = ROLES_ABOUT
    for file in [family["file"] for family in FAMILIES] + [ROLES]:
        anchors = placed.families.get(file, {})
        parts = [opening(file, about[file])]
        if file == ROLES:
            roles = roles_text(url, role_names(entries))
            if roles:
                parts.append(roles)
            schema_entries = [entry for anchor in anchors.values() for entry in anchor]
            parts += [entry.render() for entry in sorted(schema_entries, key=lambda e: (kind_rank(e), e.name))]
        else:
            objects = sorted((anchor for anchor in anchors if anchor[0] == "object"),
                             key=lambda anchor: (mapping.order.get(anchor[1], 1_000_000), anchor[1]))
            functions = sorted(anchor for anchor in anchors if anchor[0] == "function")
            for anchor in objects + functions:
                parts += [entry.render() for entry in sorted(anchors[anchor], key=entry_key)]
        files[file] = "\n\n".join(parts).rstrip("\n") + "\n"
    return files


def write(files, directory):
    os.makedirs(directory, exist_ok=True)
    changed = []
    for name, text in files.items():
        path = os.path.join(directory, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            changed.append(name)
    removed = []
    for path in sorted(glob.glob(os.path.join(directory, "*.sql"))):
        if os.path.basename(path) not in files:
            os.remove(path)
            removed.append(os.path.basename(path))
    summary = f"wrote {directory}/: {len(files)} files"
    summary += f", changed: {', '.join(changed)}" if changed else ", none changed"
    if removed:
        summary += f"; removed: {', '.join(removed)}"
    print(summary)


def check(files, directory):
    label = directory.rstrip("/") + "/"
    present = {os.path.basename(path) for path in glob.glob(os.path.join(directory, "*.sql"))}
    problems, diffs = [], []
    for name in sorted(set(files) | present):
        path = os.path.join(directory, name)
        if name not in present:
            problems.append(f"  {name}: missing (the schema has objects for it)")
            continue
        if name not in files:
            problems.append(f"  {name}: no longer generated (delete it)")
            continue
        committed = open(path, encoding="utf-8").read()
        if committed == files[name]:
            continue
        diff = list(difflib.unified_diff(committed.splitlines(), files[name].splitlines(),
                                         f"{label}{name} (committed)", f"{label}{name} (generated)", lineterm=""))
        changes = diff[2:]  # after the ---/+++ file names
        added = sum(1 for line in changes if line.startswith("+"))
        dropped = sum(1 for line in changes if line.startswith("-"))
        problems.append(f"  {name}: differs (+{added} -{dropped} lines)")
        shown = diff[:60]
        if len(diff) > len(shown):
            shown.append(f"... {len(diff) - len(shown)} more diff lines")
        diffs.append("\n".join(shown))
    if not problems:
        print(f"{label} is up to date ({len(files)} files)")
        return 0
    print(f"{label} is out of date: run {REGENERATE}")
    print("\n".join(problems))
    for diff in diffs:
        print()
        print(diff)
    print()
    print(f"{label} is out of date: run {REGENERATE} (with no arguments it migrates a throw-away "
          f"database and rewrites {DEFAULT_DIR}/)")
    return 1


def main(arguments):
    url, out, check_dir = None, DEFAULT_DIR, None
    i = 0
    while i < len(arguments):
        argument = arguments[i]
        if argument in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if argument in ("--out", "--check"):
            if i + 1 >= len(arguments):
                fail(f"{argument} needs a directory")
            if argument == "--out":
                out = arguments[i + 1]
            else:
                check_dir = arguments[i + 1]
            i += 2
            continue
        if argument.startswith("-") or url is not None:
            fail(f"unexpected argument {argument!r} (usage: schema.py URL [--out DIR | --check DIR])")
        url = argument
        i += 1
    if url is None:
        fail("a database URL is required (scripts/schema.sh without one starts its own database)")
    files = render(url)
    if check_dir is not None:
        if not os.path.isdir(check_dir):
            print(f"{check_dir.rstrip('/')}/ does not exist: run {REGENERATE}")
            return 1
        return check(files, check_dir)
    write(files, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
