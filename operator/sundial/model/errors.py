"""Validation errors that name the field: ``spec.retry.maxAttempts: Input should be >= 1``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class SpecProblem:
    """One invalid field: ``path`` is dotted camelCase from the object root (``spec.catchUp.window``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpecError(ValueError):
    """The spec cannot be used; ``problems`` lists every invalid field."""

    def __init__(self, problems: Sequence[SpecProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))

    @property
    def first_field(self) -> str:
        return self.problems[0].path if self.problems else "spec"


OBJECT_PATH = "object"


class ObjectTooLargeError(SpecError):
    """The object as the operator would keep it (metadata and spec) is over the operator's bound: it is
    kept as a stub (no spec) and refused with ``Ready=False``, reason ``ObjectTooLarge`` (DESIGN §11.1)."""

    def __init__(self, *, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            [
                SpecProblem(
                    path=OBJECT_PATH,
                    message=f"is {size} bytes of JSON (its spec and the metadata the operator reads), over the "
                    f"operator's bound of {limit} bytes (the jobTemplate bound, --max-job-template-bytes, plus a "
                    "margin for the rest of the spec): it is not planned and no Jobs are made for it",
                )
            ]
        )


class ObjectQuarantinedError(SpecError):
    """The operator could not read the object: the intake keeps it as a stub (no spec) and the planner refuses it
    with ``Ready=False``, reason ``Quarantined`` (DESIGN §12.1). MESSAGE says what kind of problem (never the
    object's values)."""

    def __init__(self, *, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__([SpecProblem(path=OBJECT_PATH, message=message)])


def _path(root: str, error: ErrorDetails) -> str:
    parts = [root] if root else []
    for item in error["loc"]:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
        else:
            parts.append(str(item))
    return ".".join(parts)


def _message(error: ErrorDetails) -> tuple[str, str]:
    """Split "field: message" prefixes that model-level validators use to name their field."""
    text = error["msg"]
    text = text.removeprefix("Value error, ")
    head, sep, tail = text.partition(": ")
    if sep and head and " " not in head and head[0].islower():
        return head, tail
    return "", text


def problems_from(error: ValidationError, *, root: str) -> list[SpecProblem]:
    """Turn a pydantic error into field-naming problems under ``root`` (for example ``spec``)."""
    problems = []
    for detail in error.errors(include_url=False):
        path = _path(root, detail)
        sub, message = _message(detail)
        if sub:
            path = f"{path}.{sub}"
        problems.append(SpecProblem(path=path, message=message))
    return problems
