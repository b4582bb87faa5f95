"""Every configuration of an autotuned launch, graded.

On a GPU, Triton's autotuner keeps whichever of a kernel's configurations ran fastest
there, and that can differ from one GPU, size or run to the next; the CPU cannot know it.
A kernel that is right under one configuration only (a grid fixed for BLOCK_SIZE=1024 while
a configuration of 256 is on offer) is a faulty kernel, whatever the autotuner picks. So a
case whose proposal launches an autotuned kernel is replayed once per configuration
(`variant`), each judged as the case is: the first one that fails fails the case, and the
verdict says which configuration it was.

A proposal may launch several autotuned kernels: variant i runs configuration i (modulo
its count) of each, so every configuration of every kernel runs at least once (not every
combination of them: a kernel's configuration decides its own launch, and the kernels of
this course's stages hand each other only their outputs).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from pathlib import Path

from grader import syntax
from grader.quoting import inline
from grader.replay.proposal import Launch, Proposal


@dataclass(frozen=True)
class Replay:
    """Which replay of a case's proposal the grader asks for: the case's own by default;
    under one configuration of each autotuned launch (`configuration`, below), or with the
    programs in grid order (`in_grid_order`: the experiment of grader.replay.order)."""

    configuration: int | None = None
    in_grid_order: bool = False


def grids_given(step: Launch, configurations: int) -> str | None:
    """Why the grids a launch gives do not fit its kernel's `configurations` (0: a kernel
    without an autotuner), for the student; None where they fit. The child records one grid
    per configuration (grader.sandbox.recorder), so only a proposal made some other way can
    miss: it would have a CPU and a GPU run other configurations."""
    given = 0 if step.grids is None else len(step.grids)
    if given == configurations:
        return None
    has = f"its @triton.autotune has {configurations}" if configurations else \
        "it is not autotuned"
    return f"the launch of {step.kernel} gives grids for {given} configurations; {has}"


def count(proposal: dict) -> int:
    """How many variants a proposal (as JSON) has: the most configurations of any autotuned
    launch in it, 1 where it has none."""
    counts = [len(step.get("grids") or ()) for step in proposal.get("steps", ())
              if isinstance(step, dict)]
    return max([1, *counts])


def variant(proposal: Proposal, index: int | None) -> Proposal:
    """`proposal` with each autotuned launch made to run its configuration `index` (modulo
    its count); as it is for None (the autotuner's own pick)."""
    if index is None:
        return proposal
    index = int(index)
    steps = [replace(s, configuration=index % len(s.grids))
             if isinstance(s, Launch) and s.grids else s for s in proposal.steps]
    return replace(proposal, steps=steps)


def autotuned(proposal: dict) -> list[str]:
    """The kernels a proposal (as JSON) launches under an autotuner, in launch order."""
    found = []
    for step in proposal.get("steps", ()):
        if isinstance(step, dict) and step.get("grids") and step.get("kernel") not in found:
            found.append(str(step.get("kernel")))
    return found


def described(path: Path, kernels: list[str], index: int, total: int) -> str:
    """Variant `index` in words, for a student: which configuration of each kernel, with
    its line and its text where the file writes it out ("configuration 2 of 3 of
    add_kernel, line 14: `triton.Config({'BLOCK_SIZE': 256}, num_warps=2)`")."""
    words = []
    for kernel in kernels:
        source, written = _configurations(path, kernel)
        if written:
            node = written[index % len(written)]
            text = ast.get_source_segment(source, node) or ""
            words.append(f"configuration {index % len(written) + 1} of {len(written)} of "
                         f"{kernel}, line {node.lineno}: {inline(' '.join(text.split()))}")
        else:
            words.append(f"configuration {index + 1} of {total} of {kernel}")
    return "; ".join(words)


def _configurations(path: Path, kernel: str) -> tuple[str, list[ast.expr]]:
    """The source of `path` and the configurations of `kernel`'s @triton.autotune as written
    there (a list in the decorator, or a top-level list it names); none where the source
    does not show them."""
    try:
        source = path.read_text(encoding="utf-8")
        tree = syntax.parse(source, str(path))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return "", []
    lists = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name == kernel):
            continue
        for decorator in node.decorator_list:
            configs = next((k.value for k in getattr(decorator, "keywords", ())
                            if k.arg == "configs"), None)
            if isinstance(configs, ast.Name):
                configs = lists.get(configs.id)
            if isinstance(configs, (ast.List, ast.Tuple)):
                return source, list(configs.elts)
    return source, []
