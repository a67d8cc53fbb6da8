"""``kubectl sundial`` prints what the cluster holds (tokens, messages) without its control characters: a tenant's
terminal escape in a condition message or a token is shown escaped, never sent to the user's terminal."""

from __future__ import annotations

import copy

import pytest

from sundial.cli.kubectl import main, outputs

from .conftest import NOW, FakeKubectl, scheduled_job

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\rfake\x9b31m\u202e"


def test_printable_escapes_control_characters_and_keeps_text() -> None:
    assert outputs.printable(ESCAPES) == "\\x1b]0;pwned\\x07\\x1b[2J\\x0dfake\\x9b31m\\u202e"
    assert outputs.printable("line 1\n\tline 2 · été ✓") == "line 1\n\tline 2 · été ✓"


@pytest.mark.parametrize("argv", [["describe", "report"], ["get", "report", "-o", "wide"], ["get", "-o", "yaml"]])
def test_what_the_plugin_prints_from_the_cluster_carries_no_control_characters(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = copy.deepcopy(scheduled_job(schedule="30 2 * * *"))
    hostile["metadata"]["annotations"] = {"sundial.dev/trigger": ESCAPES}
    hostile["status"]["lastHandledTrigger"] = ESCAPES
    hostile["status"]["conditions"][0]["message"] = f"ok {ESCAPES}"
    fake = FakeKubectl(hostile)
    monkeypatch.setattr(main, "Kubectl", lambda options: fake)
    assert main.main(argv, now=lambda: NOW) == 0
    out, err = capsys.readouterr()
    for char in ("\x1b", "\x07", "\r", "\x9b", "\u202e"):
        assert char not in out + err
    if argv[0] == "describe":
        assert "ok \\x1b]0;pwned\\x07" in out  # shown, escaped


def test_an_error_from_the_cluster_is_printed_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeKubectl()
    monkeypatch.setattr(main, "Kubectl", lambda options: fake)
    monkeypatch.setattr(fake, "run", lambda *args, **kwargs: (_ for _ in ()).throw(main.PluginError(ESCAPES)))
    assert main.main(["get", "report"], now=lambda: NOW) == 1
    _, err = capsys.readouterr()
    assert err.startswith("error: \\x1b]0;pwned")
    assert "\x1b" not in err
