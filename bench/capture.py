"""Capture ONE real ScheduledJob body for ``bench.memory``: ``python -m bench.capture [--out FILE]``.

A fresh sandbox; the object is created with ``kubectl apply --server-side`` (so ``metadata.managedFields``
is what server-side apply writes), the operator runs until it has written a status, and the object is read
back as the API server returns it (a LIST item, the shape the informers receive).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import env
from sundial_sandbox import Sandbox, install_crds

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "scheduledjob.json"
NAMESPACE = "capture"
CRD = "scheduledjobs.sundial.dev"
MANAGER = "argocd-controller"
AS_LISTED = ("-o", "json", "--show-managed-fields")

MANIFEST = """\
apiVersion: sundial.dev/v1alpha1
kind: ScheduledJob
metadata:
  name: nightly-report-000001
  namespace: capture
  labels:
    app.kubernetes.io/name: nightly-report
    app.kubernetes.io/part-of: reporting
    app.kubernetes.io/managed-by: argocd
    team: analytics
  annotations:
    owner.example.com/contact: analytics-oncall@example.com
    argocd.argoproj.io/tracking-id: reporting:sundial.dev/ScheduledJob:capture/nightly-report-000001
spec:
  schedule: "0 0 1 1 *"
  timeZone: Europe/Berlin
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 3
  failedJobsHistoryLimit: 1
  catchUp:
    window: 1h
  retry:
    maxAttempts: 3
    backoff:
      initial: 30s
      max: 10m
  jobTemplate:
    metadata:
      labels:
        app.kubernetes.io/name: nightly-report
        team: analytics
    spec:
      backoffLimit: 0
      activeDeadlineSeconds: 3600
      template:
        metadata:
          labels:
            app.kubernetes.io/name: nightly-report
        spec:
          restartPolicy: Never
          serviceAccountName: reporting
          securityContext:
            runAsNonRoot: true
            runAsUser: 65534
            seccompProfile:
              type: RuntimeDefault
          containers:
            - name: main
              image: registry.example.com/analytics/nightly-report:1.42.0
              args: ["--since=24h", "--output=s3://reports/nightly"]
              env:
                - name: LOG_LEVEL
                  value: info
                - name: REPORT_BUCKET
                  value: reports
              securityContext:
                allowPrivilegeEscalation: false
                readOnlyRootFilesystem: true
                capabilities:
                  drop: ["ALL"]
              resources:
                requests: {cpu: 100m, memory: 128Mi}
                limits: {memory: 256Mi}
"""


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", *args], input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout


def capture(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="sundial-capture-") as tmp:
        sandbox = Sandbox(Path(tmp) / "sandbox")
        kubeconfig = sandbox.start()
        operator: env.Operator | None = None
        try:
            install_crds(kubeconfig, env.REPO / "crds")
            kubectl(kubeconfig, "create", "namespace", NAMESPACE)
            kubectl(
                kubeconfig, "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-", stdin=MANIFEST
            )
            operator = env.start_operator(kubeconfig, Path(tmp), "--namespace", NAMESPACE, identity="capture")
            operator.wait_ready(timeout=120)
            deadline = time.monotonic() + 60
            while True:
                listed = json.loads(
                    kubectl(kubeconfig, "get", "scheduledjobs", "-n", NAMESPACE, "-o", "json", "--show-managed-fields")
                )
                item = listed["items"][0]
                if item.get("status") or time.monotonic() > deadline:
                    break
                time.sleep(1)
            if not item.get("status"):
                raise SystemExit("the operator wrote no status within 60 s")
        finally:
            if operator is not None:
                operator.stop()
            sandbox.stop()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(item, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(json.dumps(item, separators=(',', ':')))} bytes of compact JSON)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capture", description=__doc__)
    parser.add_argument("--out", type=Path, default=FIXTURE)
    capture(parser.parse_args(argv).out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
