#!/usr/bin/env python3
"""Structural checks of the deploy kit (run by ops/deploy/check.sh, which runs the external validators).

Usage: check.py BINARY PROMQL_OUT
  BINARY       the built carbscan, asked for each subcommand's --help
  PROMQL_OUT   a rules file written here with every KEDA and Grafana query, for `promtool check rules`

Prints one line per problem and exits 1 when there is any; warnings (flags pending another branch) exit 0.
"""
import configparser
import json
import pathlib
import re
import shlex
import subprocess
import sys
import urllib.parse

import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Flags the kit uses that another branch adds (ops-metrics): missing from --help, they warn instead of failing.
# Once that branch is merged they are in --help, and the check below says to empty this list.
PENDING_FLAGS: set[str] = set()
# Seconds the supervisor waits past the worker's --grace before it kills: systemd's TimeoutStopSec and Kubernetes'
# terminationGracePeriodSeconds are both grace + this.
GRACE_MARGIN = 10

if len(sys.argv) != 3:
    sys.exit(__doc__)
BINARY, PROMQL_OUT = sys.argv[1], sys.argv[2]

problems: list[str] = []
warnings: list[str] = []
pending: dict[str, set[str]] = {}  # flag → subcommands whose --help lacks it


def problem(message: str) -> None:
    problems.append(message)


# ---------------------------------------------------------------------------------------------------------------
# Parsing: every YAML document and the JSON board.


def load_yaml(path: pathlib.Path) -> list:
    try:
        return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    except yaml.YAMLError as error:
        problem(f"{path.relative_to(ROOT)}: not YAML: {error}")
        return []


manifests = {p: load_yaml(p) for p in sorted((HERE / "kubernetes").glob("*.yaml"))}
for p in sorted((HERE / "prometheus").glob("*.yml")):
    load_yaml(p)
try:
    board = json.loads((HERE / "grafana/carbscan.json").read_text())
except json.JSONDecodeError as error:
    problem(f"grafana/carbscan.json: not JSON: {error}")
    board = {"panels": []}


# ---------------------------------------------------------------------------------------------------------------
# Metric names: every carbscan_ name a query uses is one the processes export.

names: dict[str, str] = {}
for line in (HERE / "metric-names.txt").read_text().splitlines():
    if line.strip() and not line.startswith("#"):
        name, kind = line.split()
        names[name] = kind
allowed = set(names)
for name, kind in names.items():
    if kind == "histogram":
        allowed |= {name + "_bucket", name + "_sum", name + "_count"}


def check_names(where: str, expr: str) -> None:
    for used in re.findall(r"\bcarbscan_[a-z0-9_]+", expr):
        if used not in allowed:
            problem(f"{where}: metric {used} is not in metric-names.txt")


queries: list[tuple[str, str]] = []  # (where, PromQL)

for group in yaml.safe_load((HERE / "prometheus/alerts.yml").read_text())["groups"]:
    for rule in group["rules"]:
        check_names(f"alerts.yml {rule.get('alert') or rule.get('record')}", rule["expr"])
for series in re.findall(r"series: '([^']+)'", (HERE / "prometheus/alerts-test.yml").read_text()):
    check_names("alerts-test.yml", series)

for panel in board.get("panels", []):
    for target in panel.get("targets", []):
        where = f"grafana panel '{panel.get('title')}'"
        check_names(where, target.get("expr", ""))
        queries.append((where, target.get("expr", "")))
        if target.get("datasource", {}).get("uid") != "${datasource}":
            problem(f"{where}: its datasource is not the board's ${{datasource}} variable")
    if panel.get("type") != "row" and not panel.get("targets"):
        problem(f"grafana panel '{panel.get('title')}': no query")
for variable in board.get("templating", {}).get("list", []):
    definition = variable.get("definition", "")
    check_names(f"grafana variable {variable['name']}", definition)


# ---------------------------------------------------------------------------------------------------------------
# The CLI: each command line in the kit names a real subcommand and only flags its --help lists.

help_cache: dict[str, set[str]] = {}


def flags_of(subcommand: str) -> set[str]:
    if subcommand not in help_cache:
        run = subprocess.run([BINARY, subcommand, "--help"], capture_output=True, text=True)
        if run.returncode != 0:
            problem(f"carbscan {subcommand} --help failed ({run.returncode}): no such subcommand?")
            help_cache[subcommand] = set()
        else:
            help_cache[subcommand] = set(re.findall(r"(--[a-z][a-z0-9-]*)", run.stdout))
    return help_cache[subcommand]


def check_command(where: str, argv: list[str]) -> None:
    if not argv or pathlib.PurePath(argv[0]).name != "carbscan":
        problem(f"{where}: does not run carbscan: {argv}")
        return
    if len(argv) < 2 or argv[1].startswith("-"):
        problem(f"{where}: no subcommand")
        return
    known = flags_of(argv[1])
    for arg in argv[2:]:
        if not arg.startswith("--"):
            continue
        flag = arg.split("=", 1)[0]
        if flag in known:
            if flag in PENDING_FLAGS:
                warnings.append(f"{flag} is in `carbscan {argv[1]} --help` now: empty PENDING_FLAGS in ops/deploy/check.py")
        elif flag in PENDING_FLAGS:
            pending.setdefault(flag, set()).add(argv[1])
        else:
            problem(f"{where}: `carbscan {argv[1]}` has no option {flag}")


for line in (HERE / "Procfile").read_text().splitlines():
    if line.strip() and not line.startswith("#"):
        process, command = line.split(":", 1)
        check_command(f"Procfile {process}", shlex.split(command))


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # keys are case-sensitive
    parser.read(HERE / "systemd" / name)
    return parser


units = {name: unit(name) for name in ("carbscan-api.service", "carbscan-scheduler.service", "carbscan-worker@.service")}
for name, parsed in units.items():
    service = parsed["Service"]
    for key in ("ExecStartPre", "ExecStart"):
        if key in service:
            check_command(f"{name} {key}", shlex.split(service[key]))
    for key, expected in (("KillSignal", "SIGTERM"), ("Restart", "on-failure")):
        if service.get(key) != expected:
            problem(f"{name}: {key}={service.get(key)}, expected {expected}")
    if "EnvironmentFile" not in service:
        problem(f"{name}: no EnvironmentFile")

worker_unit = units["carbscan-worker@.service"]["Service"]
unit_env = dict(pair.split("=", 1) for pair in shlex.split(worker_unit["Environment"]))
unit_grace = int(unit_env["WORKER_GRACE"])
if "${WORKER_GRACE}" not in worker_unit["ExecStart"]:
    problem("carbscan-worker@.service: ExecStart does not pass --grace ${WORKER_GRACE}")
if int(worker_unit["TimeoutStopSec"]) != unit_grace + GRACE_MARGIN:
    problem(f"carbscan-worker@.service: TimeoutStopSec={worker_unit['TimeoutStopSec']}, expected --grace {unit_grace} + {GRACE_MARGIN}")
unit_concurrency = int(unit_env["WORKER_CONCURRENCY"])
if int(worker_unit.get("LimitNOFILE", "0")) < unit_concurrency + 256:
    problem(f"carbscan-worker@.service: LimitNOFILE below what --concurrency {unit_concurrency} needs ({unit_concurrency} + 256)")
procfile_worker = next(l for l in (HERE / "Procfile").read_text().splitlines() if l.startswith("worker:"))
procfile_grace = re.search(r"--grace[ =](\d+)", procfile_worker)
if not procfile_grace or int(procfile_grace.group(1)) != unit_grace:
    problem(f"Procfile worker: --grace differs from the unit's {unit_grace}")


# ---------------------------------------------------------------------------------------------------------------
# Kubernetes: required fields, probes, grace periods, selectors, KEDA targets.

queues = set()
for kind_file in (ROOT / "jobs").glob("*.yml"):
    queue = re.search(r"^queue:\s*([A-Za-z0-9_-]+)", kind_file.read_text(), re.M)
    if queue:
        queues.add(queue.group(1))

objects = []
for path, docs in manifests.items():
    for doc in docs:
        where = f"{path.name} {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        for field in ("apiVersion", "kind"):
            if field not in doc:
                problem(f"{where}: no {field}")
        if doc.get("kind") != "Kustomization" and not doc.get("metadata", {}).get("name"):
            problem(f"{where}: no metadata.name")
        objects.append((path.name, where, doc))

kustomization = next(doc for name, _, doc in objects if doc.get("kind") == "Kustomization")
listed = set(kustomization["resources"])
for path in manifests:
    if path.name not in listed and path.name not in ("kustomization.yaml", "secret.example.yaml", "keda-redis-streams.yaml"):
        problem(f"kustomization.yaml does not list {path.name}")

deployments = {doc["metadata"]["name"]: (where, doc) for _, where, doc in objects if doc.get("kind") == "Deployment"}
for name in ("carbscan-api", "carbscan-scheduler"):
    if name not in deployments:
        problem(f"kubernetes: no Deployment {name}")
if not any(d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") == "worker" for _, d in deployments.values()):
    problem("kubernetes: no worker Deployment")

for name, (where, doc) in deployments.items():
    spec = doc["spec"]
    template = spec["template"]
    if spec["selector"]["matchLabels"].items() - template["metadata"]["labels"].items():
        problem(f"{where}: selector does not match the pod labels")
    annotations = template["metadata"].get("annotations", {})
    pod = template["spec"]
    main = pod["containers"][0]
    # A Deployment of another program (PgBouncer) gets the probe, port and grace checks, not carbscan's.
    ours = main.get("image") == "carbscan"
    if ours and (annotations.get("prometheus.io/scrape") != "true" or not annotations.get("prometheus.io/port")):
        problem(f"{where}: no prometheus.io scrape annotations")
    for container in pod.get("initContainers", []) + pod["containers"]:
        if container.get("image") == "carbscan":
            check_command(f"{where} container {container['name']}", ["carbscan"] + container.get("args", []))
    for probe in ("livenessProbe", "readinessProbe"):
        if probe not in main:
            problem(f"{where}: container {main['name']} has no {probe}")
    port_names = {p.get("name") for p in main.get("ports", [])} | {p["containerPort"] for p in main.get("ports", [])}
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        action = main.get(probe, {})
        port = (action.get("httpGet") or action.get("tcpSocket") or {}).get("port")
        if probe in main and port not in port_names:
            problem(f"{where}: {probe} port {port} is not a container port")
    if ours and str(annotations.get("prometheus.io/port")) not in {str(p["containerPort"]) for p in main.get("ports", [])}:
        problem(f"{where}: prometheus.io/port is not a container port")
    if "terminationGracePeriodSeconds" not in pod:
        problem(f"{where}: no terminationGracePeriodSeconds")
    args = main.get("args", [])
    if args[:1] == ["work"]:
        grace = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--grace=")), None)
        if grace is None and "--grace" in args:
            grace = int(args[args.index("--grace") + 1])
        if grace is None:
            problem(f"{where}: the worker's args set no --grace (the default may change under the manifests)")
        elif grace != unit_grace:
            problem(f"{where}: --grace {grace} differs from the systemd unit's {unit_grace}")
        elif pod["terminationGracePeriodSeconds"] != grace + GRACE_MARGIN:
            problem(f"{where}: terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} != --grace {grace} + {GRACE_MARGIN}")
        served = next((a.split("=", 1)[1] for a in args if a.startswith("--queues=")), None)
        for item in (served or "").split(","):
            queue = item.split(":")[0].split("=")[0]
            if queue and queue not in queues:
                problem(f"{where}: --queues names {queue}, not a queue of jobs/*.yml")

for _, where, doc in objects:
    if doc.get("kind") in ("PodDisruptionBudget", "Service"):
        selector = doc["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        if not any(selector.items() <= d["spec"]["template"]["metadata"]["labels"].items() for _, d in deployments.values()):
            problem(f"{where}: selects no Deployment's pods")
if not any(doc.get("kind") == "PodDisruptionBudget" for _, _, doc in objects):
    problem("kubernetes: no PodDisruptionBudget")

scaled = [(file, where, doc) for file, where, doc in objects if doc.get("kind") == "ScaledObject"]
if not {"keda-prometheus.yaml", "keda-redis-streams.yaml"} <= {file for file, _, _ in scaled}:
    problem("kubernetes: the Prometheus and the Redis Streams ScaledObjects are not both there")
for file, where, doc in scaled:
    if doc.get("apiVersion") != "keda.sh/v1alpha1":
        problem(f"{where}: apiVersion is not keda.sh/v1alpha1")
    target = doc["spec"]["scaleTargetRef"]["name"]
    if target not in deployments or deployments[target][1]["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") != "worker":
        problem(f"{where}: scaleTargetRef {target} is not a worker Deployment")
    served = next(
        (a.split("=", 1)[1] for a in deployments.get(target, ("", {"spec": {"template": {"spec": {"containers": [{}]}}}}))[1]["spec"]["template"]["spec"]["containers"][0].get("args", []) if a.startswith("--queues=")),
        "")
    served = {item.split(":")[0].split("=")[0] for item in served.split(",") if item}
    for trigger in doc["spec"]["triggers"]:
        metadata = trigger.get("metadata", {})
        if trigger["type"] == "prometheus":
            for field in ("serverAddress", "query", "threshold"):
                if field not in metadata:
                    problem(f"{where}: prometheus trigger without {field}")
            check_names(where, metadata.get("query", ""))
            queries.append((where, metadata.get("query", "")))
            named = set(re.findall(r'queue=~?"([^"]+)"', metadata.get("query", "")))
            named = {q for pattern in named for q in pattern.split("|")}
            if named != served:
                problem(f"{where}: the query's queues {sorted(named)} are not the ones the target serves {sorted(served)}")
        elif trigger["type"] == "redis-streams":
            stream = re.fullmatch(r"([^:{}]+):\{([^}]+)\}:stream", metadata.get("stream", ""))
            if not stream or stream.group(2) not in queues:
                problem(f"{where}: stream {metadata.get('stream')} is not PREFIX:{{queue}}:stream of a queue in jobs/")
            elif stream.group(2) not in served:
                problem(f"{where}: stream {metadata['stream']} is a queue {target} does not serve")
            if metadata.get("consumerGroup") != "workers":
                problem(f"{where}: consumerGroup is not `workers` (QueueKeys.group)")
            if not ("address" in metadata or "addressFromEnv" in metadata or "host" in metadata):
                problem(f"{where}: redis-streams trigger without address")
            if "lagCount" in metadata and "activationLagCount" not in metadata:
                problem(f"{where}: lagCount needs activationLagCount")
            if not ({"lagCount", "pendingEntriesCount", "streamLength"} & metadata.keys()):
                problem(f"{where}: redis-streams trigger without a threshold")
        else:
            problem(f"{where}: unexpected trigger type {trigger['type']}")
    streams = {t["metadata"].get("stream", "").split("{")[-1].split("}")[0] for t in doc["spec"]["triggers"] if t["type"] == "redis-streams"}
    if streams and streams != served:
        problem(f"{where}: streams {sorted(streams)} are not the queues {target} serves {sorted(served)}")


# ---------------------------------------------------------------------------------------------------------------
# Tracing: each CarbScan process names its own service, and the pods' OTLP endpoint is a Service of the kit.

traced: dict[tuple[str, str], str] = {}  # (kit, OTEL_SERVICE_NAME) -> where it is set


def traced_as(kit: str, where: str, service: str | None) -> None:
    if not service:
        problem(f"{where}: no OTEL_SERVICE_NAME (its spans would not say which process made them)")
    elif (kit, service) in traced:
        problem(f"{where}: OTEL_SERVICE_NAME {service} is also {traced[kit, service]}'s")
    else:
        traced[kit, service] = where


config_maps = {doc["metadata"]["name"]: doc.get("data", {}) for _, _, doc in objects if doc.get("kind") == "ConfigMap"}
for name, (where, doc) in deployments.items():
    main = doc["spec"]["template"]["spec"]["containers"][0]
    if main.get("image") != "carbscan":
        continue
    known = {key for source in main.get("envFrom", []) for key in config_maps.get(source.get("configMapRef", {}).get("name"), {})}
    env = {}
    for variable in main.get("env", []):
        # Kubernetes expands $(NAME) only from variables defined before (envFrom, then env in order); else it stays.
        for used in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", str(variable.get("value", ""))):
            if used not in known:
                problem(f"{where}: {variable['name']} uses $({used}), not defined before it")
        known.add(variable["name"])
        env[variable["name"]] = variable.get("value")
    traced_as("kubernetes", where, env.get("OTEL_SERVICE_NAME"))
for name, parsed in units.items():
    environment = dict(pair.split("=", 1) for pair in shlex.split(parsed["Service"].get("Environment", "")))
    traced_as("systemd", name, environment.get("OTEL_SERVICE_NAME"))

endpoint = config_maps.get("carbscan-config", {}).get("OTEL_EXPORTER_OTLP_ENDPOINT")
if endpoint:
    url = urllib.parse.urlsplit(endpoint)
    try:
        port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    except ValueError:
        port = None
    services = {doc["metadata"]["name"]: doc for _, _, doc in objects if doc.get("kind") == "Service"}
    if url.scheme not in ("http", "https") or port is None:
        problem(f"config.yaml: OTEL_EXPORTER_OTLP_ENDPOINT {endpoint} is not an http(s) URL (OTLP/HTTP)")
    elif url.path.rstrip("/").endswith("/v1/traces"):
        problem("config.yaml: OTEL_EXPORTER_OTLP_ENDPOINT ends in /v1/traces, which the exporter appends to it (a full URL goes in "
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)")
    elif "." not in (url.hostname or "") and url.hostname not in services:
        problem(f"config.yaml: OTEL_EXPORTER_OTLP_ENDPOINT names {url.hostname}, not a Service of the kit")
    elif url.hostname in services and port not in {p["port"] for p in services[url.hostname]["spec"]["ports"]}:
        problem(f"config.yaml: OTEL_EXPORTER_OTLP_ENDPOINT's port {port} is not a port of Service {url.hostname}")


# ---------------------------------------------------------------------------------------------------------------
# Every query, as recording rules, for promtool to parse (Grafana's variables given plain values).

with open(PROMQL_OUT, "w") as out:
    rules = []
    for index, (where, expr) in enumerate(queries):
        expr = expr.replace("$__rate_interval", "5m").replace("$queue", ".*")
        rules.append({"record": f"carbscan_check:query_{index}", "expr": expr})
    yaml.safe_dump({"groups": [{"name": "kit-queries", "rules": rules}]}, out)

for flag, subcommands in sorted(pending.items()):
    warnings.append(f"{flag} (used by the kit) is not in `carbscan {'|'.join(sorted(subcommands))} --help` yet: pending the ops-metrics branch")
for line in sorted(set(warnings)):
    print(f"check.py: warning: {line}")
for line in problems:
    print(f"check.py: {line}")
print(f"check.py: {len(queries)} queries, {len(objects)} manifests, {len(help_cache)} subcommands' flags checked")
sys.exit(1 if problems else 0)
