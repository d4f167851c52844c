"""`lockstep plan --format mermaid` drawn by the real Mermaid 11 in headless Chromium: every bar
starts and ends where the timeline says, every milestone sits at its time.

Mermaid's gantt maps time onto x with one linear scale for the whole chart (rounded to whole
pixels), from the earliest start to the latest end; a bar's rect is drawn from scale(start) to
scale(end) and a zero-length milestone is a square centred on scale(start). So after reading the
origin and the scale off the chart's two extreme spans, every other span's pixels are predicted
by its seconds alone."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

import pytest

from lockstep.timing.cli import main
from lockstep.timing.config import read_stack_file
from lockstep.timing.timeline import Span, stack_timelines

pytestmark = pytest.mark.browser

PIXEL_TOLERANCE = 1.0  # the scale rounds each end to a whole pixel


@dataclass(frozen=True)
class Drawn:
    span: Span
    x: float
    width: float
    milestone: bool

    @property
    def left(self) -> float:
        return self.x + self.width / 2 if self.milestone else self.x

    @property
    def right(self) -> float:
        return self.left if self.milestone else self.x + self.width


@pytest.fixture(scope="module")
def timelines():
    return stack_timelines(read_stack_file(None))


@pytest.fixture(scope="module")
def drawn(render_mermaid_svg, timelines) -> dict[str, Drawn]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--format", "mermaid"]) == 0
    fenced = out.getvalue().strip().splitlines()
    assert fenced[0] == "```mermaid" and fenced[-1] == "```"
    elements = render_mermaid_svg("\n".join(fenced[1:-1]))
    rects = {a["id"].removeprefix("g-"): a for tag, a in elements
             if tag == "rect" and a.get("id", "").startswith("g-t")}
    spans = {f"t{i}_{j}": s for i, tl in enumerate(timelines) for j, s in enumerate(tl.spans)}
    assert set(rects) == set(spans), "every span is one rect in the SVG, no more, no less"
    return {k: Drawn(spans[k], float(r["x"]), float(r["width"]), "milestone" in r["class"].split())
            for k, r in rects.items()}


def scale(drawn: dict[str, Drawn]) -> tuple[float, float]:
    """(pixel of t=0, pixels per second), read off the chart's earliest and latest span."""
    first = min(drawn.values(), key=lambda d: (d.span.start_s, d.milestone))
    last = max(drawn.values(), key=lambda d: (d.span.end_s, not d.milestone))
    assert first.span.start_s == 0
    return first.left, (last.right - first.left) / last.span.end_s


def test_every_bar_starts_and_ends_in_proportion_to_its_seconds(drawn):
    origin, px_per_s = scale(drawn)
    assert px_per_s > 0
    for ident, d in drawn.items():
        if d.milestone:
            continue
        assert d.left - origin == pytest.approx(d.span.start_s * px_per_s, abs=PIXEL_TOLERANCE), (ident, d)
        assert d.right - origin == pytest.approx(d.span.end_s * px_per_s, abs=PIXEL_TOLERANCE), (ident, d)


def test_every_milestone_is_centred_on_its_time(drawn):
    origin, px_per_s = scale(drawn)
    milestones = [d for d in drawn.values() if d.milestone]
    assert any(d.span.start_s > 0 for d in milestones)
    for d in milestones:
        assert d.left - origin == pytest.approx(d.span.start_s * px_per_s, abs=PIXEL_TOLERANCE), d


def test_rollout_waves_follow_one_another_instead_of_overlapping(drawn, timelines):
    i = next(n for n, tl in enumerate(timelines) if tl.title == "api: rolling deploy")
    waves = [drawn[f"t{i}_{j}"] for j, s in enumerate(timelines[i].spans) if s.label.startswith("wave ")]
    assert len(waves) >= 2
    for before, after in zip(waves, waves[1:]):
        assert after.left > before.left
        assert after.left == pytest.approx(before.right, abs=PIXEL_TOLERANCE)
