"""`grade --picture DIR`: each failing case's output map as one self-contained page.

The same tiles the terminal shows under a failing case (grader.judge.picture), drawn as
coloured cells with the case's message; no script, no font or style from the network, every
string from a submission escaped.
"""

from __future__ import annotations

import html
from pathlib import Path

from grader.results import Report

COLOURS = {".": ("#d8f0d8", "right"), "X": ("#e8504a", "wrong"),
           "_": ("#ffffff", "never written"), "2": ("#f0a830", "written by two programs"),
           "R": ("#8050c0", "written by a program that read out of bounds")}
STYLE = ("body{font-family:sans-serif;margin:2em;max-width:70em}"
         "table.map{border-collapse:collapse;margin:.5em 0}"
         "table.map td{width:14px;height:14px;border:1px solid #999;padding:0}"
         "pre{white-space:pre-wrap;background:#f4f4f4;padding:.5em}"
         ".key span{display:inline-block;width:12px;height:12px;border:1px solid #999;"
         "margin:0 .3em 0 1em;vertical-align:middle}")


def page(report: Report) -> str:
    parts = [f"<h1>{html.escape(report.course)}: failures by tile</h1>", _key()]
    for stage in report.stages:
        failed = [c for c in stage.cases if not c.passed and c.stats.get("picture")]
        if not failed:
            continue
        parts.append(f"<h2>stage {stage.number}: {html.escape(stage.title)}</h2>")
        for case in failed:
            parts.append(f"<h3>{html.escape(case.id)}</h3>")
            parts.append(_map(case.stats["picture"]))
            parts.append("<pre>" + html.escape("\n".join([case.summary, *case.details])) + "</pre>")
    if len(parts) == 2:
        parts.append("<p>No failing case has a picture.</p>")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>failures by tile</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")


def _key() -> str:
    return "<p class='key'>" + "".join(
        f"<span style='background:{c}'></span>{html.escape(name)}"
        for c, name in COLOURS.values()) + "</p>"


def _map(rows: list[str]) -> str:
    cells = "".join("<tr>" + "".join(
        f"<td style='background:{COLOURS.get(mark, ('#000', ''))[0]}' "
        f"title='{html.escape(COLOURS.get(mark, ('', '?'))[1])}'></td>" for mark in row) + "</tr>"
        for row in rows)
    return f"<table class='map'>{cells}</table>"


def write_picture(report: Report, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "failures.html"
    path.write_text(page(report), encoding="utf-8")
    return path
