"""Histograms as inline SVG, drawn here rather than in the browser: the class report's charts
show without a script, and nothing of them is fetched.

A chart counts values into bins of equal width (on a log scale for speed-ups, which spread
over orders of magnitude) and may mark values on its axis with a line (a speed threshold).
A chart here is its shapes and words, placed; templates/chart.svg.j2 draws it as SVG, escaping
every text in it as every template does.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Text:
    """A word on a chart, at (x, y): a tick's number, the axis's unit or a mark's label."""

    x: float
    y: float
    text: str
    anchor: str  # SVG's text-anchor: "end", "middle"
    kind: str = "tick"  # its class


@dataclass(frozen=True)
class Bar:
    """One bin's bar, and the text that says what it holds."""

    x: float
    y: float
    width: float
    height: float
    tip: str


@dataclass(frozen=True)
class Chart:
    """A histogram, placed: what templates/chart.svg.j2 draws, in the order it draws it."""

    label: str
    y_ticks: list[Text]
    bars: list[Bar]
    x_ticks: list[Text]  # and the axis's unit
    marks: list[Text]  # each marked value's label, above its line
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    right: int = WIDTH - RIGHT  # where the x axis ends
    bottom: int = HEIGHT - BOTTOM  # where the y axis ends


def points_chart(points: list[float], maximum: float, label: str) -> Chart:
    """The distribution of a stage's points, from 0 to its maximum."""
    axis = Axis(0.0, maximum if maximum > 0 else 1.0)
    return _chart(points, axis, POINT_BINS, label, [], "{:g}".format, "points")


def speedup_chart(speedups: list[float], marks: list[Mark], label: str) -> Chart:
    """The distribution of speed-ups over their baseline, on a log scale that takes in every
    value and every marked threshold."""
    shown = [v for v in speedups if v > 0] + [m.value for m in marks if m.value > 0]
    low, high = (min(shown), max(shown)) if shown else (0.5, 2.0)
    axis = Axis(low / 1.25, high * 1.25, log=True)
    return _chart(speedups, axis, SPEEDUP_BINS, label, marks, "{:.2g}x".format, "speed-up")


def _chart(values: list[float], axis: Axis, bins: int, label: str, marks: list[Mark],
           fmt: Callable[[float], str], unit: str) -> Chart:
    edges = axis.edges(bins)
    found = counts(values, edges)
    tallest = max(found, default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bars = []
    for i, count in enumerate(found):
        x0 = LEFT + axis.place(edges[i]) * plot_w
        x1 = LEFT + axis.place(edges[i + 1]) * plot_w
        height = plot_h * count / tallest
        bars.append(Bar(x0 + 1, TOP + plot_h - height, max(x1 - x0 - 2, 1), height,
                        f"{fmt(edges[i])} to {fmt(edges[i + 1])} {unit}: {count}"))
    x_ticks = [Text(LEFT + axis.place(value) * plot_w, HEIGHT - BOTTOM + 14, fmt(value), "middle")
               for value in (edges[0], edges[len(edges) // 2], edges[-1])]
    x_ticks.append(Text(LEFT + plot_w / 2, HEIGHT - 4, unit, "middle"))
    return Chart(label, [Text(LEFT - 4, TOP + 4, str(tallest), "end"),
                         Text(LEFT - 4, TOP + plot_h, "0", "end")], bars, x_ticks,
                 [Text(LEFT + axis.place(mark.value) * plot_w, TOP - 8, mark.label, "middle",
                       "mark") for mark in marks])
