"""How long each lesson takes: reading (measured from the build sources) + predictions +
exercises + the kernel's run time (measured by ``build_lessons.py``), in minutes.

    python lessons/_build/lengths.py 00=44 01=52 ...   # NN=seconds the build printed per lesson

Reading: 130 words a minute for the markdown (technical prose, read to predict from), 5 seconds
a line of code. Each graded prediction: 1 minute to think and write it. Exercises: the minutes
below, a first-attempt estimate for a learner new to the topic (the capstone is a whole fix).
These are estimates of a learner's pace, stated with their method in docs/WORKSHOP.md; the
figures the docs quote are this script's output, rounded up to 5 minutes.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from build_lessons import LESSONS

WORDS_PER_MINUTE = 130
SECONDS_PER_CODE_LINE = 5
PREDICTION_MINUTES = 1
EXERCISE_MINUTES = {"00": 3, "01": 6, "02": 4, "03": 6, "04": 6, "05": 5, "06": 5, "07": 8, "08": 20, "09": 6}
#: Lesson 07's optional XLA part (its heading starts with "Optional"), reported on its own.
OPTIONAL = re.compile(r"^## Optional")


def measure(name: str, run_seconds: float) -> dict[str, float]:
    words = code_lines = predictions = 0
    optional_words = optional_lines = 0
    in_optional = False
    for cell in LESSONS[name]():
        text = cell.source
        if cell.cell_type == "markdown" and text.startswith("## "):
            in_optional = bool(OPTIONAL.match(text))
        if cell.cell_type == "markdown":
            n = len(re.findall(r"\w+", text))
            words += n
            optional_words += n if in_optional else 0
        else:
            n = len([line for line in text.splitlines() if line.strip()])
            code_lines += n
            optional_lines += n if in_optional else 0
            predictions += text.startswith("ex.check_prediction(")
    reading = words / WORDS_PER_MINUTE + code_lines * SECONDS_PER_CODE_LINE / 60
    optional = optional_words / WORDS_PER_MINUTE + optional_lines * SECONDS_PER_CODE_LINE / 60
    total = reading + predictions * PREDICTION_MINUTES + EXERCISE_MINUTES[name[:2]] + run_seconds / 60
    return {
        "words": words,
        "code lines": code_lines,
        "predictions": predictions,
        "reading min": reading,
        "run min": run_seconds / 60,
        "total min": total,
        "optional min": optional,
        "rounded": 5 * math.ceil(total / 5),
    }


def main(argv: list[str]) -> None:
    runs = {a.split("=")[0]: float(a.split("=")[1]) for a in argv}
    grand = 0
    for name in LESSONS:
        m = measure(name, runs.get(name[:2], 0.0))
        grand += m["rounded"]
        print(
            f"{name:28} {m['words']:5.0f} words {m['code lines']:4.0f} code lines "
            f"{m['predictions']:2.0f} predictions  reading {m['reading min']:4.1f} + run "
            f"{m['run min']:3.1f} → {m['total min']:5.1f} min → {m['rounded']} min"
            + (f" (optional part {m['optional min']:.1f} min of reading)" if m["optional min"] else "")
        )
    print(f"all: {grand} min")


if __name__ == "__main__":
    main(sys.argv[1:])
