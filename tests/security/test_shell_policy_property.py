"""Property: a command line that runs a denied command is never allowed, however it is dressed.

Lines are generated from a grammar of the shell constructs that hide a command: wrappers, quoting and
escaping of its words, git's global options, assignments and redirections, subshells and groups,
command and process substitutions, `bash -c`, pipelines and lists, loops, functions, heredocs and
comments, nested. The denied command (`git push`, or `touch X` when only read commands are allowed)
sits somewhere inside; the policy must never answer "allow".
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nova.settings import PermissionsConfig
from nova.tools import default_registry
from nova.tools.base import Tool
from nova.tools.permissions import PermissionPolicy

BASH: Tool = default_registry().get("bash")  # type: ignore[assignment]
CWD = Path("/nonexistent-project")

GIT = st.sampled_from(["git", "'git'", '"git"', "g\\it", "gi''t", "/usr/bin/git", "$'git'", '"g"it', "\\git"])
PUSH = st.sampled_from(["push", "pu''sh", "'push'", "p\\ush", '"pu"sh', "$'\\x70ush'", "pu\\\nsh"])
TOUCH = st.sampled_from(["touch", "'touch'", "t\\ouch", "/usr/bin/touch", "to''uch", '"tou"ch'])
GIT_GLOBAL = st.sampled_from(["-C .", "--no-pager", "-c a.b=c", "-P", "--git-dir=.git", "--work-tree .",
                              "--bare", "-c 'x.y=a b'", "--namespace n"])
TAIL = st.sampled_from(["origin", "main", "--force", "-u", "'a b'", "HEAD:refs/heads/x"])
WRAPPER = st.sampled_from(["timeout 5", "timeout -s KILL 5", "nice", "nice -n 5", "nice -10", "stdbuf -o0",
                           "stdbuf -oL -eL", "ionice -c3", "ionice -c 2 -n 7", "env", "env -i", "env A=b",
                           "command", "nohup", "sudo", "sudo -u root", "time", "xargs", "xargs -n1",
                           "/usr/bin/env", "exec"])
ASSIGNMENT = st.sampled_from(["A=1", "B='x y'", "C=$(true)", "D=\"$HOME\""])
REDIRECT = st.sampled_from(["2>&1", ">/dev/null", "</dev/null", "2>/dev/null", ">>log", "&>/dev/null"])
NEIGHBOUR = st.sampled_from(["ls", "ls -la", "echo hi", "git status", "echo 'a;b'", 'echo "a # b"', "true",
                             "echo $'x'"])


@st.composite
def simple(draw: st.DrawFn, denied: str) -> str:
    """The denied command, dressed: wrappers, assignments, quoting, options, redirections."""
    if denied == "git push":
        words = [draw(GIT), *draw(st.lists(GIT_GLOBAL, max_size=2)), draw(PUSH), *draw(st.lists(TAIL, max_size=2))]
    else:
        words = [draw(TOUCH), "X"]
    words = [*draw(st.lists(WRAPPER, max_size=3)), *words]
    words = [*draw(st.lists(ASSIGNMENT, max_size=2)), *words]
    for redirect in draw(st.lists(REDIRECT, max_size=2)):
        words.insert(draw(st.integers(0, len(words))) if draw(st.booleans()) else len(words), redirect)
    return " ".join(words)


def wrap(inner: str, how: str, neighbour: str) -> str:
    """`inner` put somewhere in a larger line."""
    quoted = shlex.quote(inner)
    forms = {
        "subshell": f"({inner})",
        "group": f"{{ {inner}; }}",
        "dollar": f"echo $({inner})",
        "dquote": f'echo "$({inner})"',
        "backtick": f"echo `{inner}`" if "`" not in inner else f"echo $({inner})",
        "procsub_in": f"cat <({inner})",
        "procsub_out": f"echo a >({inner})",
        "procsub_redirect": f"{neighbour} > >({inner})",
        "bash_c": f"bash -c {quoted}",
        "bash_lc": f"bash -lc {quoted}",
        "sh_c": f"sh -c {quoted}",
        "pipe_after": f"{neighbour} | {inner}",
        "pipe_before": f"{inner} | {neighbour}",
        "and": f"{neighbour} && {inner}",
        "or": f"{neighbour} || {inner}",
        "semicolon": f"{neighbour}; {inner}",
        "newline": f"{neighbour}\n{inner}",
        "background": f"{inner} & {neighbour}",
        "if": f"if {neighbour}; then {inner}; fi",
        "for": f"for i in 1 2; do {inner}; done",
        "while": f"while {inner}; do break; done",
        "function": f"f() {{ {inner}; }}; f",
        "heredoc": f"cat <<EOF\n$({inner})\nEOF",
        "herestring": f"cat <<< $({inner})",
        "assign": f"x=$({inner})",
        "comment_before": f"{neighbour} # it's only a comment\n{inner}",
        "comment_after": f"{inner} # {neighbour}",
        "negate": f"! {inner}",
        "arith": f"echo $((1 + $({inner})))",
    }
    return forms[how]


HOW = st.sampled_from(["subshell", "group", "dollar", "dquote", "backtick", "procsub_in", "procsub_out",
                       "procsub_redirect", "bash_c", "bash_lc", "sh_c", "pipe_after", "pipe_before", "and", "or",
                       "semicolon", "newline", "background", "if", "for", "while", "function", "heredoc",
                       "herestring", "assign", "comment_before", "comment_after", "negate", "arith"])


@st.composite
def line(draw: st.DrawFn, denied: str) -> str:
    text = draw(simple(denied))
    for how in draw(st.lists(HOW, max_size=3)):
        text = wrap(text, how, draw(NEIGHBOUR))
    return text


FAST = settings(max_examples=int(os.environ.get("NOVA_PROPERTY_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(line("git push"))
def test_a_denied_command_is_never_allowed(command: str) -> None:
    # The strongest allowing setup: a bare allow rule, --yes and --allow bash. Only the deny rule stands.
    policy = PermissionPolicy(PermissionsConfig(allow=("bash",), deny=("bash(git push*)",)), interactive=False,
                              yes=True, allowed_tools=frozenset({"bash"}), cwd=CWD)
    decision = policy.check(BASH, {"command": command})
    assert not decision.allowed, (command, decision)


@FAST
@given(line("touch X"))
def test_allowing_read_commands_never_allows_another(command: str) -> None:
    policy = PermissionPolicy(PermissionsConfig(allow=("bash(echo*)", "bash(ls*)", "bash(git status*)",
                                                       "bash(cat*)", "bash(true)")),
                              interactive=False, cwd=CWD)
    verdict = policy.evaluate(BASH, {"command": command})
    assert verdict.outcome != "allow", (command, verdict)
