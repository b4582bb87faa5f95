"""Pairs of a class's kernels that are unusually alike (grader.instructor.similarity) and the
class report's section that shows them: a copy with its names and comments changed stands
out, the handout's skeleton that everyone shares does not, honest solutions written apart
flag nothing, and a file's text is shown as text.

Each student here is the handout's softmax skeleton (exercises/triton/stage3_softmax.py)
with its three TODOs filled in, one of several honest ways, kept in OUT/files/ as
`grade batch` keeps it.
"""

import random
import re
import time

import pytest
from class_fixture import write_class
from conftest import ROOT
from test_class import TRITON_ADD, _class, _course, _fake_grader
from test_class_report import Page

from grader.grading.request import GradingRequest
from grader.instructor import batch, handed_in, similarity, submissions
from grader.instructor.skeletons import make_plain_solution
from grader.instructor.class_report import write_report

PATH = "triton/stage3_softmax.py"
SKELETON = (ROOT / "exercises" / PATH).read_text(encoding="utf-8")
TODOS = ("        x = ...\n", "        m_i, l_i = ..., ...\n",
         "        y = ...\n        ...  # store y into this tile of the output row, masked\n")

# Honest solutions, written apart: the same algorithm (the lesson's), each in its own words;
# ada's is the course's reference solution.
ADA = make_plain_solution((ROOT / "solutions" / PATH).read_text(encoding="utf-8"))
HONEST = {
    "bob": ("""\
        offs = tl.arange(0, BLOCK_N) + start
        in_row = offs < n_cols
        ptrs = x_row + offs * stride_xn
        x = tl.load(ptrs, mask=in_row, other=float("-inf")).to(tl.float32)
""", """\
        block_max = tl.max(x, axis=0)
        new_max = tl.where(block_max > m_i, block_max, m_i)
        scale = tl.exp(m_i - new_max)
        l_i = scale * l_i + tl.sum(tl.exp(x - new_max), axis=0)
        m_i = new_max
""", """\
        offs = tl.arange(0, BLOCK_N) + start
        in_row = offs < n_cols
        vals = tl.load(x_row + offs * stride_xn, mask=in_row, other=0.0)
        e = tl.exp(vals.to(tl.float32) - m_i)
        y = e * (1.0 / l_i)
        tl.store(out_row + offs * stride_on, y.to(out_ptr.dtype.element_ty), mask=in_row)
"""),
    "carl": ("""\
        idx = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + idx * stride_xn, idx < n_cols, -float("inf"))
        x = x.to(tl.float32)
""", """\
        m_next = tl.maximum(tl.max(x, 0), m_i)
        corr = tl.exp2((m_i - m_next) * 1.4426950408889634)
        p = tl.exp2((x - m_next) * 1.4426950408889634)
        l_i = l_i * corr + tl.sum(p, 0)
        m_i = m_next
""", """\
        idx = start + tl.arange(0, BLOCK_N)
        ok = idx < n_cols
        v = tl.load(x_row + idx * stride_xn, ok, -float("inf")).to(tl.float32)
        res = tl.exp2((v - m_i) * 1.4426950408889634) / l_i
        tl.store(out_row + idx * stride_on, res.to(out_ptr.dtype.element_ty), ok)
"""),
    "dana": ("""\
        c = start + tl.arange(0, BLOCK_N)
        valid = c < n_cols
        x = tl.load(x_row + stride_xn * c, mask=valid, other=-float("inf"))
        x = x.to(tl.float32)
""", """\
        mx = tl.max(x, axis=0)
        m2 = tl.maximum(mx, m_i)
        l_i = tl.exp(m_i - m2) * l_i
        l_i += tl.sum(tl.exp(x - m2), axis=0)
        m_i = m2
""", """\
        c = start + tl.arange(0, BLOCK_N)
        valid = c < n_cols
        x = tl.load(x_row + stride_xn * c, mask=valid, other=-float("inf")).to(tl.float32)
        inv = 1.0 / l_i
        tl.store(out_row + stride_on * c, (tl.exp(x - m_i) * inv).to(out_ptr.dtype.element_ty),
                 mask=valid)
"""),
}


def filled(parts: tuple[str, str, str], skeleton: str = SKELETON) -> str:
    """The skeleton with its three TODOs' placeholders replaced by `parts`."""
    for todo, part in zip(TODOS, parts):
        assert todo in skeleton
        skeleton = skeleton.replace(todo, part, 1)
    return skeleton


def disguised(text: str) -> str:
    """`text` with every variable of its own renamed and a comment added to each line."""
    renames = {"cols": "columns", "m_new": "running_max_next", "mask": "keep", "y": "result",
               "offs": "lanes", "in_row": "inside", "ptrs": "addresses", "block_max": "bm",
               "new_max": "nm", "scale": "factor", "vals": "loaded", "e": "ex"}
    for old, new in renames.items():
        text = re.sub(rf"\b{old}\b(?!=)", new, text)
    return "".join(f"{line}  # my own step {i}\n" if line.strip() else "\n"
                   for i, line in enumerate(text.splitlines()))


def honest() -> dict[str, str]:
    """Four students' files, each written alone."""
    return {"ada": ADA, **{name: filled(parts) for name, parts in HONEST.items()}}


def write_files(out, files: dict[str, str], path: str = PATH) -> None:
    for name, text in files.items():
        handed_in.keep(out, name, {path: text.encode()})


def test_a_copy_with_new_names_and_comments_is_the_top_pair(course, tmp_path):
    files = honest()
    files["eve"] = disguised(files["bob"])
    assert "addresses" in files["eve"] and "ptrs" not in files["eve"]
    files["fay"] = disguised(ADA)
    assert "running_max_next" in files["fay"] and "my own step" in files["fay"]
    write_files(tmp_path, files)
    pairs, more = similarity.alike(tmp_path, course, sorted(files))
    assert more == 0
    found = {frozenset((p.first.student, p.second.student)) for p in pairs}
    assert found == {frozenset(("ada", "fay")), frozenset(("bob", "eve"))}
    top = pairs[0]
    assert top.path == PATH and top.score > 0.9 and top.typical < 0.3
    assert top.first.share > 0.9 and top.second.share > 0.9
    # What they have in common is marked on both sides: the lines they wrote, not the
    # handout's docstring or its wrapper.
    for side in (top.first, top.second):
        marked = {side.lines[i].strip() for i in side.marked}
        assert any("tl.exp(" in line for line in marked)
        assert not any(line.startswith("def softmax(") for line in marked)
        assert not any("row softmax" in line for line in marked)


def test_sharing_only_the_skeleton_counts_for_nothing(course, tmp_path):
    """The untouched skeleton, and the skeleton with one line of a student's own, are not
    alike however many students hand them in."""
    files = {f"s{i}": SKELETON for i in range(6)}
    files["lone"] = filled(("        x = tl.load(x_row)\n", "        m_i, l_i = 0.0, 1.0\n",
                            TODOS[2]))
    write_files(tmp_path, files)
    skeleton = similarity.handout(SKELETON, {})
    printed = similarity.printed("s0", SKELETON, skeleton, {})
    assert not printed.tokens and not printed.prints
    assert similarity.alike(tmp_path, course, sorted(files)) == ([], 0)


def test_honest_solutions_written_apart_are_below_the_floor(course, tmp_path):
    files = honest()
    write_files(tmp_path, files)
    vocabulary: dict[str, int] = {}
    skeleton = similarity.handout(SKELETON, vocabulary)
    printed = [similarity.printed(n, t, skeleton, vocabulary) for n, t in files.items()]
    assert all(len(p.prints) >= similarity.MIN_PRINTS for p in printed)  # each compared
    scores = [similarity._score(a, b) for i, a in enumerate(printed) for b in printed[i + 1:]]
    assert max(scores) < similarity.FLOOR, scores
    assert similarity.alike(tmp_path, course, sorted(files)) == ([], 0)


def test_a_class_all_alike_flags_only_pairs_far_above_it(course, tmp_path):
    """Where the class wrote one kernel alike (the median pair high), near copies of it are
    what a class looks like, not evidence."""
    files = {f"s{i}": ADA.replace("    return out\n", f"    z{i} = {i}\n    return out\n")
             for i in range(5)}
    write_files(tmp_path, files)
    vocabulary: dict[str, int] = {}
    skeleton = similarity.handout(SKELETON, vocabulary)
    printed = [similarity.printed(n, t, skeleton, vocabulary) for n, t in files.items()]
    # Above the floor, every pair: the floor alone would flag the whole class.
    assert min(similarity._score(a, b) for a in printed for b in printed if a is not b) > 0.8
    assert similarity.scored(PATH, printed) == []


def test_normal_form_drops_comments_docstrings_and_names():
    source = ('"""Doc."""\nimport triton.language as tl\n\n\ndef f(a, b):\n'
              '    """Its doc."""\n    total = tl.sum(a + b, axis=0)  # add\n'
              '    return total * 2.5, "s"\n')
    renamed = source.replace("total", "acc").replace("(a, b)", "(p, q)").replace(
        "a + b", "p + q").replace("# add", "# sum them")
    texts = [t.text for t in similarity.tokens(source)]
    assert texts == [t.text for t in similarity.tokens(renamed)]
    assert "Doc." not in " ".join(texts) and "#" not in " ".join(texts)
    assert texts[texts.index(".") + 1] == "language"  # an attribute keeps its name
    assert "sum" in texts and "total" not in texts and "NUM" in texts and "STR" in texts
    # A file that does not tokenize to its end keeps what came before.
    assert [t.text for t in similarity.tokens("x = (1,\n")][:2] == ["ID", "="]


def test_hostile_file_content_is_shown_as_text(course, tmp_path):
    out = tmp_path / "out"
    names = write_class(out, course)
    hostile = ("</pre></details><script>alert(1)</script><img src=x onerror=alert(2)>"
               "\u202e evil")
    files = honest()
    files["eve"] = files.pop("bob")
    files["ada"] = ADA.replace("x = x.to(", f"x = x.to  # {hostile}\n        x = x.to(", 1)
    files["bob"] = disguised(ADA)
    write_files(out, files)
    path = write_report(out, course, names)
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    assert "id='similar'" in text and "Similar submissions" in text
    shown = "".join(page.text)
    assert "<script>alert(1)</script><img src=x onerror=alert(2)>" in shown  # as text
    assert "\\u202e evil" in shown and "\u202e" not in text  # the override spelled out
    assert len(page.of("script")) == 1 and not page.of("img")
    assert not [a for _, a in page.tags if "style" in a]  # the policy allows no attribute
    details = page.of("details")
    assert len(details) == 1 and all(a.get("class") == "alike" for a in details)
    assert "evidence for a person to read, not a finding" in shown
    assert "copied" not in shown.lower() and "plagiar" not in shown.lower()


def test_the_section_is_absent_when_nothing_is_unusual(course, tmp_path):
    out = tmp_path / "out"
    names = write_class(out, course)
    write_files(out, honest())
    text = write_report(out, course, names).read_text(encoding="utf-8")
    assert "Similar submissions" not in text and "<details" not in text


def test_the_batch_keeps_the_stage_files_it_took_and_only_those(tmp_path, monkeypatch):
    course = _course(tmp_path)
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, {"good": {}}))
    subs = _class(tmp_path, {"ada": "good", "bob": "good"})
    (subs / "ada" / "notes.txt").write_text("not a stage file")
    (subs / "nobody").mkdir()
    (subs / "nobody" / "readme.txt").write_text("no stage file")
    out = tmp_path / "out"
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    batch.run(submissions.entries(course, [subs]), out, request, 1, [], 60)
    kept = out / handed_in.FILES
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file()) == [
        f"ada/{TRITON_ADD}", f"bob/{TRITON_ADD}"]
    assert handed_in.read(out, "ada") == {TRITON_ADD: "# good\nimport triton\n"}
    # bob's upload now holds no stage file: nothing of his is kept any more.
    (subs / "bob" / TRITON_ADD).unlink()
    batch.run(submissions.entries(course, [subs / "bob"]), out, request, 1, [], 60)
    assert handed_in.read(out, "bob") == {} and handed_in.read(out, "ada")


def test_a_regrade_keeps_only_the_files_it_took(tmp_path):
    handed_in.keep(tmp_path, "ada", {PATH: b"one", "triton/stage1_vector_add.py": b"two"})
    handed_in.keep(tmp_path, "ada", {PATH: b"three"})
    assert handed_in.read(tmp_path, "ada") == {PATH: "three"}
    kept = tmp_path / "files" / "ada" / PATH
    assert kept.stat().st_mode & 0o077 == 0  # the instructor's alone
    handed_in.forget(tmp_path, "ada")
    assert handed_in.read(tmp_path, "ada") == {}
    handed_in.keep(tmp_path, "..", {PATH: b"x"})  # no folder of its own: nothing kept
    assert not (tmp_path / "files" / PATH).exists()


def synthetic_class(students: int, seed: int = 3) -> dict[str, str]:
    """A class of `students` honest softmax files, each TODO filled in one of the three
    ways above and a line of its own added to each, a tenth of them ada's with new names
    and comments."""
    draw = random.Random(seed)
    ways = list(HONEST.values())
    files = {}
    for i in range(students):
        parts = tuple(draw.choice(ways)[j] for j in range(3))
        parts = tuple(p + f"        extra_{i}_{j} = {draw.random()} * {i}\n"
                      for j, p in enumerate(parts))
        files[f"student{i:03d}"] = filled(parts)
    for i in range(0, students, 10):
        files[f"student{i:03d}"] = disguised(ADA)
    return files


def test_a_class_of_200_is_compared_in_seconds(course, tmp_path):
    files = synthetic_class(200)
    stages = [s.modules["triton"] for s in course.stages]
    for name, text in files.items():  # the same file at every stage: 200 x 5 files
        handed_in.keep(tmp_path, name, {path: text.encode() for path in stages})
    started = time.perf_counter()
    pairs, more = similarity.alike(tmp_path, course, sorted(files))
    took = time.perf_counter() - started
    assert pairs and pairs[0].score > 0.9
    assert took < 30, f"{took:.1f} s"
