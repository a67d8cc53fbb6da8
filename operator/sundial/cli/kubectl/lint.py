"""``kubectl sundial lint -f FILE|DIR|- [-R]``: check ScheduledJobs and ScheduleCalendars offline, as the cluster
would: the CRD's schema and CEL rules (:mod:`.crdchecks`), then the admission webhook's own validation
(``sundial.runtime.serving.admission.problems`` / ``calendar_problems``, with the chart's default
``--max-job-template-bytes``).

Every problem is one line naming the file, the object, the field and the problem, and who would refuse it
(``schema``, ``cel``, ``webhook``). Documents of other kinds are skipped. Exit code 0 when every object
passes, 1 when one does not or a file cannot be read (for CI).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sundial.cli.kubectl import manifestfiles, outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, PluginError, add_command

GROUP = "sundial.dev"


def register(commands: Any) -> None:
    sub = add_command(commands, "lint", run, "check ScheduledJob and ScheduleCalendar manifests offline")
    sub.add_argument(
        "-f", "--filename", action="append", required=True, metavar="FILE", help="a file, a directory or - (stdin)"
    )
    sub.add_argument("-R", "--recursive", action="store_true", help="walk the directories given with -f")
    outputs.flag(sub, "json")


@dataclass(frozen=True)
class Finding:
    """One problem: where (file, document, object), which field, what, and who would refuse it."""

    file: str
    document: int
    kind: str
    name: str
    field: str
    message: str
    by: str

    def line(self) -> str:
        where = f"{self.file}: {self.kind}/{self.name or '?'} (document {self.document})"
        return f"{where}: {self.field}: {self.message} [{self.by}]"


def check(name: str, text: str) -> tuple[list[Finding], int]:
    """The findings of one file and how many Sundial objects it holds."""
    import yaml  # noqa: PLC0415 - only lint reads YAML streams

    from sundial.cli.kubectl import crdchecks  # noqa: PLC0415 - jsonschema, celpy, only when linting
    from sundial.runtime.serving import admission  # noqa: PLC0415 - the webhook's own validation
    from sundial.runtime.settings import DEFAULT_MAX_JOB_TEMPLATE_BYTES  # noqa: PLC0415 - likewise

    found: list[Finding] = []
    checked = 0
    try:
        items = list(manifestfiles.documents(text))
    except yaml.YAMLError as error:
        return [Finding(name, 0, "?", "", "(file)", f"cannot be read as YAML: {error}", "lint")], 0
    for index, body in enumerate(items, start=1):
        if not isinstance(body, Mapping):
            found.append(Finding(name, index, "?", "", "(document)", "is not an object", "lint"))
            continue
        api_version, kind = str(body.get("apiVersion", "")), str(body.get("kind", ""))
        if api_version.partition("/")[0] != GROUP:
            continue
        checked += 1
        object_name = str((body.get("metadata") or {}).get("name", ""))

        def add(field: str, message: str, by: str, *, kind: str = kind, object_name: str = object_name) -> None:
            found.append(Finding(name, index, kind, object_name, field, message, by))  # noqa: B023 - index

        schema = crdchecks.packaged().get((api_version, kind))
        if schema is None:
            served = ", ".join(sorted(f"{v}/{k}" for v, k in crdchecks.packaged()))
            add("apiVersion", f"{api_version} {kind} is not served by this Sundial (served: {served})", "schema")
            continue
        refusals = schema.problems(body)
        for refusal in refusals:
            add(refusal.path, refusal.message, refusal.by)
        if refusals:
            continue  # the API server refuses it before the webhook is asked
        if kind == "ScheduledJob":
            refused = admission.problems(body, max_job_template_bytes=DEFAULT_MAX_JOB_TEMPLATE_BYTES)
        else:
            refused = admission.calendar_problems(body)
        for problem in refused:
            add(problem.path, problem.message, "webhook")
    return found, checked


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    try:
        from sundial.cli.kubectl import crdchecks  # noqa: F401, PLC0415 - is the lint extra installed?
    except ImportError as error:
        raise PluginError(
            f"lint needs the lint extra (jsonschema, cel-python): pip install 'sundial[lint]' ({error})"
        ) from None
    findings: list[Finding] = []
    objects = 0
    try:
        for name, text in manifestfiles.files(args.filename, recursive=args.recursive):
            found, checked = check(name, text)
            findings += found
            objects += checked
    except OSError as error:
        print(f"error: {error.filename}: {error.strerror}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps([finding.__dict__ for finding in findings], indent=4))
    else:
        for finding in findings:
            print(finding.line())
    print(f"{objects} Sundial object(s) checked, {len(findings)} problem(s)", file=sys.stderr)
    return 1 if findings else 0
