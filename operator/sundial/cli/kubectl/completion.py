"""Shell completion for ``kubectl sundial``: the scripts of ``completion bash|zsh|fish`` and ``__complete``.

One engine answers every shell: ``kubectl-sundial __complete WORD... CURRENT`` prints the candidates for
``CURRENT``, one per line, then ``:4`` (Cobra's protocol, directive "no file completion"). kubectl 1.26
and later run ``kubectl_complete-sundial`` with the same words for ``kubectl sundial <TAB>``; the scripts
below call it for the ``kubectl-sundial`` command itself. ScheduledJob names, namespaces and contexts
come from kubectl with the global flags already on the line. The parser to complete is given by
:mod:`.main` (which imports this module, never the other way round).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from sundial.cli.kubectl.runner import (
    GLOBAL_FLAGS,
    RESOURCE,
    Clock,
    GlobalOptions,
    Kubectl,
    PluginError,
    add_command,
    split_global_flags,
)

NO_FILE_COMPLETION = ":4"
NAMED_COMMANDS = frozenset(
    {"get", "list", "forecast", "describe", "preview", "trigger", "redrive", "backfill", "suspend", "resume"}
)
FROM_PREFIX = "scheduledjob/"
_JSONPATH_NAMES = "jsonpath={.items[*].metadata.name}"

BASH = """\
# bash completion for kubectl-sundial; `kubectl sundial` completes through kubectl_complete-sundial.
_kubectl_sundial() {
    local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\\n'
    local candidates
    candidates=$(kubectl-sundial __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null | sed '$d')
    COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -F _kubectl_sundial kubectl-sundial
"""

ZSH = """\
#compdef kubectl-sundial
# zsh completion for kubectl-sundial; `kubectl sundial` completes through kubectl_complete-sundial.
_kubectl_sundial() {
    local -a candidates
    candidates=(${(f)"$(kubectl-sundial __complete ${words[2,CURRENT-1]} "${words[CURRENT]}" 2>/dev/null | sed '$d')"})
    compadd -- $candidates
}
if (( $+functions[compdef] )); then compdef _kubectl_sundial kubectl-sundial; fi
"""

FISH = """\
# fish completion for kubectl-sundial; `kubectl sundial` completes through kubectl_complete-sundial.
function __kubectl_sundial_complete
    set -l words (commandline -opc)
    set -e words[1]
    kubectl-sundial __complete $words (commandline -ct) 2>/dev/null | sed '$d'
end
complete -c kubectl-sundial -f -a '(__kubectl_sundial_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


def script(shell: str) -> str:
    return SCRIPTS[shell]


def register(commands: Any) -> None:
    sub = add_command(commands, "completion", run, "print a shell completion script")
    sub.add_argument("shell", choices=("bash", "zsh", "fish"))


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    print(script(args.shell), end="")
    return 0


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _lines(kubectl: Kubectl, *args: str, namespaced: bool = True) -> list[str]:
    try:
        return kubectl.run(*args, namespaced=namespaced).split()
    except PluginError:
        return []


def _flag_values(flag: str, kubectl: Kubectl) -> list[str]:
    if flag in ("-n", "--namespace"):
        return _lines(kubectl, "get", "namespaces", "-o", _JSONPATH_NAMES, namespaced=False)
    if flag == "--context":
        return _lines(kubectl, "config", "get-contexts", "-o", "name", namespaced=False)
    return []


def _value_options(sub: argparse.ArgumentParser) -> dict[str, Sequence[str]]:
    """Options of ``sub`` that take a value, with their choices (empty when free-form)."""
    return {
        option: [str(c) for c in action.choices or ()]
        for action in sub._actions
        if action.option_strings and action.nargs != 0
        for option in action.option_strings
    }


KubectlFor = Callable[[GlobalOptions], Kubectl]


def candidates(words: Sequence[str], *, parser: argparse.ArgumentParser, kubectl_for: KubectlFor) -> list[str]:
    """What may follow: ``words`` are the words after the program, the last one being completed.

    ``kubectl_for`` makes the kubectl runner for the global flags found among the words.
    """
    before, current = list(words[:-1]), (words[-1] if words else "")
    global_names = [name for flag in GLOBAL_FLAGS for name in flag.names]
    if before and before[-1] in global_names:
        return _flag_values(before[-1], kubectl_for(_options(before[:-1])))
    options, rest = _split(before)
    kubectl = kubectl_for(options)
    commands = _subcommands(parser)
    positionals, sub = [], None
    skip = False
    for word in rest:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = sub is not None and word in _value_options(sub)
        else:
            positionals.append(word)
            sub = sub or commands.get(word)
    if sub is None:
        if current.startswith("-"):
            return [*global_names, "--help"]
        return sorted(commands)
    values = _value_options(sub)
    if rest and rest[-1] in values:
        if rest[-1] == "--from":
            return [FROM_PREFIX + name for name in _names(kubectl)]
        return list(values[rest[-1]])
    if current.startswith("--from="):
        return [f"--from={FROM_PREFIX}{name}" for name in _names(kubectl)]
    if current.startswith("-"):
        return [*(o for a in sub._actions for o in a.option_strings), *global_names]
    command, given = positionals[0], positionals[1:]
    if command == "completion":
        return [] if given else sorted(SCRIPTS)
    if command == "create":
        return ["job"] if not given else []
    if command in NAMED_COMMANDS and (command in ("get", "list", "forecast") or not given):
        return _names(kubectl)
    return []


def _options(words: Sequence[str]) -> GlobalOptions:
    return _split(words)[0]


def _split(words: Sequence[str]) -> tuple[GlobalOptions, list[str]]:
    try:
        return split_global_flags(words)
    except PluginError:
        return GlobalOptions(), list(words)


def _names(kubectl: Kubectl) -> list[str]:
    return _lines(kubectl, "get", RESOURCE, "-o", _JSONPATH_NAMES)


def complete(words: Sequence[str], *, parser: argparse.ArgumentParser, kubectl_for: KubectlFor = Kubectl) -> int:
    """``__complete``: print the candidates that start with the current word, then the directive."""
    current = words[-1] if words else ""
    for candidate in candidates(words, parser=parser, kubectl_for=kubectl_for):
        if candidate.startswith(current):
            print(candidate)
    print(NO_FILE_COMPLETION)
    return 0
