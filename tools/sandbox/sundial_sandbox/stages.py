"""kwok Stage rules of the sandbox: how fake nodes and their pods behave.

* Pods owned by a Job succeed (container exit code 0) once they have "run" for their duration.
* Pods labelled ``sandbox.sundial.dev/outcome: fail`` (put it on a Job's pod template) end
  ``Failed`` with a terminated container, exit code 1 (any owner).
* ``sandbox.sundial.dev/duration: "5s"`` (a Go duration) on a pod makes it stay Running that
  long before it succeeds or fails; without it pods finish as soon as they run.
* Other pods stay Running until deleted.

Adapted from kwok's default stages (kustomize/stage/node/fast, node/heartbeat, pod/fast).
"""

from __future__ import annotations

OUTCOME_LABEL = "sandbox.sundial.dev/outcome"
OUTCOME_FAIL = "fail"
DURATION_ANNOTATION = "sandbox.sundial.dev/duration"
FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
FAKE_NODE_VALUE = "fake"

#: Capacity of the fake node unless its object says otherwise.
NODE_CAPACITY: dict[str, str] = {"cpu": "1000", "memory": "10Ti", "pods": "10000"}

_NODE_CAPACITY_YAML = "".join(f"        {key}: {value}\n" for key, value in NODE_CAPACITY.items())

_NODE_CONDITIONS = """\
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
"""

NODE_STAGES = (
    """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
"""
    + _NODE_CONDITIONS
    + """\
      addresses:
      {{ with NodeIP }}
      - address: {{ . | Quote }}
        type: InternalIP
      {{ end }}
      {{ with NodeName }}
      - address: {{ . | Quote }}
        type: Hostname
      {{ end }}
      {{ with NodePort }}
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ . }}
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
"""
    + _NODE_CAPACITY_YAML
    + """\
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
"""
    + _NODE_CAPACITY_YAML
    + """\
      {{ end }}
      {{ $kwokVersion := printf "kwok-%s" Version }}
      nodeInfo:
        architecture: amd64
        bootID: ""
        containerRuntimeVersion: {{ $kwokVersion }}
        kernelVersion: {{ $kwokVersion }}
        kubeProxyVersion: {{ $kwokVersion }}
        kubeletVersion: {{ $kwokVersion }}
        machineID: ""
        operatingSystem: linux
        osImage: ""
        systemUUID: ""
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-heartbeat
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.phase'
      operator: In
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['True']
  delay:
    durationMilliseconds: 20000
    jitterDurationMilliseconds: 25000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
"""
    + _NODE_CONDITIONS
    + """\
  immediateNextStage: true
"""
)

_POD_READY = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ['Pending']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: {{ .conditionType | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        {{ if eq .restartPolicy "Always" }}
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
        {{ else }}
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
        {{ end }}
      {{ end }}
      {{ $hostIPs := NodeIPsWith .spec.nodeName }}
      {{ with $hostIPs }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
"""  # noqa: E501

# How long a Running pod "runs": the duration annotation (a Go duration), else immediately.
_DELAY = f"""\
  delay:
    durationMilliseconds: 0
    durationFrom:
      jq:
        expression: '.metadata.annotations["{DURATION_ANNOTATION}"]'
"""

_RUNNING_NOT_DELETED = """\
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ['Running']
"""


def _pod_finish_stage(*, name: str, selector: str, reason: str, exit_code: int, terminated: str, phase: str) -> str:
    """A Stage that ends a Running pod (after the optional duration) with one terminated state per container."""
    return (
        f"""\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: {name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
"""
        + _RUNNING_NOT_DELETED
        + selector
        + _DELAY
        + """\
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $startedAt := or .status.startTime $now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
"""
        + f"""\
      - lastTransitionTime: {{{{ $now | Quote }}}}
        reason: {reason}
        status: "False"
        type: Ready
      - lastTransitionTime: {{{{ $now | Quote }}}}
        reason: {reason}
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {exit_code}
            finishedAt: {{{{ $now | Quote }}}}
{terminated}            startedAt: {{{{ $startedAt | Quote }}}}
      {{{{ end }}}}
      phase: {phase}
"""
    )


_POD_COMPLETE = _pod_finish_stage(
    name="pod-complete",
    selector=f"""\
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: ['Job']
    - key: '.metadata.labels["{OUTCOME_LABEL}"]'
      operator: NotIn
      values: ['{OUTCOME_FAIL}']
""",
    reason="PodCompleted",
    exit_code=0,
    terminated="            reason: Completed\n",
    phase="Succeeded",
)

_POD_FAIL = _pod_finish_stage(
    name="pod-fail",
    selector=f"""\
    - key: '.metadata.labels["{OUTCOME_LABEL}"]'
      operator: In
      values: ['{OUTCOME_FAIL}']
""",
    reason="PodFailed",
    exit_code=1,
    terminated="            reason: Error\n            message: failed by the sandbox outcome label\n",
    phase="Failed",
)

_POD_DELETE = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    delete: true
"""

POD_STAGES = "---\n".join((_POD_READY, _POD_COMPLETE, _POD_FAIL, _POD_DELETE))

#: Everything kwok needs, as one multi-document YAML file.
ALL_STAGES = NODE_STAGES + "---\n" + POD_STAGES


def fake_node(name: str) -> dict[str, object]:
    """A Node object kwok manages (selected through :data:`FAKE_NODE_ANNOTATION`)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: FAKE_NODE_VALUE, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/role": "agent",
                "type": "kwok",
            },
        },
        "spec": {},
        "status": {
            "allocatable": dict(NODE_CAPACITY),
            "capacity": dict(NODE_CAPACITY),
        },
    }
