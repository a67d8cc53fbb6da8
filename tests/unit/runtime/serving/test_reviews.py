"""AdmissionReview bodies: the nesting bound counted before decoding (brackets in strings and escapes
ignored, as JSON reads them), decoding naming the field, and the answer echoing the uid."""

from __future__ import annotations

import json

import pytest

from sundial.runtime.serving import reviews


def _nested(depth: int, *, inner: str = "1") -> bytes:
    return ("[" * depth + inner + "]" * depth).encode()


@pytest.mark.parametrize("depth", [1, 10, reviews.MAX_DEPTH])
def test_nesting_up_to_the_bound_passes(depth: int) -> None:
    assert reviews.depth_problem(_nested(depth)) is None
    assert reviews.depth_problem(b'{"a": ' + _nested(depth - 1) + b"}") is None


def test_nesting_one_past_the_bound_is_named() -> None:
    assert reviews.depth_problem(_nested(reviews.MAX_DEPTH + 1)) == (
        f"request body: JSON nested deeper than {reviews.MAX_DEPTH} levels (objects and arrays)"
    )
    assert reviews.depth_problem(_nested(4), limit=3) is not None
    assert reviews.depth_problem(_nested(3), limit=3) is None


def test_wide_documents_count_their_deepest_branch_only() -> None:
    wide = b"[" + b",".join([_nested(10)] * 5000) + b"]"
    assert reviews.depth_problem(wide, limit=11) is None
    assert reviews.depth_problem(wide, limit=10) is not None


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "[[[[[[[[[["}',  # brackets in a string
        '{"a": "\\"[[[[[[[[[["}',  # after an escaped quote, still in the string
        '{"a": "\\\\", "b": "[[[[[[[[[["}',  # an escaped backslash ends its string: the next string is a string
        '{"[[[[[[[[[[": 1}',  # in a key
    ],
)
def test_brackets_inside_strings_do_not_count(text: str) -> None:
    json.loads(text)  # valid JSON, nesting 1
    assert reviews.brackets(text.encode()) == b"[]"
    assert reviews.depth_problem(text.encode(), limit=1) is None


def test_unbalanced_brackets_are_named() -> None:
    assert reviews.depth_problem(b"[[1]") == "request body: unbalanced brackets: not JSON"
    assert reviews.depth_problem(b"]") == "request body: unbalanced brackets: not JSON"


def test_a_crafted_body_of_quotes_and_backslashes_is_scanned_in_one_pass() -> None:
    # Would make a backtracking string pattern quadratic; here it is split once.
    crafted = b'"' + b'\\"' * 200_000
    assert reviews.brackets(crafted) == b""


def _document(**request: object) -> bytes:
    base: dict[str, object] = {
        "uid": "u1",
        "operation": "UPDATE",
        "resource": {"group": "sundial.dev", "version": "v1alpha1", "resource": "scheduledjobs"},
        "object": {"metadata": {"name": "x"}},
        "oldObject": {"metadata": {"name": "x"}},
    }
    base.update(request)
    return json.dumps({"apiVersion": reviews.API_VERSION, "kind": reviews.KIND, "request": base}).encode()


def test_a_review_is_read() -> None:
    read = reviews.read(_document())
    assert (read.uid, read.operation, read.resource) == ("u1", "UPDATE", "scheduledjobs")
    assert read.body == read.old == {"metadata": {"name": "x"}}
    assert reviews.read(_document(operation="CREATE", oldObject=None)).old is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (_document(oldObject=None), "request.oldObject: must be an object, got NoneType"),
        (_document(object="x"), "request.object: must be an object, got str"),
        (_document(resource={}), "request.resource.resource: must be a string, got NoneType"),
        (_document(uid=7), "request.uid: must be a string, got int"),
        (b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}', "apiVersion/kind: must be"),
        (b"\xff", "request body: not JSON"),
    ],
)
def test_what_is_wrong_is_named(raw: bytes, message: str) -> None:
    with pytest.raises(reviews.MalformedReviewError, match=message.replace(".", r"\.")):
        reviews.read(raw)


def test_the_answer_echoes_the_uid() -> None:
    assert json.loads(reviews.answer("u1")) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u1", "allowed": True},
    }
    refused = json.loads(reviews.answer("u2", code=422, message="no"))["response"]
    assert refused == {"uid": "u2", "allowed": False, "status": {"code": 422, "message": "no"}}
