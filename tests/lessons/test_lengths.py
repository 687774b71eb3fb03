"""One figure per lesson, everywhere (issue 34.6): the lengths ``lessons/_build/lengths.py``
re-times from measured runs are the ones the pages quote, and every workshop plan in
docs/WORKSHOP.md adds up and fits its slot with 10% to spare."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lessons" / "_build"))
lengths = pytest.importorskip("lengths")


def text(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def clock(hm: str) -> int:
    hours, minutes = hm.split(":")
    return 60 * int(hours) + int(minutes)


def test_a_figure_counts_reading_outputs_labs_and_a_failed_attempt() -> None:
    """03 has a lab, printed reports and an exercise: each adds to its figure."""
    m = lengths.measure("03_python_scalar_trap")
    assert m["labs"] == 1 and m["printed words"] > 300 and m["predictions"] == 3
    assert m["exercise min"] == lengths.EXERCISE_MINUTES["03"] + 3
    parts = m["reading min"] + m["predictions"] + 3 * m["labs"] + m["exercise min"] + m["run min"]
    assert m["total min"] == pytest.approx(parts)
    assert m["rounded"] - 5 < m["total min"] <= m["rounded"]
    assert set(lengths.RUN_SECONDS) == {name[:2] for name in lengths.LESSONS}
    assert all(seconds > 0 for seconds in lengths.RUN_SECONDS.values())


def test_every_page_quotes_the_re_timed_figures() -> None:
    figures = lengths.figures()
    total = lengths.hours_text(lengths.course_minutes())
    readme = text("lessons/README.md")
    lesson_00 = "\n".join(c.source for c in lengths.LESSONS["00_start_here"]())
    for nn, minutes in figures.items():
        assert re.search(rf"\n\| {nn} \| [^\n]*\| {minutes} min( \([^)]*\))? \|", readme), nn
        assert re.search(rf"\n\| {nn} \| [^\n]*\| {minutes} min \|", lesson_00), nn
    assert f"**{total}** in all ({lengths.course_minutes()} minutes" in readme
    assert f"`tf.function` guide ({figures['09']} min)" in readme
    assert f"\n{total} in all for 00–08" in lesson_00
    assert f"{lengths.WORDS_PER_MINUTE} words a\nminute" in readme
    workshop = text("docs/WORKSHOP.md")
    listed = ", ".join(f"{nn} {figures[nn]} min" for nn in lengths.COURSE)
    assert f"{total} in all: {listed}".replace(" ", "") in re.sub(r"\s", "", workshop)
    assert f"`lessons/09_…` ({figures['09']} min, optional)" in workshop
    main = text("README.md")
    assert f"({total}, re-timed per lesson from measured runs" in main
    assert f"`tf.function` guide, {figures['09']} min;" in main
    # no page keeps an older total
    for page in (readme, lesson_00, workshop, main):
        assert "3 h 40" not in page and "220 minutes" not in page


PLAN = re.compile(r"\*\*(\d+) (minutes|hours)\*\* \([^)]*planned: (\d+) min\)\n\n\| time \| what \|\n\| --- \| --- \|\n((?:\|[^\n]*\n)+)")


def test_each_workshop_plan_adds_up_and_fits_its_slot_with_10_percent_spare() -> None:
    figures = lengths.figures()
    workshop = text("docs/WORKSHOP.md")
    plans = PLAN.findall(workshop)
    assert len(plans) == 2
    for size, unit, planned, table in plans:
        slot = int(size) * (60 if unit == "hours" else 1)
        rows = [row.split(" | ", 1) for row in table.strip().splitlines()]
        at = 0
        for start, what in rows:
            assert clock(start.strip("| ")) == at, (slot, start, what)
            if what.startswith("End"):
                break
            lesson = re.match(r"(\d\d) · [^(]*\((\d+) min\)", what)
            if lesson:
                assert int(lesson.group(2)) == figures[lesson.group(1)], what
            at += int(re.search(r"\((\d+) min", what).group(1))
        assert what.startswith(f"End: {slot - at} min spare")
        assert at == int(planned) and at <= 0.9 * slot, (slot, at)
    four = re.search(r"\*\*4 hours\*\* \([^)]*planned: (\d+) min\): the 3-hour plan up to (\d:\d\d), (.*?)spare\.", workshop, re.S)
    assert four, "the 4-hour plan"
    body = four.group(3)
    at = clock(four.group(2)) + sum(int(n) for n in re.findall(r"\((\d+) min", body))
    assert f"{figures['05']} min" in body and f"end at {at // 60}:{at % 60:02d}" in body
    assert at == int(four.group(1)) and at <= 0.9 * 240 and f"{240 - at} min" in body


def _lesson_cells(nn: str) -> list[tuple[str, str]]:
    lesson = next(name for name in lengths.LESSONS if name.startswith(nn))
    return [(c.cell_type, c.source) for c in lengths.LESSONS[lesson]()]


def test_running_late_drops_only_parts_of_the_plans_lessons_without_a_prediction() -> None:
    """WORKSHOP.md's drop order (issue 34, after the re-timing): every part it names is in a
    lesson some plan teaches in the room, exists under that heading, and holds no graded
    prediction and no exercise; the labs it names are there."""
    workshop = text("docs/WORKSHOP.md")
    late = re.search(r"\*\*When you run late, drop in this order\*\*(.*?)\n\n", workshop, re.S)
    assert late, "the drop order"
    body = re.sub(r"\s+", " ", late.group(1))
    agenda = workshop[workshop.index("## Agenda") : late.start()]
    planned = set(re.findall(r"\b(0\d) · ", agenda))  # the plans' rows, and the 4-hour plan's 05
    if re.search(r"\*\*4 hours\*\*.*07's custom loop on the projector", agenda, re.S):
        planned.add("07")
    assert planned == {"00", "02", "03", "04", "05", "07"}, planned
    parts = re.findall(r"(\d\d)'s ((?:\*[^*]+\*(?:,| and)? ?)+)", body)
    named = 0
    for nn, headings in parts:
        assert nn in planned, f"{nn} is in no plan"
        cells = _lesson_cells(nn)
        for heading in re.findall(r"\*([^*]+)\*", headings):
            starts = [
                i
                for i, (kind, src) in enumerate(cells)
                if kind == "markdown" and re.search(rf"^#+ {re.escape(heading)}$", src, re.M)
            ]
            assert len(starts) == 1, f"{nn}: no heading {heading!r}"
            heads = [i for i, (kind, src) in enumerate(cells) if kind == "markdown" and re.search(r"^#+ ", src, re.M)]
            end = next((i for i in heads if i > starts[0]), len(cells))
            inside = "".join(src for _, src in cells[starts[0] : end])
            assert "ex.check_prediction(" not in inside and "ex.check(" not in inside, f"{nn}: {heading!r}"
            named += 1
    assert named == 6, parts
    labs = re.search(r"the labs of ([\d, and]+) \(", body)
    assert labs
    for nn in re.findall(r"\d\d", labs.group(1)):
        assert nn in planned and any("RetraceLab(" in src for _, src in _lesson_cells(nn)), nn
    assert "07's custom loop on the projector (4 hours: 10 min" in body and "XLA" not in body
