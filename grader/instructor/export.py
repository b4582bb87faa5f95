"""Gradescope's bulk export of an assignment ("Export Submissions"): a folder of
`submission_NNNN/` folders, each holding what one student (or group) uploaded, and
`submission_metadata.yml`, which says whose each one is:

    submission_123456:
      :submitters:
      - :name: José Núñez 李
        :sid: '12345'
        :email: jnunez@example.edu
      :created_at: 2026-12-18 23:41:07.000000000 -08:00
      :history:
      - :id: 123001
        :created_at: 2026-12-17 10:02:55.000000000 -08:00

The keys are Ruby symbols (a leading colon) because Gradescope writes the file from Ruby.
Each submission is named by its submitters' SIDs (else their emails): the same student keeps
the same name across exports and resubmissions, so their results are found again, while the
folder's number changes with every resubmission. The metadata is read as data only (YAML's
safe loader; a Ruby type tag is read as the plain value it tags).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml

from grader.course.policy import parse_time

METADATA = "submission_metadata.yml"
FOLDER = re.compile(r"submission_[0-9]+")
UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._@+-]+")  # what a result's file name may not hold


class ExportError(ValueError):
    """A bulk export whose metadata cannot be read: the message says which file and why."""


@dataclass(frozen=True)
class Submitter:
    name: str = ""
    email: str = ""
    sid: str = ""


@dataclass(frozen=True)
class Metadata:
    """Who a submission is and when it was made, as the bulk export says."""

    submitters: tuple[Submitter, ...] = ()
    created_at: datetime | None = None
    # This submission and the earlier ones its :history: lists (None: not said).
    submissions: int | None = None


def is_export(folder: Path) -> bool:
    return (folder / METADATA).is_file()


def submissions(folder: Path) -> list[tuple[str, Path, Metadata]]:
    """(name, folder, metadata) of every submission of the export in `folder`, in the
    metadata's order; a `submission_NNNN/` folder the metadata does not name keeps its
    folder's name. Raises ExportError for metadata that cannot be read."""
    entries = read_metadata(folder / METADATA)
    found = []
    for path in sorted(p for p in folder.iterdir() if p.is_dir() and FOLDER.fullmatch(p.name)):
        meta = entries.get(path.name, Metadata())
        found.append((stable_name(meta, path.name), path, meta))
    return found


def one_of(folder: Path) -> tuple[str, Metadata] | None:
    """The name and metadata of `folder` when it is one submission of a bulk export (named
    alone: a regrade of one student keeps their name and row)."""
    if not (FOLDER.fullmatch(folder.name) and is_export(folder.parent)):
        return None
    meta = read_metadata(folder.parent / METADATA).get(folder.name, Metadata())
    return stable_name(meta, folder.name), meta


def stable_name(meta: Metadata, folder_name: str) -> str:
    """The submitters' SIDs (else emails), joined by '+' for a group, as a file name."""
    keys = [s.sid or s.email for s in meta.submitters]
    if not keys or not all(keys):
        return folder_name
    name = "+".join(UNSAFE_IN_NAME.sub("_", k).strip("._") for k in keys)
    return name if name.strip("+") else folder_name


class _Loader(yaml.SafeLoader):
    """The safe loader, reading a Ruby object's tag as the plain value it tags."""


def _untagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_Loader.add_multi_constructor("!", _untagged)


def read_metadata(path: Path) -> dict[str, Metadata]:
    """The export's metadata by submission folder."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - safe
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ExportError(f"{path} cannot be read as Gradescope's submission metadata: "
                          f"{_why(exc)}. Export the submissions again from Gradescope "
                          "(Review Grades > Export Submissions).") from None
    if not isinstance(raw, dict):
        raise ExportError(f"{path} is not Gradescope's submission metadata (expected a "
                          "submission_NNNN: entry per submission folder).")
    return {str(folder): _metadata(entry) for folder, entry in raw.items()
            if isinstance(entry, dict)}


def _why(exc: Exception) -> str:
    """A YAML error in one line: what, and where."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if problem and mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())


def _metadata(entry: dict) -> Metadata:
    people = _key(entry, "submitters") or []
    people = people if isinstance(people, list) else []
    submitters = tuple(Submitter(_text(p, "name"), _text(p, "email"), _text(p, "sid"))
                       for p in people if isinstance(p, dict))
    history = _key(entry, "history")
    count = len(history) + 1 if isinstance(history, list) else None
    return Metadata(submitters, parse_time(_key(entry, "created_at")), count)


def _key(mapping: dict, name: str):
    """A Ruby symbol key (`:name:` reads as ':name'), or a plain one."""
    for key in (f":{name}", name):
        if key in mapping:
            return mapping[key]
    return None


def _text(mapping: dict, name: str) -> str:
    value = _key(mapping, name)
    return "" if value is None else str(value).strip()
