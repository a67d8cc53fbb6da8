"""A fake kubectl for the plugin's tests: answers from an in-memory cluster and plays the operator's part."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from sundial.cli.kubectl import main, runner

NOW = datetime(2027, 3, 27, 0, 0, tzinfo=UTC)
#: What kubectl 1.3x writes to stderr when the API server refuses connections (client-go's discovery logs
#: each attempt through klog before kubectl's own summary).
REFUSED = (
    "\n".join(
        f'E1201 23:00:36.55{i}554   21350 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API '
        'group list: Get \\"https://127.0.0.1:1/api?timeout=32s\\": dial tcp 127.0.0.1:1: connect: connection refused"'
        for i in range(5)
    )
    + "\nThe connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n"
)


def scheduled_job(name: str = "report", namespace: str = "team-a", **spec: Any) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"u-{name}",
            "generation": 1,
            "creationTimestamp": "2027-03-20T00:00:00Z",
        },
        "spec": {"jobTemplate": template, **spec},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Scheduled",
                    "message": "ok",
                    "lastTransitionTime": "2027-03-26T00:00:00Z",
                }
            ],
            "lastScheduleTime": "2027-03-26T23:30:00Z",
            "nextScheduleTime": "2027-03-27T03:00:00Z",
            "deadLetters": [
                {
                    "scheduledTime": "2027-03-26T01:30:00Z",
                    "attempts": 3,
                    "reason": "MaxAttemptsExceeded",
                    "trigger": "schedule",
                    "deadLetteredAt": "2027-03-26T02:00:00Z",
                }
            ],
        },
    }


class FakeKubectl:
    """Records kubectl invocations; ``annotate`` is handled at once, like a quick operator would."""

    def __init__(self, *objects: dict[str, Any], operator: bool = True) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objects}
        self.jobs: list[dict[str, Any]] = []
        self.calls: list[tuple[str, ...]] = []
        self.operator = operator
        self.namespace: str | None = "team-a"
        self.base = ["kubectl"]
        self.unreachable = False
        self.calendars: dict[str, dict[str, Any]] = {}
        #: What ``get -w`` sees after the listing: the objects of the changes, in order.
        self.changes: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []

    def run(self, *args: str, namespaced: bool = True) -> str:
        self.calls.append(args)
        if self.unreachable:
            raise runner.failure(REFUSED, 1)
        verb = args[0]
        if verb == "annotate":
            obj = self.objects[args[2]]
            key, _, value = args[3].partition("=")
            obj["metadata"].setdefault("annotations", {})[key] = value
            if self.operator:
                self._operate(obj, key, value)
            return json.dumps(obj)
        if verb == "patch":
            obj = self.objects[args[2]]
            obj["spec"].update(json.loads(args[5])["spec"])
            return json.dumps(obj)
        if verb == "get" and args[1] == "jobs" and "-o" not in args:
            return "NAME   STATUS\n" + "".join(f"{job['metadata']['name']}   Running\n" for job in self.jobs)
        if verb == "get" and "jsonpath={.items[*].metadata.name}" in args:
            return " ".join(self.objects)
        if verb == "get":
            return json.dumps(self._get(args[1:]))
        raise AssertionError(f"unexpected kubectl {args}")

    def _get(self, args: tuple[str, ...]) -> Any:
        raw = args[args.index("-l") + 1] if "-l" in args else None
        selected = set(raw.partition(" in (")[2].rstrip(")").split(",")) if raw and " in (" in raw else None
        selector = raw.partition("=")[2] if raw and selected is None else None
        words = [a for a in args if not a.startswith("-") and a != "json" and "=" not in a and a != raw]
        resource, names = words[0], words[1:]
        resource = "jobs" if resource == "jobs.batch" else resource
        if resource == "events":
            uid = next(a.rpartition("=")[2] for a in args if a.startswith("--field-selector=involvedObject.uid="))
            return {"kind": "List", "items": [e for e in self.events if e["involvedObject"]["uid"] == uid]}
        if resource == "jobs":
            if names:
                return next(j for j in self.jobs if j["metadata"]["name"] == names[0])
            return {
                "kind": "List",
                "items": [
                    j
                    for j in self.jobs
                    if j["metadata"]["labels"][plugin_label()] in (selected if selected is not None else {selector})
                ],
            }
        if resource == runner.RESOURCE:
            if len(names) == 1:
                if names[0] not in self.objects:
                    raise runner.PluginError(f'scheduledjobs.sundial.dev "{names[0]}" not found')
                return self.objects[names[0]]
            chosen = [self.objects[n] for n in names] if names else list(self.objects.values())
            if raw is not None:  # key=value selectors only
                key, _, value = raw.partition("=")
                chosen = [o for o in chosen if (o["metadata"].get("labels") or {}).get(key) == value]
            return {"kind": "List", "items": chosen}
        if resource == "schedulecalendars.sundial.dev":
            namespace = next(a.partition("=")[2] for a in args if a.startswith("--namespace="))
            return {
                "kind": "List",
                "items": [c for c in self.calendars.values() if c["metadata"]["namespace"] == namespace],
            }
        if resource == "customresourcedefinition":
            return {"spec": {"versions": [{"name": "v1alpha1", "served": True, "storage": True}]}, "metadata": {}}
        if resource == "deployments":
            return {"items": []}
        raise AssertionError(f"unexpected get {args}")

    def _operate(self, obj: dict[str, Any], key: str, value: str) -> None:
        from sundial.model import names  # noqa: PLC0415

        status = obj["status"]
        if key == names.TRIGGER_ANNOTATION:
            status["lastHandledTrigger"] = value
            name = obj["metadata"]["name"]
            self.jobs.append(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {
                        "name": f"{names.dns_label_prefix(name, room=40)}-m1806105600-{len(self.jobs) + 1}",
                        "labels": {names.SCHEDULED_JOB_LABEL: names.scheduled_job_label_value(name)},
                        "annotations": {names.TRIGGER_ANNOTATION: "manual"},
                        "ownerReferences": [{"kind": "ScheduledJob", "name": name, "controller": True}],
                    },
                }
            )
        if key == names.REDRIVE_ANNOTATION:
            status["lastHandledRedrive"] = value
            status["deadLetters"] = []
        if key == names.BACKFILL_ANNOTATION:
            request = json.loads(value)
            status["lastHandledBackfill"] = request["token"]
            refused = "runAt" in obj["spec"]
            progress = {"token": request["token"], "from": request["from"], "to": request["to"], "done": True}
            progress |= (
                {"message": "refused: a one-off has no schedule"} if refused else {"started": 2, "alreadyRun": 1}
            )
            status["backfills"] = [*status.get("backfills", []), progress]

    def get(self, name: str) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", runner.RESOURCE, name, "-o", "json"))
        return body

    def stream(self, *args: str, namespaced: bool = True) -> Iterator[dict[str, Any]]:
        """``kubectl get -w -o json``: each listed object, then each of ``changes``."""
        self.calls.append((*args, "-o", "json"))
        listing = self._get((*args[1:], "-o", "json"))
        yield from [*listing["items"], *self.changes]

    def get_json(self, *args: str, namespaced: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", *args, "-o", "json", namespaced=namespaced))
        return body


def plugin_label() -> str:
    from sundial.model import names  # noqa: PLC0415

    return names.SCHEDULED_JOB_LABEL


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run a plugin command line against a fake kubectl; returns (exit code, stdout, stderr)."""

    def go(fake: FakeKubectl, *argv: str) -> tuple[int, str, str]:
        _, rest = runner.split_global_flags(list(argv))
        args = main.build_parser().parse_args(rest)
        try:
            code = args.handler(args, fake, lambda: NOW)
        except runner.PluginError as error:
            print(f"error: {error}", file=sys.stderr)
            code = 1
        out, err = capsys.readouterr()
        return code, out, err

    return go


@pytest.fixture
def cluster() -> FakeKubectl:
    """One ScheduledJob ``report`` in ``team-a``, nightly at 02:30 Berlin time, with one dead letter."""
    return FakeKubectl(copy.deepcopy(scheduled_job(schedule="30 2 * * *", timeZone="Europe/Berlin")))


@pytest.fixture
def new_cluster() -> Callable[..., FakeKubectl]:
    """``new_cluster({"name": ..., **spec}, ..., operator=True)``: a fake cluster with those ScheduledJobs."""

    def make(*specs: dict[str, Any], operator: bool = True) -> FakeKubectl:
        objects = [scheduled_job(**spec) for spec in specs]
        return FakeKubectl(*objects, operator=operator)

    return make


class InstalledCluster:
    """A fake kubectl for ``kubectl sundial check``: Sundial installed and healthy until a test breaks a part
    (``crds``, ``deployment``, ``pods``, ``webhook``, ``policies``, ``leases``, ``events``)."""

    def __init__(self, now: datetime = NOW) -> None:
        self.namespace: str | None = "team-a"
        self.calls: list[tuple[str, ...]] = []
        self.crds = {
            name: {"status": {"conditions": [{"type": "Established", "status": "True"}]}}
            for name in ("scheduledjobs.sundial.dev", "schedulecalendars.sundial.dev")
        }
        self.deployment: dict[str, Any] = {
            "metadata": {"namespace": "sundial-system", "name": "sundial"},
            "spec": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"args": ["--shards=2", "--lease-name-prefix=sundial"]}]}},
            },
            "status": {"readyReplicas": 2},
        }
        self.pods: list[dict[str, Any]] = []
        #: What the dry run meets: "refuses" (the webhook answers), "admits", or an error message.
        self.webhook = "refuses"
        self.policies = ["sundial-fencing", "sundial-fencing-label"]
        self.bindings = ["sundial-fencing", "sundial-fencing-label"]
        renewed = now.strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        self.leases = [
            {
                "metadata": {"name": f"sundial-shard-{i}"},
                "spec": {"holderIdentity": f"sundial-{i}", "renewTime": renewed, "leaseDurationSeconds": 15},
            }
            for i in range(2)
        ]
        self.events: list[dict[str, Any]] = []
        self.stdin: list[str] = []

    def run(self, *args: str, namespaced: bool = True, stdin: str | None = None) -> str:
        self.calls.append(args)
        if args[:2] == ("create", "--dry-run=server"):
            self.stdin.append(stdin or "")
            if self.webhook == "refuses":
                raise runner.PluginError(
                    'admission webhook "validate.scheduledjobs.sundial.dev" denied the request: '
                    "ScheduledJob.sundial.dev is invalid: spec.schedule: never fires"
                )
            if self.webhook != "admits":
                raise runner.PluginError(self.webhook)
            return "scheduledjob.sundial.dev/sundial-check-x created (server dry run)\n"
        return json.dumps(self._get(args[1:]))

    def _get(self, args: tuple[str, ...]) -> Any:
        resource = args[0]
        if resource == "customresourcedefinition":
            if args[1] not in self.crds:
                raise runner.PluginError(f'customresourcedefinitions.apiextensions.k8s.io "{args[1]}" not found')
            return self.crds[args[1]]
        if resource == "deployments":
            return {"items": [self.deployment]}
        if resource == "pods":
            return {"items": self.pods}
        if resource == "validatingadmissionpolicies":
            return {"items": [{"metadata": {"name": n}} for n in self.policies]}
        if resource == "validatingadmissionpolicybindings":
            return {"items": [{"metadata": {"name": n}, "spec": {"policyName": n}} for n in self.bindings]}
        if resource == "leases":
            return {"items": self.leases}
        if resource == "events":
            return {"items": self.events}
        raise AssertionError(f"unexpected get {args}")

    def get_json(self, *args: str, namespaced: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", *args, "-o", "json", namespaced=namespaced))
        return body


class FakeCronJobCluster:
    """A namespace with CronJobs, Jobs and ScheduledJobs for the hand-over (``kubectl sundial import
    --hand-over``): ``patch`` honours a ``metadata.resourceVersion`` precondition (a 409 as kubectl prints it),
    ``create -f`` refuses an existing name. ``interfere`` runs before each patch (a controller's write)."""

    def __init__(self, namespace: str = "team-a") -> None:
        self.namespace: str | None = namespace
        self.cronjobs: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.scheduled_jobs: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, ...]] = []
        self.interfere: Callable[[FakeCronJobCluster], None] | None = None
        self.fail_on: str | None = None
        """A verb that fails (the hand-over stopped there)."""
        self._version = 100

    def bump(self, body: dict[str, Any]) -> None:
        self._version += 1
        body["metadata"]["resourceVersion"] = str(self._version)

    def run(self, *args: str, namespaced: bool = True) -> str:
        self.calls.append(args)
        verb = args[0]
        if verb == self.fail_on:
            raise runner.PluginError(f"kubectl {verb} failed: connection reset")
        words = [a for a in args[1:] if not a.startswith("-") and a not in ("json",)]
        if verb == "get" and words[0] == "cronjobs.batch":
            return json.dumps(self.cronjobs[words[1]])
        if verb == "get" and words[0] == "jobs.batch":
            return json.dumps({"kind": "List", "items": list(self.jobs.values())})
        if verb == "get" and words[0] == runner.RESOURCE:
            found = self.scheduled_jobs.get(words[1])
            return json.dumps(found) if found else ""
        if verb == "patch" and words[0] == "cronjobs.batch":
            if self.interfere is not None:
                self.interfere(self)
            body = self.cronjobs[words[1]]
            patch = json.loads(args[args.index("-p") + 1])
            if patch["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
                raise runner.failure(
                    f'Error from server (Conflict): Operation cannot be fulfilled on cronjobs.batch "{words[1]}": '
                    "the object has been modified; please apply your changes to the latest version and try again",
                    1,
                )
            body["metadata"].setdefault("annotations", {}).update(patch["metadata"]["annotations"])
            body["spec"].update(patch["spec"])
            self.bump(body)
            return json.dumps(body)
        if verb == "label" and words[0] == "jobs.batch":
            key, _, value = words[2].partition("=")
            self.jobs[words[1]]["metadata"].setdefault("labels", {})[key] = value
            return ""
        if verb == "create":
            with open(args[args.index("-f") + 1], encoding="utf-8") as file:
                manifest = json.load(file)
            name = manifest["metadata"]["name"]
            if name in self.scheduled_jobs:
                raise runner.PluginError(f'scheduledjobs.sundial.dev "{name}" already exists')
            manifest["metadata"]["uid"] = f"u-{name}"
            self.scheduled_jobs[name] = manifest
            return json.dumps(manifest)
        raise AssertionError(f"unexpected kubectl {args}")

    def get_json(self, *args: str, namespaced: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", *args, "-o", "json", namespaced=namespaced))
        return body
