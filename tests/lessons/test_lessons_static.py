"""Static checks of the committed lesson notebooks (fast; nbval executes them separately)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tfgraph_lab.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
NOTEBOOKS = sorted((ROOT / "lessons").glob("*.ipynb"))
MACHINE = re.compile(r"/tmp/ipykernel|/root/|/home/\w|/work/|site-packages")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def test_ten_lessons_numbered_from_zero() -> None:
    """00–08 the course, 09 the extras from TF's tf.function guide."""
    assert [p.name[:2] for p in LESSONS] == [f"{n:02d}" for n in range(10)]


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_is_clean_and_starts_quietly(path: Path) -> None:
    assert path.stat().st_size < 200_000
    cells = _cells(path)
    first_code = next(_source(c) for c in cells if c["cell_type"] == "code")
    env = first_code.index('os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"')
    assert env < first_code.index("import tensorflow") and "%load_ext tfgraph_lab" in first_code
    text = json.dumps([c.get("outputs", []) for c in cells])
    assert not MACHINE.search(text), MACHINE.search(text)
    assert "application/vnd.jupyter.widget-view+json" not in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    """Predict before you see: no stored output may show an answer (on GitHub, on Binder before
    the cell runs). nbval executes these unrun cells without comparing outputs."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in notebook["metadata"]
    for n, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert cell["outputs"] == [], f"cell {n} has stored outputs: rebuild with lessons/_build"
        assert cell["execution_count"] is None, f"cell {n} has an execution count"
        assert "NBVAL_CHECK_OUTPUT" not in _source(cell), f"cell {n}: nothing stored to check against"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_no_answer_in_a_learners_cell_metadata(path: Path) -> None:
    """JupyterLab's property inspector shows cell metadata: answers live in the build sources
    and the answer key only."""
    for n, cell in enumerate(_cells(path)):
        assert "answer" not in cell.get("metadata", {}).get("tfgraph_lab", {}), f"cell {n}"


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_each_exercise_appears_with_its_starter_and_check(exercise_id: str) -> None:
    exercise = EXERCISES[exercise_id]
    sources = [_source(c) for c in _cells(LESSONS[exercise.lesson])]
    assert exercise.starter.strip() in [s.strip() for s in sources]
    assert exercise.check_call in sources


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_lesson_grades_a_prediction_before_showing_it(path: Path) -> None:
    """A guess cell (left empty for the learner), then the cell that measures, then the grade."""
    sources = [_source(c) for c in _cells(path)]
    graded = [i for i, s in enumerate(sources) if s.startswith("ex.check_prediction(")]
    assert graded, "every lesson records at least one prediction"
    for i in graded:
        name = sources[i][len("ex.check_prediction(") :].split(",")[0]
        guess_at = next(j for j, s in enumerate(sources) if s.startswith(f"{name} = None"))
        assert guess_at < i - 1, f"{name}: the guess comes before the cell that measures it"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_labs_open_with_a_preset_and_a_goal(path: Path) -> None:
    labs = [_source(c) for c in _cells(path) if "RetraceLab(" in _source(c)]
    for source in labs:
        assert "settings=LabSettings(" in source and "goal=" in source
        assert "goal=''" not in source and 'goal=""' not in source


def test_labs_differ_between_lessons() -> None:
    labs = [_source(c) for p in LESSONS for c in _cells(p) if "RetraceLab(" in _source(c)]
    assert len(labs) >= 4 and len(set(labs)) == len(labs)


@pytest.mark.parametrize("stem", ["07_training_loop_clinic", "08_capstone"])
def test_live_view_shows_the_time_spikes(stem: str) -> None:
    sources = [_source(c) for c in _cells(ROOT / "lessons" / f"{stem}.ipynb")]
    assert any("%%tracewatch --live" in s or "watch(live=True)" in s for s in sources)


def test_answer_key_lives_outside_lessons_and_every_answer_was_right() -> None:
    keys = sorted((ROOT / "docs" / "answer_key").glob("[0-9][0-9]_*.ipynb"))
    assert [k.name for k in keys] == [p.name for p in LESSONS]
    for key in keys:
        cells = _cells(key)
        last = json.dumps(cells[-1]["outputs"])
        assert "predictions graded, all right" in last, key.name
        outputs = json.dumps([c.get("outputs", []) for c in cells])
        assert not re.search(r"/tmp/ipykernel|/root/|/home/\w|/work/", outputs), key.name
        passed = [c for c in cells if _source(c).startswith("ex.check(")]
        for cell in passed:
            assert "✓" in json.dumps(cell["outputs"], ensure_ascii=False), f"{key.name}: a solution failed"


def test_cheat_sheet_names_every_reason_code_and_links_lessons() -> None:
    text = (ROOT / "lessons" / "CHEATSHEET.md").read_text(encoding="utf-8")
    from tfgraph_lab.explain.trace import CODES

    for code in CODES:
        assert f"`{code}`" in text, code


def test_a_lab_shows_its_preset_and_goal() -> None:
    """The lessons' lab cells rely on RetraceLab(settings=..., goal=...)."""
    pytest.importorskip("ipywidgets")
    pytest.importorskip("tensorflow")
    from tfgraph_lab.widgets import LabSettings, RetraceLab

    lab = RetraceLab(settings=LabSettings(flag="tensor", batch=20), goal="one trace <for> all sizes")
    assert lab.flag.value == "tensor" and lab.batch.value == 20
    assert "Goal: one trace <for> all sizes" in lab.text()
    header = lab.children[0].value
    assert "one trace &lt;for&gt; all sizes" in header and "<for>" not in header


# ----------------------------------------------------------------------- every prediction open
KEYS = sorted((ROOT / "docs" / "answer_key").glob("[0-9][0-9]_*.ipynb"))
GUESS = re.compile(r"^(\w+) = (.+?)   # the answer$")
GRADE = re.compile(r"^ex\.check_prediction\((\w+), (.+?)(?:, '(\w+)')?(?:, what=.*)?\)$")
#: Words that narrate what a measuring cell will do: a comment saying "cached" or "retrace"
#: next to a call gives the prediction away.
OUTCOME_WORDS = re.compile(r"cached|retrac|trace|new key|aliasing|-changed|graph", re.IGNORECASE)
#: Sentences that once stated an answer above its prediction (issue 20): none may come back
#: anywhere above it, in its lesson or an earlier one.
GIVEAWAYS = {
    "my_guess": [
        "same shape and dtype as the first call",
        "a longer vector",
        "the same length as the third",
        "one extra graph per new size",
        "same signature reuses",
        "same signature: served by the cached graph",
    ],
    "print_guess": ["go stale too"],
    "raise_guess": ["it cannot create a new one", "inside the function on every call"],
    "flag_guess": ["decided at trace time", "makes two graphs", "a graph per Python value"],
    "warn_guess": ["at most twice"],
    "faster_guess": ["Retracing can be slower than no graph at all", "slower than plain eager mode"],
    "unrolled_guess": ["part of the cache key", "every new `n`"],
    "mean_guess": ["same value: cached", "its value is part of the key"],
    "attribute_guess": [
        "the graph still uses the value it",
        "settings.scale                # read",
        "go stale too",
        "stale closures and attributes",
        "the graph keeps the old values",
        "global, closure variable or **attribute",
    ],
    "recreated_guess": ["a new tf.function object every time", "with an empty cache", "empty caches"],
    "dtype_guess": [
        "shapes only",
        "not dtypes",
        "generalises *shapes*",
        "does not help with a dtype",
        "does **not** help",
    ],
    "variable_guess": ["a new aliasing pattern", "a new key", "still two distinct ones"],
    "structure_guess": [
        "structure-changed",
        "**structure** (length, keys, nesting) is part",
        "with the same keys shares one graph",
    ],
    "frozen_guess": ["reuses the graph while", "a changed value is a new key", "a new value is a new key"],
    "loop_guess": ["2 graphs per epoch", "graphs per epoch", "train_model(epochs=2)", "for the new learning rate"],
    "nested_guess": ["into its own cache", "reuses it"],
    "iterator_guess": ["An iterator's signature is its", "one graph serves every batch", "keyed by the dataset's"],
    "init_guess": ["and only then", "once per trace"],
    "cond_guess": ["traces both branches", "both are traced"],
    "extension_guess": ["is keyed by its spec (dtype and shape)", "keyed by spec"],
    "kept_guess": ["cache has no limit", "grows without bound", "all kept"],
}


def _key_predictions(path: Path) -> list[tuple[int, str, str, str | None]]:
    """(cell index of the guess, name, answer, function) for every graded prediction in a key."""
    cells = _cells(path)
    found = []
    for i, cell in enumerate(cells):
        guess = GUESS.match(_source(cell)) if cell["cell_type"] == "code" else None
        if guess is None:
            continue
        grade = next(GRADE.match(_source(c)) for c in cells[i:] if _source(c).startswith("ex.check_prediction("))
        assert grade is not None and grade.group(1) == guess.group(1), path.name
        found.append((i, guess.group(1), guess.group(2), grade.group(3)))
    return found


def _output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        parts.append("".join(text))
    return "\n".join(parts)


@pytest.mark.parametrize("key", KEYS, ids=[k.stem for k in KEYS])
def test_no_answer_shows_above_its_prediction(key: Path) -> None:
    """For every graded prediction: no output above it (as the learner runs the lesson top to
    bottom; the key holds those outputs) prints the answer for the measured function, no comment
    in the cells that measure it narrates the outcome, and no sentence that once gave it away
    is back above it."""
    cells = _cells(key)
    earlier = "".join(_source(c) for k in KEYS if k.name < key.name for c in _cells(k))
    for at, name, answer, function in _key_predictions(key):
        above = cells[:at]
        if answer.isdigit():
            number = re.compile(rf"(?<![\w.#]){answer}(?![\w.]| ?(ms|s|µs)\b)")
            for n, cell in enumerate(above):
                for line in _output_text(cell).splitlines():
                    line = re.sub(r"In \[\d+\]|line \d+|call #\d+", "", line)  # places, not counts
                    if function is None:
                        bad = re.search(rf"(?<![\w.]){answer} (traces|graphs)", line)
                    else:
                        bad = function in line and number.search(line.split(function, 1)[1])
                    assert not bad, f"{name}: cell {n}'s output shows the answer {answer}: {line!r}"
        grade_at = next(j for j in range(at, len(cells)) if _source(cells[j]).startswith("ex.check_prediction("))
        for cell in cells[at + 1 : grade_at]:
            for line in _source(cell).splitlines():
                comment = line.split("#", 1)[1] if "#" in line and not line.startswith("%%") else ""
                assert not OUTCOME_WORDS.search(comment), f"{name}: a comment narrates the outcome: {line!r}"
        text = earlier + "".join(_source(c) for c in above)
        for phrase in GIVEAWAYS.get(name, []):
            assert phrase not in text, f"{name}: {phrase!r} is above the prediction"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_predict_prompt_is_answered_and_graded(path: Path) -> None:
    """A "Predict:" in a lesson's text is followed by a guess cell, and every guess is graded."""
    cells = _cells(path)
    sources = [_source(c) for c in cells]
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and re.search(r"Predict(?! mode)", sources[i]):
            nxt = next((j for j in range(i + 1, len(cells)) if cells[j]["cell_type"] == "markdown"), len(cells))
            guesses = [s for s in sources[i + 1 : nxt + 2] if re.match(r"^\w+ = None   # ✏️", s)]
            assert guesses, f"cell {i}: a Predict: prompt without a cell to answer in"
    for s in sources:
        guess = re.match(r"^(\w+) = None   # ✏️", s)
        if guess:
            assert any(t.startswith(f"ex.check_prediction({guess.group(1)},") for t in sources), guess.group(1)


#: What a learner reads before lesson 00: the lessons' README (its table) and lesson 00's own
#: table. Neither may state a graded prediction's answer (issue 34.2).
FIRST_PAGES_GIVEAWAYS = [
    "one extra graph in total",
    "shapes, not dtypes",
    "stale closures and attributes",
    *(phrase for phrases in GIVEAWAYS.values() for phrase in phrases),
]


def test_pages_a_learner_opens_first_give_no_answer_away() -> None:
    readme = (ROOT / "lessons" / "README.md").read_text(encoding="utf-8")
    table = "".join(_source(c) for c in _cells(LESSONS[0])[:1])
    for phrase in FIRST_PAGES_GIVEAWAYS:
        assert phrase not in readme, f"lessons/README.md: {phrase!r}"
        assert phrase not in table, f"lesson 00's table: {phrase!r}"
    assert "it answers none of their predictions" in readme


def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)#\s]+)", text)


def _pages_linked_for_learners() -> dict[str, Path]:
    """Every page of this repository a learner reaches by a link from a lesson, the lessons'
    README or a page reached so (followed through), and every reason page the reports link
    (a report shown in lesson N links the page of each code it shows; the code a page is for
    can be one a later lesson predicts)."""
    from tfgraph_lab.explain import pages

    found: dict[str, Path] = {}
    todo = [ROOT / "lessons" / "README.md", *LESSONS]
    while todo:
        page = todo.pop()
        text = page.read_text(encoding="utf-8")
        if page.suffix == ".ipynb":
            text = "".join(_source(c) for c in _cells(page) if c["cell_type"] == "markdown")
        for link in _links(text):
            if link.startswith(("http:", "https:")):
                continue
            target = (page.parent / link).resolve()
            assert target.exists(), f"{page.name} links {link}, which is not there"
            assert target.is_file(), f"{page.name} links a folder a learner can browse: {link}"
            name = str(target.relative_to(ROOT))
            if name not in found and target.suffix == ".md":
                found[name] = target
                todo.append(target)
    for name in pages.page_names():
        found[f"reason page {name}"] = ROOT / "tfgraph_lab" / "explain" / "reason_pages" / f"{name}.md"
    return found


def test_no_page_a_learner_reaches_answers_a_prediction() -> None:
    """Issue 34.2: the cheat sheet (linked from the lessons' README, read before lesson 00) and
    every reason page (linked from the reports, a page of a code a later lesson predicts) state
    no graded prediction's answer: none of the phrases that once gave one away. A reason code's
    name is the report's vocabulary, not an answer."""
    from tfgraph_lab.explain.trace import CODES

    reached = _pages_linked_for_learners()
    assert "lessons/CHEATSHEET.md" in reached
    assert not any(name.startswith("docs/") for name in reached), sorted(reached)  # WORKSHOP.md, the key
    phrases = {(name, phrase) for name, listed in GIVEAWAYS.items() for phrase in listed if phrase not in CODES}
    for label, path in reached.items():
        text = path.read_text(encoding="utf-8")
        for name, phrase in sorted(phrases):
            assert phrase not in text, f"{label} answers {name}: {phrase!r}"
    cheat_sheet = (ROOT / "lessons" / "CHEATSHEET.md").read_text(encoding="utf-8")
    assert "It answers none of the\nlessons' predictions" in cheat_sheet
    for phrase in FIRST_PAGES_GIVEAWAYS:
        assert phrase in CODES or phrase not in cheat_sheet, f"CHEATSHEET.md: {phrase!r}"


#: The names a measuring cell can leave for its grade: ``NAME = …``, ``… as NAME``, ``-v NAME``.
_BOUND = re.compile(r"^\s*(\w+) = |\bas (\w+):|-v (\w+)", re.MULTILINE)


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_a_grade_reads_what_its_measuring_cell_stored(path: Path) -> None:
    """Grade what the measuring cell measured (issue 34.3): every name a grade reads was bound
    by the cell just above it, and no grade asks TF's live state (a later cell calling the
    function would change the count: 02's print_guess read 5, not 2, after the next cell ran)."""
    import builtins

    sources = [_source(c) for c in _cells(path)]
    for i, source in enumerate(sources):
        grade = GRADE.match(source)
        if grade is None:
            continue
        expression = re.sub(r"'[^']*'|\"[^\"]*\"", "''", grade.group(2))
        assert "experimental_get_tracing_count" not in expression and ".numpy()" not in expression, source
        bound = {name for match in _BOUND.finditer(sources[i - 1]) for name in match.groups() if name}
        names = set(re.findall(r"(?<![.\w])([A-Za-z_]\w*)", expression)) - set(dir(builtins))
        assert names and names <= bound, f"{source}: {sorted(names - bound)} not stored by the cell above"
