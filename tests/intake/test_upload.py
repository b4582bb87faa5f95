"""What one submission gives, by the one rule folders, zips, `grade --submission` and the
Gradescope autograder share (grader.intake.upload): bare files at the top told by their
imports, nested single top folders, the copies and the limits, and the same answer for a
folder and for its zip."""

import dataclasses
import json
import os
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

from grader.cli.run import how_to_submit
from grader.course import load_course
from grader.intake import upload
from grader.intake.overlay import as_submitted, laid_out, student_text
from grader.results import Report, StageResult, Status

TRITON_ADD, CUTILE_ADD = "triton/stage1_vector_add.py", "cutile/stage1_vector_add.py"
TRITON_SOFTMAX = "triton/stage3_softmax.py"


@pytest.fixture(scope="module")
def course():
    return load_course(ROOT / "course.toml")


def _solution(path: str) -> bytes:
    return (ROOT / "solutions" / path).read_bytes()


def _folder(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return root


def _zip_of(folder: Path, out: Path) -> Path:
    with zipfile.ZipFile(out, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder.parent).as_posix())
    return out


def _read(course, source: Path) -> dict:
    got = upload.read_upload(course, source)
    return {"files": {t: d for t, d in got.files.items()},
            "taken": [(t.target, t.member.split("/", 1)[-1] if source.suffix == ".zip" else t.member, t.told_by)
                      for t in got.taken],
            "ignored": sorted(i.split("/", 1)[-1] if source.suffix == ".zip" else i
                              for i in got.ignored)}


LAYOUTS = {
    # A drag-and-drop upload: the files at the top, their track told by their imports.
    "bare": {"stage1_vector_add.py": _solution(CUTILE_ADD),
             "stage3_softmax.py": _solution(TRITON_SOFTMAX)},
    # A zipped folder: everything inside mywork/, itself inside the upload's folder.
    "nested bare": {"mywork/stage1_vector_add.py": _solution(CUTILE_ADD),
                    "mywork/stage3_softmax.py": _solution(TRITON_SOFTMAX)},
    "nested exercises": {f"mywork/exercises/{CUTILE_ADD}": _solution(CUTILE_ADD),
                         f"mywork/exercises/{TRITON_SOFTMAX}": _solution(TRITON_SOFTMAX),
                         "mywork/README.md": "notes"},
    "tracks": {CUTILE_ADD: _solution(CUTILE_ADD), TRITON_SOFTMAX: _solution(TRITON_SOFTMAX)},
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_gives_the_same_stage_files_from_a_folder_and_from_its_zip(
        tmp_path, course, layout):
    folder = _folder(tmp_path / "sub", LAYOUTS[layout])
    from_folder = _read(course, folder)
    assert from_folder["files"] == {CUTILE_ADD: _solution(CUTILE_ADD),
                                    TRITON_SOFTMAX: _solution(TRITON_SOFTMAX)}
    assert _read(course, _zip_of(folder, tmp_path / "sub.zip")) == from_folder
    told = {t[0]: t[2] for t in from_folder["taken"]}
    if "bare" in layout:
        assert told == {CUTILE_ADD: "it imports cuda.tile", TRITON_SOFTMAX: "it imports triton"}
    else:
        assert set(told.values()) == {""}  # the folder told it


def test_one_stage_file_is_an_upload_of_that_file(tmp_path, course):
    alone = _folder(tmp_path / "anywhere", {"stage1_vector_add.py": _solution(CUTILE_ADD),
                                            "stage3_softmax.py": "import triton\n"})
    got = upload.read_upload(course, alone / "stage1_vector_add.py")
    assert got.files == {CUTILE_ADD: _solution(CUTILE_ADD)} and got.ignored == []


def test_a_bare_file_whose_imports_do_not_tell_its_track_says_so(tmp_path, course):
    folder = _folder(tmp_path / "sub", {
        "stage1_vector_add.py": _solution(TRITON_ADD),
        "stage2_fused_gelu.py": "import torch\n",
        "stage3_softmax.py": "import triton\nimport cuda.tile as ct\n",
        "stage4_matmul.py": b"\x89PNG\r\n\x1a\n\x00\x00",
        "stage5_flash_attention.py": "\ufeffimport cuda.tile as ct\r\n",  # saved on Windows
    })
    got = upload.read_upload(course, folder)
    assert list(got.files) == [TRITON_ADD, "cutile/stage5_flash_attention.py"]
    why = dict(item.split(": ", 1) for item in got.ignored)
    assert why["stage2_fused_gelu.py"].startswith(
        "could be either track's (triton/ or cutile/): it imports neither triton nor cuda.tile;")
    assert "it imports both triton and cuda.tile" in why["stage3_softmax.py"]
    assert why["stage4_matmul.py"] == "not a text file, so its track cannot be told"


def test_a_file_in_its_tracks_folder_wins_over_a_bare_copy_and_the_copy_is_named(tmp_path, course):
    folder = _folder(tmp_path / "sub", {
        "stage1_vector_add.py": "import triton  # an old copy\n",
        f"exercises/{TRITON_ADD}": _solution(TRITON_ADD),
        f"backup/{TRITON_ADD}": "import triton  # older\n",
        "work/stage1_vector_add.py": "import triton\n",
    })
    got = upload.read_upload(course, folder)
    assert got.files == {TRITON_ADD: _solution(TRITON_ADD)}
    assert sorted(got.ignored) == [
        f"backup/{TRITON_ADD}: a second copy of exercises/{TRITON_ADD} (took exercises/{TRITON_ADD})",
        f"stage1_vector_add.py: a second copy of exercises/{TRITON_ADD} (took exercises/{TRITON_ADD})",
        "work/stage1_vector_add.py: a stage file's name, but neither at the submission's top nor "
        "in a triton/ or cutile/ folder; move it to one of them",
    ]


def test_the_whole_handout_handed_in_lists_only_what_is_the_students_own(tmp_path, course):
    folder = _folder(tmp_path / "sub", {f"repo/exercises/{TRITON_ADD}": _solution(TRITON_ADD),
                                        "repo/exercises/README.md": "the handout's",
                                        "repo/grader/cli/grade.py": "the grader",
                                        "repo/notes.txt": "mine"})
    got = upload.read_upload(course, folder)
    assert list(got.files) == [TRITON_ADD] and got.ignored == ["repo/notes.txt: not a stage file"]


def test_a_folder_gives_no_link_and_no_tools_files(tmp_path, course):
    secret = tmp_path / "secret.py"
    secret.write_text("import triton\n")
    folder = _folder(tmp_path / "sub", {TRITON_ADD: _solution(TRITON_ADD),
                                        ".git/objects/stage3_softmax.py": "import triton\n",
                                        "__MACOSX/._stage2_fused_gelu.py": "meta",
                                        "triton/__pycache__/x.pyc": "cache"})
    os.symlink(secret, folder / "stage3_softmax.py")
    os.symlink(tmp_path, folder / "cutile")  # a linked folder is never entered
    got = upload.read_upload(course, folder)
    assert list(got.files) == [TRITON_ADD]
    assert sorted(got.ignored) == ["cutile: a symbolic link; submit the file itself",
                                   "stage3_softmax.py: a symbolic link; submit the file itself"]


def test_a_zip_bomb_member_is_never_inflated_past_the_limit(tmp_path, course):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("stage1_vector_add.py", "w") as member:  # 64 MiB of zeros
            for _ in range(64):
                member.write(bytes(1 << 20))
        archive.writestr(f"exercises/{TRITON_SOFTMAX}", _solution(TRITON_SOFTMAX))
    assert bomb.stat().st_size < 1 << 20
    got = upload.read_upload(course, bomb)
    assert list(got.files) == [TRITON_SOFTMAX]
    assert got.ignored == ["stage1_vector_add.py: larger than 256 KiB"]


def test_a_members_name_is_shown_as_data(tmp_path, course):
    archive = tmp_path / "odd.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"exercises/{TRITON_ADD}", _solution(TRITON_ADD))
        z.writestr("notes\x1b[2J\nforged: PASS" + "x" * 300 + ".txt", "x")
    ignored = upload.read_upload(course, archive).ignored
    assert len(ignored) == 1 and "\n" not in ignored[0] and "\x1b" not in ignored[0]
    assert ignored[0].startswith("notes\\x1b[2J\\x0aforged: PASSxxx")
    assert ignored[0].endswith("…: not a stage file") and len(ignored[0]) < 250


def test_a_member_that_cannot_be_read_is_named_and_the_rest_is_taken(tmp_path, course):
    archive = tmp_path / "damaged.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"exercises/{TRITON_ADD}", _solution(TRITON_ADD))
        z.writestr(f"exercises/{TRITON_SOFTMAX}", _solution(TRITON_SOFTMAX))
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:  # damage the second member's compressed bytes
        info = z.getinfo(f"exercises/{TRITON_SOFTMAX}")
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start:start + 64] = bytes(64)
    archive.write_bytes(bytes(data))
    got = upload.read_upload(course, archive)
    assert list(got.files) == [TRITON_ADD]
    assert len(got.ignored) == 1 and got.ignored[0].startswith(
        f"exercises/{TRITON_SOFTMAX}: cannot be read (")


def test_too_many_members_are_not_all_looked_at(tmp_path, course, monkeypatch):
    monkeypatch.setattr(upload, "MEMBER_LIMIT", 5)
    folder = _folder(tmp_path / "sub", {f"junk/{i:02}.txt": "x" for i in range(9)})
    _folder(folder, {f"zz/{TRITON_ADD}": _solution(TRITON_ADD)})
    with pytest.raises(upload.NotASubmission) as caught:  # the stage file comes last
        upload.read_upload(course, folder)
    assert "junk/05.txt and 4 more: not looked at (over 5 files)" in caught.value.ignored


def test_nothing_to_take_is_not_a_submission_and_says_what_was_looked_for(tmp_path, course):
    for source in (_folder(tmp_path / "notes", {"todo.md": "later"}), tmp_path / "empty"):
        source.mkdir(exist_ok=True)
        with pytest.raises(upload.NotASubmission) as caught:
            upload.read_upload(course, source)
        assert str(caught.value).startswith("not a submission: no stage files found (looked "
                                            "for exercises/triton/stage1_vector_add.py")
    (tmp_path / "notes.txt").write_text("later")
    with pytest.raises(upload.NotASubmission, match="notes.txt is neither a folder, a .zip "
                                                    "file nor a stage file"):
        upload.read_upload(course, tmp_path / "notes.txt")
    (tmp_path / "bad.zip").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(upload.UploadError, match="bad.zip is not a valid zip file"):
        upload.read_upload(course, tmp_path / "bad.zip")


def test_a_laid_out_submission_is_reported_in_its_students_names(tmp_path, course):
    folder = _folder(tmp_path / "sub", {"stage1_vector_add.py": _solution(TRITON_ADD),
                                        "stage2_fused_gelu.py": "import torch\n"})
    with laid_out(course, folder) as unpacked:
        scratch = unpacked.exercises.parent
        assert (unpacked.exercises / TRITON_ADD).read_bytes() == _solution(TRITON_ADD)
        assert (unpacked.exercises / TRITON_SOFTMAX).read_text() == \
            (ROOT / "exercises" / TRITON_SOFTMAX).read_text()  # absent: the skeleton
        stages = [StageResult(1, "vector_add", "t", "b", f"{unpacked.exercises}/{TRITON_ADD}", 10,
                              Status.ERROR, message=f"failed at {unpacked.exercises}/{TRITON_ADD}"
                                                    f" (see {scratch}/home/log)"),
                  StageResult(2, "fused_gelu", "t", "b", f"{unpacked.exercises}/triton/"
                              "stage2_fused_gelu.py", 15, Status.NOT_STARTED, message="x"),
                  StageResult(3, "softmax", "t", "b", f"{unpacked.exercises}/{TRITON_SOFTMAX}",
                              20, Status.NOT_STARTED, message="x")]
        report = as_submitted(Report("c", str(unpacked.exercises), "b", "", {}, "", stages=stages),
                              unpacked, "sub")
        assert unpacked.notes() == [
            f"stage1_vector_add.py: graded as exercises/{TRITON_ADD} (it imports triton)",
            "stage2_fused_gelu.py: could be either track's (triton/ or cutile/): it imports "
            "neither triton nor cuda.tile; put it in the folder of its track, or import only "
            "the language its kernels use (not graded)"]
    assert not scratch.exists()
    assert report.target == "sub" and str(scratch) not in str(report.to_json())
    assert report.stages[0].message == f"failed at exercises/{TRITON_ADD} (see <tmp>/home/log)"
    assert report.stages[1].message.startswith("stage2_fused_gelu.py was not taken (could be "
                                               "either track's")
    assert report.stages[2].message == (
        "stage3_softmax.py is not in the submission, so the handout's untouched skeleton was "
        "graded: fill in its TODOs and submit it")
    assert student_text(f"{scratch}/exercises/a.py", scratch) == "exercises/a.py"


def test_how_to_submit_names_the_courses_own_first_stage_file(course):
    assert how_to_submit(course).startswith("Submit your stage files (stage1_vector_add.py, ...)")
    later = dataclasses.replace(course, stages=course.stages[1:])
    assert "(stage2_fused_gelu.py, ...)" in how_to_submit(later)


def test_a_submission_not_graded_after_it_was_read_keeps_its_notes(tmp_path, course, run_grade):
    """A request that fails once the submission is read (a backend of another track) tells
    the Gradescope student why, with how their submission was read; a corrupt zip is named."""
    folder = _folder(tmp_path / "sub", {"stage1_vector_add.py": _solution(TRITON_ADD)})
    results = tmp_path / "results.json"
    options = ("--course", str(course.path), "1", "--gradescope", str(results))
    code, _, err = run_grade(*options, "--submission", str(folder), "--backend", "cutile-sim",
                             "--track", "triton")
    output = json.loads(results.read_text(encoding="utf-8"))["output"]
    assert code == 2 and "grades the cutile track, not triton" in err
    assert output.startswith("Not graded: Backend 'cutile-sim' grades the cutile track")
    assert (f"stage1_vector_add.py: graded as exercises/{TRITON_ADD} (it imports triton)"
            in output)
    (tmp_path / "bad.zip").write_bytes(b"PK\x03\x04 not really")
    code, _, _ = run_grade(*options, "--submission", str(tmp_path / "bad.zip"))
    output = json.loads(results.read_text(encoding="utf-8"))["output"]
    assert code == 2 and output.startswith("Not graded: bad.zip is not a valid zip file")


def test_a_zip_left_unopened_inside_an_upload_is_read(course, tmp_path):
    """A zip of the zip: Gradescope opens the outer one and leaves the inner one, and the
    upload scored 0 while the message said to upload "a zip of it". One zip, alone among
    the upload's files where no stage file is, is read; what it held is named with it."""
    inner = _zip_of(_folder(tmp_path / "work", {"exercises/" + TRITON_ADD: _solution(TRITON_ADD)}),
                    tmp_path / "work.zip")
    upload_folder = tmp_path / "upload"
    upload_folder.mkdir()
    inner.rename(upload_folder / "my work.zip")
    got = upload.read_upload(course, upload_folder)
    assert got.files == {TRITON_ADD: _solution(TRITON_ADD)}
    assert [t.member for t in got.taken] == ["my work.zip/work/exercises/" + TRITON_ADD]
    (upload_folder / "second.zip").write_bytes((upload_folder / "my work.zip").read_bytes())
    with pytest.raises(upload.NotASubmission):  # two zips: which one is meant is not known
        upload.read_upload(course, upload_folder)
