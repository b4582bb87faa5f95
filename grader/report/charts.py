"""Histograms as inline SVG, drawn here rather than in the browser: the class report's charts
show without a script, and nothing of them is fetched.

A chart counts values into bins of equal width (on a log scale for speed-ups, which spread
over orders of magnitude) and may mark values on its axis with a line (a speed threshold).
Every text in it is escaped; the values are numbers.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Callable

WIDTH, HEIGHT = 380, 170
LEFT, RIGHT, TOP, BOTTOM = 34, 12, 22, 34  # margins around the plot area
POINT_BINS = 10
SPEEDUP_BINS = 12


@dataclass(frozen=True)
class Mark:
    """A value marked on a chart's axis with a line and a label."""

    value: float
    label: str


@dataclass(frozen=True)
class Axis:
    """Where a value stands on the x axis, from 0 (left) to 1 (right), and how it reads."""

    low: float
    high: float
    log: bool = False

    def place(self, value: float) -> float:
        if self.log:
            value, low, high = (math.log(max(value, 1e-9)), math.log(self.low),
                                math.log(self.high))
        else:
            low, high = self.low, self.high
        return 0.0 if high == low else min(max((value - low) / (high - low), 0.0), 1.0)

    def edges(self, bins: int) -> list[float]:
        if self.log:
            ratio = (self.high / self.low) ** (1 / bins)
            return [self.low * ratio ** i for i in range(bins + 1)]
        step = (self.high - self.low) / bins
        return [self.low + step * i for i in range(bins + 1)]


def counts(values: list[float], edges: list[float]) -> list[int]:
    """How many values fall in each bin [edge, next edge); the last bin holds its upper edge."""
    found = [0] * (len(edges) - 1)
    for value in values:
        for i in range(len(found)):
            last = i == len(found) - 1
            if edges[i] <= value < edges[i + 1] or (last and value == edges[-1]):
                found[i] += 1
                break
    return found


def points_chart(points: list[float], maximum: float, label: str) -> str:
    """The distribution of a stage's points, from 0 to its maximum."""
    axis = Axis(0.0, maximum if maximum > 0 else 1.0)
    return _chart(points, axis, POINT_BINS, label, [], "{:g}".format, "points")


def speedup_chart(speedups: list[float], marks: list[Mark], label: str) -> str:
    """The distribution of speed-ups over their baseline, on a log scale that takes in every
    value and every marked threshold."""
    shown = [v for v in speedups if v > 0] + [m.value for m in marks if m.value > 0]
    low, high = (min(shown), max(shown)) if shown else (0.5, 2.0)
    axis = Axis(low / 1.25, high * 1.25, log=True)
    return _chart(speedups, axis, SPEEDUP_BINS, label, marks, "{:.2g}x".format, "speed-up")


def _chart(values: list[float], axis: Axis, bins: int, label: str, marks: list[Mark],
           fmt: Callable[[float], str], unit: str) -> str:
    edges = axis.edges(bins)
    found = counts(values, edges)
    tallest = max(found, default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' width='{WIDTH}' "
             f"height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}' role='img' "
             f"aria-label='{html.escape(label)}'>",
             f"<title>{html.escape(label)}</title>",
             f"<line class='axis' x1='{LEFT}' y1='{TOP + plot_h}' x2='{LEFT + plot_w}' "
             f"y2='{TOP + plot_h}'/>",
             f"<line class='axis' x1='{LEFT}' y1='{TOP}' x2='{LEFT}' y2='{TOP + plot_h}'/>",
             _text(LEFT - 4, TOP + 4, str(tallest), "end"),
             _text(LEFT - 4, TOP + plot_h, "0", "end")]
    for i, count in enumerate(found):
        x0 = LEFT + axis.place(edges[i]) * plot_w
        x1 = LEFT + axis.place(edges[i + 1]) * plot_w
        height = plot_h * count / tallest
        tip = f"{fmt(edges[i])} to {fmt(edges[i + 1])} {unit}: {count}"
        parts.append(f"<rect class='bar' x='{x0 + 1:.1f}' y='{TOP + plot_h - height:.1f}' "
                     f"width='{max(x1 - x0 - 2, 1):.1f}' height='{height:.1f}'>"
                     f"<title>{html.escape(tip)}</title></rect>")
    for value in (edges[0], edges[len(edges) // 2], edges[-1]):
        parts.append(_text(LEFT + axis.place(value) * plot_w, HEIGHT - BOTTOM + 14, fmt(value),
                           "middle"))
    parts.append(_text(LEFT + plot_w / 2, HEIGHT - 4, unit, "middle"))
    for mark in marks:
        x = LEFT + axis.place(mark.value) * plot_w
        parts.append(f"<line class='mark' x1='{x:.1f}' y1='{TOP - 4}' x2='{x:.1f}' "
                     f"y2='{TOP + plot_h}'><title>{html.escape(mark.label)}</title></line>")
        parts.append(_text(x, TOP - 8, mark.label, "middle", "mark"))
    parts.append("</svg>")
    return "".join(parts)


def _text(x: float, y: float, text: str, anchor: str, kind: str = "tick") -> str:
    return (f"<text class='{kind}' x='{x:.1f}' y='{y:.1f}' text-anchor='{anchor}'>"
            f"{html.escape(text)}</text>")
