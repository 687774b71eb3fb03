"""How long each lesson takes one learner, in minutes: the one figure every page quotes.

    python lessons/_build/lengths.py             # the table, from the measurements stored below
    python lessons/_build/lengths.py 00=44 ...   # with new run times (NN=seconds the build printed)

A learner who reads every cell and every output, makes every prediction, plays each lab to its
goal and does the exercise, failing it once:

* reading, at 130 words a minute: the lesson's markdown (counted from the build sources) and the
  words its cells print — the reports, tables and printed results (counted from the answer key,
  docs/answer_key/, which is the lesson run top to bottom; its own last cell left out);
* code, at 5 seconds a line (non-blank lines of the code cells);
* 1 minute per graded prediction, to think and write it;
* 3 minutes per lab, to read its goal and reach it;
* the exercise: a first attempt (the minutes below, an estimate for a learner new to the topic;
  the capstone is a whole fix) and one failed attempt — reading the check's ✗ and a hint,
  changing the code, running it again: 3 minutes (the capstone 5);
* the cells' own time: the lesson run in a fresh kernel by ``build_lessons.py`` (RUN_SECONDS).

Each lesson's figure is its total rounded up to 5 minutes; the course's figure is the sum of
00–08's. tests/lessons/test_lengths.py checks that the pages quote these figures and that every
workshop plan in docs/WORKSHOP.md fits its slot with 10% to spare.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from build_lessons import LESSONS

ROOT = Path(__file__).resolve().parents[2]
WORDS_PER_MINUTE = 130
SECONDS_PER_CODE_LINE = 5
PREDICTION_MINUTES = 1
LAB_MINUTES = 3
EXERCISE_MINUTES = {"00": 3, "01": 6, "02": 4, "03": 6, "04": 6, "05": 5, "06": 5, "07": 8, "08": 20, "09": 6}
FAILED_ATTEMPT_MINUTES = {"08": 5}  # every other lesson: 3
#: Seconds each lesson took to run in a fresh kernel (build_lessons.py, TF 2.21, a 2-core
#: machine shared with other jobs), 2026-12-05.
RUN_SECONDS = {
    "00": 11.5,
    "01": 24.2,
    "02": 16.2,
    "03": 26.1,
    "04": 16.1,
    "05": 15.3,
    "06": 16.1,
    "07": 24.3,
    "08": 26.2,
    "09": 19.2,
}
#: Lesson 07's optional XLA part (its heading starts with "Optional"), reported on its own.
OPTIONAL = re.compile(r"^## Optional")
#: The lessons of the course (09 is optional, after it).
COURSE = ("00", "01", "02", "03", "04", "05", "06", "07", "08")


def count_words(text: str) -> int:
    """Words as a reader counts them: runs of non-space holding a letter or digit
    (`tf.function`, `(32, 8)`'s two numbers, `32.3 ms`'s two words)."""
    return len(re.findall(r"\S*\w\S*", text))


def output_words(name: str) -> int:
    """The words a learner reads in the lesson's outputs: the answer key's, its last cell (the
    key's own check) left out."""
    path = ROOT / "docs" / "answer_key" / f"{name}.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"][:-1]
    words = 0
    for cell in cells:
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain", "") or ""
            words += count_words("".join(text))
    return words


def measure(name: str, run_seconds: float | None = None) -> dict[str, float]:
    nn = name[:2]
    run = RUN_SECONDS[nn] if run_seconds is None else run_seconds
    words = code_lines = predictions = labs = 0
    optional_words = optional_lines = 0
    in_optional = False
    for cell in LESSONS[name]():
        text = cell.source
        if cell.cell_type == "markdown" and text.startswith("## "):
            in_optional = bool(OPTIONAL.match(text))
        if cell.cell_type == "markdown":
            n = count_words(text)
            words += n
            optional_words += n if in_optional else 0
        else:
            n = len([line for line in text.splitlines() if line.strip()])
            code_lines += n
            optional_lines += n if in_optional else 0
            predictions += text.startswith("ex.check_prediction(")
            labs += "RetraceLab(" in text
    printed = output_words(name)
    reading = (words + printed) / WORDS_PER_MINUTE + code_lines * SECONDS_PER_CODE_LINE / 60
    optional = optional_words / WORDS_PER_MINUTE + optional_lines * SECONDS_PER_CODE_LINE / 60
    exercise = EXERCISE_MINUTES[nn] + FAILED_ATTEMPT_MINUTES.get(nn, 3)
    total = reading + predictions * PREDICTION_MINUTES + labs * LAB_MINUTES + exercise + run / 60
    return {
        "words": words,
        "printed words": printed,
        "code lines": code_lines,
        "predictions": predictions,
        "labs": labs,
        "reading min": reading,
        "exercise min": exercise,
        "run min": run / 60,
        "total min": total,
        "optional min": optional,
        "rounded": 5 * math.ceil(total / 5),
    }


def figures() -> dict[str, int]:
    """Each lesson's figure in minutes, by number ("00" … "09")."""
    return {name[:2]: int(measure(name)["rounded"]) for name in LESSONS}


def course_minutes() -> int:
    """00–08 in all: the sum of their figures."""
    found = figures()
    return sum(found[nn] for nn in COURSE)


def hours_text(minutes: int) -> str:
    """``5 h 20 min``, as the pages write it."""
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"


def main(argv: list[str]) -> None:
    runs = {a.split("=")[0]: float(a.split("=")[1]) for a in argv}
    grand = 0
    for name in LESSONS:
        m = measure(name, runs.get(name[:2]))
        grand += m["rounded"] if name[:2] in COURSE else 0
        print(
            f"{name:28} {m['words']:5.0f}+{m['printed words']:4.0f} words {m['code lines']:4.0f} code lines "
            f"{m['predictions']:2.0f} predictions {m['labs']:1.0f} labs  reading {m['reading min']:4.1f} + "
            f"exercise {m['exercise min']:2.0f} + run {m['run min']:3.1f} → {m['total min']:5.1f} min → "
            f"{m['rounded']} min"
            + (f" (optional part {m['optional min']:.1f} min of reading)" if m["optional min"] else "")
        )
    print(f"00–08: {grand} min ({hours_text(grand)})")


if __name__ == "__main__":
    main(sys.argv[1:])
