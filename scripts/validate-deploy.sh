#!/usr/bin/env bash
# Validates deploy/ offline: every YAML file parses; the Kubernetes manifests pass the
# schemas bundled with the PyPI package kubernetes-validate (strict: unknown fields are
# errors) and Courier's own rules (grace vs terminationGracePeriodSeconds, probes on
# /readyz and /healthz, labels that match, settings that exist); the alert rules are
# well formed and name metrics the worker exports; the systemd units pass
# `systemd-analyze verify` (when present) and carry the required keys; the Dockerfile
# has its build and runtime stages. Prints what was checked; exits 1 on any failure.
#
# Python 3 with PyYAML and kubernetes-validate is used from the system when present,
# otherwise installed into a virtual environment (COURIER_DEPLOY_VENV, default
# /tmp/courier-deploy-venv). Without kubernetes-validate the schema step is reported as
# skipped and the structural checks still run.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${COURIER_DEPLOY_VENV:-/tmp/courier-deploy-venv}
python=python3
command -v python3 >/dev/null || { echo "validate-deploy: python3 is required" >&2; exit 1; }

has() { "$1" -c "import $2" >/dev/null 2>&1; }

if ! has python3 yaml || ! has python3 kubernetes_validate; then
    if [ -x "$venv/bin/python" ] && has "$venv/bin/python" yaml && has "$venv/bin/python" kubernetes_validate; then
        python="$venv/bin/python"
    else
        echo "validate-deploy: installing PyYAML and kubernetes-validate into $venv" >&2
        if python3 -m venv "$venv" >/dev/null 2>&1; then
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pyyaml >&2 || true
            "$venv/bin/python" -m pip install --quiet --disable-pip-version-check kubernetes-validate >&2 \
                || echo "validate-deploy: kubernetes-validate could not be installed; schema validation will be skipped" >&2
            python="$venv/bin/python"
        else
            # No venv module (Debian without python3-venv): install next to the script's run.
            python3 -m pip install --quiet --disable-pip-version-check --target "$venv/site" pyyaml kubernetes-validate >&2 || true
            export PYTHONPATH="$venv/site${PYTHONPATH:+:$PYTHONPATH}"
        fi
    fi
fi
has "$python" yaml || { echo "validate-deploy: PyYAML is not available and could not be installed" >&2; exit 1; }

exec "$python" - "$@" <<'PY'
import os, re, shutil, subprocess, sys, tempfile

import yaml

ROOT = os.getcwd()
DEPLOY = os.path.join(ROOT, "deploy")
errors = []
done = []
mark = 0


def fail(where, message):
    errors.append(f"{os.path.relpath(where, ROOT)}: {message}")


def ok(message, since=None):
    """Reports a section: ok when it added no error since `since` (default: the global `mark`,
    the error count when the section began)."""
    mark = globals()["mark"] if since is None else since
    done.append(message)
    print(f"{'ok  ' if len(errors) == mark else 'FAIL'}  {message}")


def rel(path):
    return os.path.relpath(path, ROOT)


def duration_seconds(text):
    """`250ms`, `30s`, `5m`, `2h`, or combinations such as `1m30s`."""
    text = str(text).strip()
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r}")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * scale[u] for n, u in parts)


# ---- What the code declares: jobworker's flags and the metric families it exports.
def source(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()

command_swift = source("Sources/CourierWorker/JobworkerCommand.swift")
flags = set(re.findall(r'option\("([a-z][a-z0-9-]*)"', command_swift)) | set(re.findall(r'\.flag\("([a-z][a-z0-9-]*)"', command_swift))
known_env = {"COURIER_" + f.upper().replace("-", "_") for f in flags} | {"DATABASE_URL"}
metrics_swift = source("Sources/CourierWorker/Metrics/PrometheusText+Worker.swift")
families = set(re.findall(r'"(courier_[a-z0-9_]+)"', metrics_swift))
histograms = set(re.findall(r'page\.family\("(courier_[a-z0-9_]+)", \.histogram', metrics_swift))
exported = set(families)
for h in histograms:
    exported |= {h + "_bucket", h + "_sum", h + "_count"}


def check_env_name(where, name):
    if name in known_env or name.startswith("COURIER_SECRET_") or name.startswith("PG"):
        return
    fail(where, f"{name} is not a jobworker setting (known: COURIER_<FLAG>, COURIER_SECRET_*, DATABASE_URL, PG*)")


# ---- 1. Every YAML file parses.
mark = len(errors)
documents = {}
for dirpath, _, names in os.walk(DEPLOY):
    for name in sorted(names):
        if not name.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(dirpath, name)
        try:
            with open(path, encoding="utf-8") as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
            documents[path] = docs
        except yaml.YAMLError as e:
            fail(path, f"YAML does not parse: {e}")
ok(f"YAML parses: {len(documents)} files, {sum(len(d) for d in documents.values())} documents")

# ---- 2. Kubernetes manifests.
mark = len(errors)
K8S = os.path.join(DEPLOY, "kubernetes")
manifests = []  # (path, document)
for path, docs in sorted(documents.items()):
    if os.path.dirname(path) != K8S or os.path.basename(path) == "kustomization.yaml":
        continue
    for doc in docs:
        manifests.append((path, doc))
        for key in ("apiVersion", "kind"):
            if not isinstance(doc, dict) or not doc.get(key):
                fail(path, f"a document lacks {key}")
        if not (isinstance(doc, dict) and isinstance(doc.get("metadata"), dict) and doc["metadata"].get("name")):
            fail(path, "a document lacks metadata.name")

schema_mark = len(errors)
try:
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version
    version = os.environ.get("COURIER_KUBERNETES_VERSION", latest_version())
    count = 0
    for path, doc in manifests:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
            count += 1
        except Exception as e:  # ValidationError, SchemaNotFoundError, ...
            message = getattr(e, "message", None) or str(e)
            fail(path, f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}: schema (Kubernetes {version}, strict): {message}")
    ok(f"Kubernetes schemas (kubernetes-validate, Kubernetes {version}, strict): {count} of {len(manifests)} documents", schema_mark)
except ImportError:
    print("skip  Kubernetes schema validation: kubernetes-validate is not installed (structural checks only)")
structure_mark = len(errors)


def by_kind(kind):
    return [(p, d) for p, d in manifests if isinstance(d, dict) and d.get("kind") == kind]


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


configmaps = {d["metadata"]["name"]: d.get("data", {}) for _, d in by_kind("ConfigMap")}
secrets = {d["metadata"]["name"]: set((d.get("stringData") or {}) | (d.get("data") or {})) for _, d in by_kind("Secret")}
for path, doc in by_kind("ConfigMap"):
    for name in (doc.get("data") or {}):
        check_env_name(path, name)

deployments = by_kind("Deployment")
if not deployments:
    fail(K8S, "no Deployment")
for path, deployment in deployments:
    deployment_mark = len(errors)
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    pod_labels = spec["template"]["metadata"].get("labels", {})
    if not labels_match(spec["selector"].get("matchLabels"), pod_labels):
        fail(path, "the selector does not match the pod labels")
    env = {}
    for container in pod["containers"]:
        for source_ref in container.get("envFrom", []):
            ref = (source_ref.get("configMapRef") or {}).get("name")
            if ref:
                if ref not in configmaps:
                    fail(path, f"envFrom names ConfigMap {ref}, which deploy/kubernetes does not define")
                env.update(configmaps.get(ref, {}))
        for item in container.get("env", []):
            check_env_name(path, item["name"])
            secret_ref = (item.get("valueFrom") or {}).get("secretKeyRef")
            if secret_ref and secret_ref["name"] in secrets and secret_ref["key"] not in secrets[secret_ref["name"]]:
                fail(path, f"{item['name']} refers to key {secret_ref['key']} missing from the example Secret {secret_ref['name']}")
            env[item["name"]] = item.get("value", "<from " + ("secret" if secret_ref else "ref") + ">")
        if "DATABASE_URL" not in env:
            fail(path, f"container {container['name']} gets no DATABASE_URL")
        elif not ((next((i for i in container.get("env", []) if i["name"] == "DATABASE_URL"), {}).get("valueFrom") or {}).get("secretKeyRef")):
            fail(path, "DATABASE_URL must come from a Secret")
        grace = duration_seconds(env.get("COURIER_SHUTDOWN_GRACE", "25s"))
        termination = pod.get("terminationGracePeriodSeconds", 30)
        if termination <= grace + 15:
            fail(path, f"terminationGracePeriodSeconds {termination} must exceed the shutdown grace {grace:g}s plus 15s for handing back jobs")
        address = env.get("COURIER_METRICS_ADDR")
        if not address:
            fail(path, "COURIER_METRICS_ADDR is not set: probes need the endpoint")
            continue
        metrics_port = int(str(address).rsplit(":", 1)[1])
        ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
        if metrics_port not in ports.values():
            fail(path, f"no containerPort {metrics_port} for COURIER_METRICS_ADDR {address}")
        for probe_name, wanted in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            probe = (container.get(probe_name) or {}).get("httpGet")
            if not probe:
                fail(path, f"{probe_name} must be an httpGet on {wanted}")
                continue
            if probe.get("path") != wanted:
                fail(path, f"{probe_name} checks {probe.get('path')}, not {wanted}")
            port = probe.get("port")
            if ports.get(port, port) != metrics_port:
                fail(path, f"{probe_name} port {port} is not the metrics port {metrics_port}")
        resources = container.get("resources") or {}
        if not resources.get("requests") or not resources.get("limits"):
            fail(path, "the worker container needs resource requests and limits")
        context = {**(pod.get("securityContext") or {}), **(container.get("securityContext") or {})}
        if not context.get("runAsNonRoot"):
            fail(path, "runAsNonRoot must be set")
    annotations = spec["template"]["metadata"].get("annotations", {})
    if annotations.get("prometheus.io/scrape") != "true" or annotations.get("prometheus.io/path") != "/metrics":
        fail(path, "pods should carry the prometheus.io scrape annotations")
    ok(f"{rel(path)}: Deployment {deployment['metadata']['name']}: grace {grace:g}s < terminationGracePeriodSeconds {termination}, "
       f"readiness /readyz, liveness /healthz on port {metrics_port}, env from ConfigMap and Secrets", deployment_mark)

    for ppath, pdb in by_kind("PodDisruptionBudget"):
        if not labels_match(pdb["spec"]["selector"].get("matchLabels"), pod_labels):
            fail(ppath, "the PodDisruptionBudget selects no worker pod")
    for spath, service in by_kind("Service"):
        if not labels_match(service["spec"].get("selector"), pod_labels):
            fail(spath, "the Service selects no worker pod")
        for port in service["spec"].get("ports", []):
            target = port.get("targetPort", port["port"])
            if target not in ports and target not in ports.values():
                fail(spath, f"targetPort {target} is not a port of the worker container")

if not by_kind("PodDisruptionBudget"):
    fail(K8S, "no PodDisruptionBudget")
jobs = by_kind("Job")
if not any("migrate" in " ".join(c.get("command", []) + c.get("args", [])) and "jobctl" in " ".join(c.get("command", []))
           for _, j in jobs for c in j["spec"]["template"]["spec"]["containers"]):
    fail(K8S, "no Job runs `jobctl migrate`")
for path, job in jobs:
    if job["spec"]["template"]["spec"].get("restartPolicy") not in ("OnFailure", "Never"):
        fail(path, "a Job's restartPolicy must be OnFailure or Never")
ok(f"Kubernetes structure: {len(manifests)} documents ({', '.join(sorted({d['kind'] for _, d in manifests}))}); "
   "PodDisruptionBudget and Service select the worker pods; migrate Job runs jobctl migrate", structure_mark)

kustomization = os.path.join(K8S, "kustomization.yaml")
if kustomization in documents:
    mark = len(errors)
    listed = documents[kustomization][0].get("resources", [])
    for resource in listed:
        if not os.path.exists(os.path.join(K8S, resource)):
            fail(kustomization, f"resource {resource} does not exist")
    kubectl = shutil.which("kubectl")
    if kubectl:
        result = subprocess.run([kubectl, "kustomize", K8S], capture_output=True, text=True)
        if result.returncode != 0:
            fail(kustomization, f"kubectl kustomize failed: {result.stderr.strip()}")
        else:
            rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
            ok(f"kubectl kustomize deploy/kubernetes renders {len(rendered)} documents")
    else:
        ok(f"kustomization lists {len(listed)} existing resources (kubectl not installed: not rendered)")

# ---- 3. Prometheus rules and scrape configuration.
PROM = os.path.join(DEPLOY, "prometheus")
alerts_path = os.path.join(PROM, "alerts.yml")
alerts = documents.get(alerts_path, [None])[0]
mark = len(errors)
names = []
if not isinstance(alerts, dict) or not isinstance(alerts.get("groups"), list):
    fail(alerts_path, "must be a mapping with a list of groups")
else:
    for group in alerts["groups"]:
        if not group.get("name") or not isinstance(group.get("rules"), list):
            fail(alerts_path, "every group needs a name and rules")
            continue
        for rule in group["rules"]:
            name = rule.get("alert")
            if not name or not rule.get("expr"):
                fail(alerts_path, f"rule {rule} needs alert and expr")
                continue
            names.append(name)
            expr = str(rule["expr"])
            if expr.count("(") != expr.count(")") or expr.count("{") != expr.count("}") or expr.count("[") != expr.count("]"):
                fail(alerts_path, f"{name}: unbalanced brackets in expr")
            for metric in re.findall(r"\b(courier_[a-z0-9_]+)\b", expr):
                if metric not in exported:
                    fail(alerts_path, f"{name}: {metric} is not a metric the worker exports")
            if "for" in rule:
                try:
                    duration_seconds(rule["for"])
                except ValueError as e:
                    fail(alerts_path, f"{name}: for: {e}")
            if (rule.get("labels") or {}).get("severity") not in ("critical", "warning", "info"):
                fail(alerts_path, f"{name}: labels.severity must be critical, warning or info")
            if not (rule.get("annotations") or {}).get("summary"):
                fail(alerts_path, f"{name}: annotations.summary is missing")
    if len(set(names)) != len(names):
        fail(alerts_path, "alert names repeat")
    wanted = {"breaker": "Breaker", "dead letters": "DeadLetters", "queue": "Queue", "no live workers": "NoLiveWorkers",
              "readiness": "NotReady"}
    for topic, fragment in wanted.items():
        if not any(fragment in n for n in names):
            fail(alerts_path, f"no alert about {topic}")
    ok(f"{rel(alerts_path)}: {len(names)} alerts ({', '.join(names)}); every courier_* metric they use is exported")

scrape_path = os.path.join(PROM, "prometheus.yml")
scrape = documents.get(scrape_path, [None])[0]
if isinstance(scrape, dict):
    mark = len(errors)
    jobs_named = [c.get("job_name") for c in scrape.get("scrape_configs", [])]
    if not all(jobs_named) or "courier-worker" not in jobs_named:
        fail(scrape_path, "scrape_configs need job names, one of them courier-worker (the alerts use it)")
    for rule_file in scrape.get("rule_files", []):
        if not os.path.exists(os.path.join(PROM, rule_file)):
            fail(scrape_path, f"rule file {rule_file} does not exist")
    ok(f"{rel(scrape_path)}: scrape jobs {', '.join(jobs_named)}")

# ---- 4. systemd units.
SYSTEMD = os.path.join(DEPLOY, "systemd")


def unit_keys(path):
    keys, section = {}, None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            key, _, value = line.partition("=")
            keys.setdefault((section, key.strip()), []).append(value.strip())
    return keys


def env_file(path):
    values = {}
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                values[key.strip()] = value.strip().strip("\"")
    return values


mark = len(errors)
worker_env = {}
for name in sorted(os.listdir(SYSTEMD)):
    if name.endswith(".env.example"):
        path = os.path.join(SYSTEMD, name)
        for key in env_file(path):
            check_env_name(path, key)
        if name == "worker.env.example":
            worker_env = env_file(path)

units = sorted(n for n in os.listdir(SYSTEMD) if n.endswith(".service"))
worker_unit = os.path.join(SYSTEMD, "courier-worker@.service")
if not os.path.exists(worker_unit):
    fail(SYSTEMD, "courier-worker@.service is missing")
else:
    keys = unit_keys(worker_unit)

    def value(key, section="Service"):
        return (keys.get((section, key)) or [None])[-1]

    required = {
        "Restart": "on-failure", "KillSignal": "SIGTERM", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
        "ProtectHome": "yes", "PrivateTmp": "yes",
    }
    for key, wanted in required.items():
        if value(key) != wanted:
            fail(worker_unit, f"{key}= must be {wanted}, is {value(key)}")
    if value("DynamicUser") != "yes" and not value("User"):
        fail(worker_unit, "run as DynamicUser=yes or a dedicated User=")
    if "/etc/courier/worker.env" not in (keys.get(("Service", "EnvironmentFile")) or []):
        fail(worker_unit, "EnvironmentFile=/etc/courier/worker.env is required")
    if not (value("ExecStart") or "").endswith("jobworker"):
        fail(worker_unit, "ExecStart must run jobworker")
    grace = duration_seconds(worker_env.get("COURIER_SHUTDOWN_GRACE", "25s"))
    stop = duration_seconds(value("TimeoutStopSec") or "90s")
    if stop <= grace + 15:
        fail(worker_unit, f"TimeoutStopSec {stop:g}s must exceed the shutdown grace {grace:g}s plus 15s")
    ok(f"{rel(worker_unit)}: Restart=on-failure, KillSignal=SIGTERM, TimeoutStopSec {stop:g}s > grace {grace:g}s + 15s, hardening keys present")

analyze = shutil.which("systemd-analyze")
if analyze:
    mark = len(errors)
    with tempfile.TemporaryDirectory() as scratch:
        for name in units:
            shutil.copy(os.path.join(SYSTEMD, name), scratch)
        result = subprocess.run([analyze, "verify", "--man=no"] + [os.path.join(scratch, n) for n in units],
                                capture_output=True, text=True)
        problems = []
        for line in (result.stdout + result.stderr).splitlines():
            # The binaries are installed on the target machine, not here.
            if re.search(r"Command /usr/local/bin/(jobworker|jobctl) is not executable", line):
                continue
            if line.strip():
                problems.append(line.strip())
        if problems:
            fail(SYSTEMD, "systemd-analyze verify: " + " | ".join(problems))
        else:
            ok(f"systemd-analyze verify: {', '.join(units)}")
else:
    print("skip  systemd-analyze is not installed: unit files checked for required keys only")

# ---- 5. Dockerfile.
dockerfile = os.path.join(DEPLOY, "Dockerfile")
with open(dockerfile, encoding="utf-8") as f:
    text = re.sub(r"\\\n", " ", f.read())
mark = len(errors)
instructions = []
for line in text.splitlines():
    line = line.strip()
    if line and not line.startswith("#"):
        word, _, rest = line.partition(" ")
        instructions.append((word.upper(), rest.strip()))
args = {}
stages = []
for word, rest in instructions:
    if word == "ARG" and not stages:
        key, _, default = rest.partition("=")
        args[key] = default
    elif word == "FROM":
        match = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest, re.IGNORECASE)
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), match.group(1))
        stages.append({"image": image, "name": match.group(2), "body": []})
    elif stages:
        stages[-1]["body"].append((word, rest))
if len(stages) < 2:
    fail(dockerfile, "needs a build stage and a runtime stage")
else:
    build, runtime = stages[0], stages[-1]
    build_runs = " ".join(r for w, r in build["body"] if w == "RUN")
    runtime_runs = " ".join(r for w, r in runtime["body"] if w == "RUN")
    if not build["image"].startswith("swift:"):
        fail(dockerfile, f"the build stage should use the Swift image, uses {build['image']}")
    for package in ("libpq-dev", "libcurl4-openssl-dev", "libssl-dev"):
        if package not in build_runs:
            fail(dockerfile, f"the build stage must install {package}")
    if "swift build -c release" not in build_runs:
        fail(dockerfile, "the build stage must run swift build -c release")
    if not re.match(r"debian:[a-z]+-slim$", runtime["image"]):
        fail(dockerfile, f"the runtime stage should be a slim Debian image, is {runtime['image']}")
    for package in ("libpq5", "libcurl4", "libssl3", "ca-certificates"):
        if not re.search(rf"\b{re.escape(package)}\b", runtime_runs):
            fail(dockerfile, f"the runtime stage must install {package}")
    users = [r for w, r in runtime["body"] if w == "USER"]
    if not users or users[-1].split(":")[0] in ("0", "root"):
        fail(dockerfile, "the runtime stage must switch to a non-root USER")
    entry = [r for w, r in runtime["body"] if w == "ENTRYPOINT"]
    if not entry or "jobworker" not in entry[-1]:
        fail(dockerfile, "ENTRYPOINT must be jobworker")
    names = {s["name"] for s in stages if s["name"]}
    for word, rest in runtime["body"]:
        match = re.search(r"--from=(\S+)", rest) if word == "COPY" else None
        if match and match.group(1) not in names:
            fail(dockerfile, f"COPY --from={match.group(1)} names no stage")
    for word, rest in build["body"]:
        if word == "COPY" and not rest.startswith("--"):
            for item in rest.split()[:-1]:
                if not os.path.exists(os.path.join(ROOT, item)):
                    fail(dockerfile, f"COPY {item}: no such path in the repository")
    ok(f"{rel(dockerfile)}: {len(stages)} stages ({build['image']} -> {runtime['image']}), non-root USER {users[-1] if users else '?'}, "
       "ENTRYPOINT jobworker")

# ---- 6. The guide names files that exist.
readme = os.path.join(DEPLOY, "README.md")
mark = len(errors)
with open(readme, encoding="utf-8") as f:
    guide = f.read()
referenced = set(re.findall(r"\b((?:kubernetes|systemd|prometheus)/[\w.@-]+\.(?:yaml|yml|service|example))", guide))
for path in sorted(referenced):
    if not os.path.exists(os.path.join(DEPLOY, path)):
        fail(readme, f"refers to {path}, which does not exist")
for topic in ("Connection budget", "PgBouncer", "session", "Scaling", "Upgrading", "systemd", "Kubernetes"):
    if topic not in guide:
        fail(readme, f"the guide does not cover {topic}")
ok(f"{rel(readme)}: {len(referenced)} referenced files exist; covers scaling, connections, PgBouncer, upgrades")

if errors:
    print(f"\nvalidate-deploy: {len(errors)} problem(s):", file=sys.stderr)
    for error in errors:
        print(f"FAIL  {error}", file=sys.stderr)
    sys.exit(1)
print(f"validate-deploy: all {len(done)} checks passed")
PY
