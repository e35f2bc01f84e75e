"""The LangGraph adoption pair, examples/langgraph_plain.py (an app as it is written with
LangGraph alone) and examples/langgraph_adopted.py (the same app with the approval decided by
the kernel's gate): both run, both do the same on an approval and on a denial, the adopted one
stops what the plain one lets through, and the lines that differ between them are the figure
the README gives for adopting the gate."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest
from langgraph.types import Command

from resumable_kernel import gate

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
sys.path.insert(0, str(EXAMPLES))

import langgraph_adopted as adopted  # noqa: E402
import langgraph_plain as plain  # noqa: E402
from posts import Posts  # noqa: E402

CFG = {"configurable": {"thread_id": "thread-1"}}


def published(tmp_path: pathlib.Path) -> list[int]:
    return Posts(str(tmp_path / "posts.jsonl")).published()


@pytest.mark.parametrize("app", [plain, adopted], ids=["plain", "adopted"])
def test_both_apps_ask_then_publish_once_on_approval(app, tmp_path) -> None:
    graph = app.build(str(tmp_path))
    app.start(graph, "thread-1", 42)
    assert published(tmp_path) == []
    out = app.decide(graph, "thread-1", "alice", approved=True)
    assert out["result"] == "post 42 published (#1)"
    assert published(tmp_path) == [42]


@pytest.mark.parametrize("app", [plain, adopted], ids=["plain", "adopted"])
def test_both_apps_publish_nothing_on_a_denial(app, tmp_path) -> None:
    graph = app.build(str(tmp_path))
    app.start(graph, "thread-1", 42)
    assert app.decide(graph, "thread-1", "alice", approved=False)["result"] == "denied"
    assert published(tmp_path) == []


@pytest.mark.parametrize("app", [plain, adopted], ids=["plain", "adopted"])
def test_both_apps_run_as_scripts(app) -> None:
    out = subprocess.run([sys.executable, str(EXAMPLES / f"{app.__name__}.py")],
                         capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.splitlines() == ["asks: publish", "result: post 42 published (#1)"]


def test_plain_an_approval_resumed_again_from_an_old_config_publishes_again(tmp_path) -> None:
    graph = plain.build(str(tmp_path))
    plain.start(graph, "thread-1", 42)
    old = graph.get_state(CFG).config
    plain.decide(graph, "thread-1", "alice", approved=True)
    graph.invoke(Command(resume={"approved": True, "by": "mallory"}), old)
    assert published(tmp_path) == [42, 42]


def test_adopted_an_approval_resumed_again_from_an_old_config_publishes_once(tmp_path) -> None:
    graph = adopted.build(str(tmp_path))
    request = adopted.start(graph, "thread-1", 42)
    old = graph.get_state(CFG).config
    adopted.decide(graph, "thread-1", "alice", approved=True)
    out = graph.invoke(Command(resume=gate.approve(request, "mallory", adopted.clock() + 1000)),
                       old)
    assert out["result"] == "post 42 published (#1)"
    assert published(tmp_path) == [42]


def test_plain_anyone_approves(tmp_path) -> None:
    graph = plain.build(str(tmp_path))
    plain.start(graph, "thread-1", 42)
    assert plain.decide(graph, "thread-1", "mallory", approved=True)["result"].startswith("post 42")
    assert published(tmp_path) == [42]


def test_adopted_only_the_named_approver_approves(tmp_path) -> None:
    graph = adopted.build(str(tmp_path))
    adopted.start(graph, "thread-1", 42)
    for approver, kind in [("mallory", "unauthorised"), ("agent", "self_approval")]:
        out = adopted.decide(graph, "thread-1", approver, approved=True)
        assert out["__interrupt__"][0].value["refused"]["verdict"] == kind
    assert published(tmp_path) == []
    assert adopted.decide(graph, "thread-1", "alice", approved=True)["result"].startswith("post 42")
    assert published(tmp_path) == [42]


COUNT = ("cd bindings/python/examples && "
         "diff -u langgraph_plain.py langgraph_adopted.py | grep -c '^[+-][^+-]'")


def test_the_readme_gives_the_lines_adopting_the_gate_changes() -> None:
    readme = README.read_text()
    assert COUNT in readme
    # The README's command, run: lines added or removed, blank ones not counted.
    counted = subprocess.run(["bash", "-c", COUNT], cwd=README.parents[2], capture_output=True,
                             text=True, check=True)
    diff = subprocess.run(["diff", "-u", "langgraph_plain.py", "langgraph_adopted.py"],
                          cwd=EXAMPLES, capture_output=True, text=True)
    changed = [line for line in diff.stdout.splitlines() if re.match(r"[+-][^+-]", line)]
    added = sum(1 for line in changed if line.startswith("+"))
    assert int(counted.stdout) == len(changed) > 0
    stated = re.search(r"changes (\d+) lines of the app \((\d+) added, (\d+) removed",
                       " ".join(readme.split()))
    assert stated is not None, "the README no longer states the figure"
    assert tuple(map(int, stated.groups())) == (len(changed), added, len(changed) - added)
