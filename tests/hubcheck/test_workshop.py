"""Workshop launch links: URL shapes, repository URL discovery, lesson listing and the CLI."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tfgraph_lab.faces.cli import add_workshop_links_parser
from tfgraph_lab.hubcheck import workshop
from tfgraph_lab.hubcheck.workshop import (
    WorkshopLink,
    binder_url,
    format_links,
    github_org_repo,
    list_lessons,
    nbgitpuller_url,
    repository_url,
    workshop_links,
)
from tfgraph_lab.model.errors import UsageProblem

REPO = "https://github.com/acme/retrace-course"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/retrace-course", ("acme", "retrace-course")),
        ("https://github.com/acme/retrace-course/", ("acme", "retrace-course")),
        ("https://github.com/acme/retrace-course.git", ("acme", "retrace-course")),
        ("http://www.github.com/Acme/Course", ("Acme", "Course")),
        ("  https://github.com/a/b  ", ("a", "b")),
    ],
)
def test_github_org_repo(url: str, expected: tuple[str, str]) -> None:
    assert github_org_repo(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://gitlab.com/acme/course",
        "https://github.com/acme",
        "https://github.com/acme/course/tree/main",
        "git@github.com:acme/course.git",
        "",
    ],
)
def test_github_org_repo_rejects(url: str) -> None:
    with pytest.raises(UsageProblem, match="GitHub"):
        github_org_repo(url)


@pytest.mark.parametrize(
    ("ref", "urlpath", "expected"),
    [
        (
            "v1.0",
            "lab/tree/lessons/01_intro.ipynb",
            "https://mybinder.org/v2/gh/acme/course/v1.0?urlpath=lab/tree/lessons/01_intro.ipynb",
        ),
        (
            "v1.0",
            "voila/render/lessons/labs_app.ipynb",
            "https://mybinder.org/v2/gh/acme/course/v1.0?urlpath=voila/render/lessons/labs_app.ipynb",
        ),
        (
            "feature/x",
            "lab/tree/lessons/a b.ipynb",
            "https://mybinder.org/v2/gh/acme/course/feature%2Fx?urlpath=lab/tree/lessons/a%20b.ipynb",
        ),
        (
            "0123abc",
            "lab/tree/lessons/x&y.ipynb",
            "https://mybinder.org/v2/gh/acme/course/0123abc?urlpath=lab/tree/lessons/x%26y.ipynb",
        ),
    ],
)
def test_binder_url(ref: str, urlpath: str, expected: str) -> None:
    assert binder_url("acme", "course", ref, urlpath) == expected


def test_binder_url_other_federation_member() -> None:
    url = binder_url("acme", "course", "v1", "lab", base="https://binder.example.org/")
    assert url == "https://binder.example.org/v2/gh/acme/course/v1?urlpath=lab"


@pytest.mark.parametrize("ref", ["", "  ", "v 1", "v\t1"])
def test_bad_refs_rejected(ref: str) -> None:
    with pytest.raises(UsageProblem, match="--ref"):
        binder_url("a", "b", ref, "lab")


def test_ref_whitespace_trimmed() -> None:
    assert binder_url("a", "b", " v1\n", "lab") == "https://mybinder.org/v2/gh/a/b/v1?urlpath=lab"


@pytest.mark.parametrize(
    ("hub", "prefix"),
    [
        ("https://hub.example.org", "https://hub.example.org/hub/user-redirect/git-pull?"),
        ("https://hub.example.org/", "https://hub.example.org/hub/user-redirect/git-pull?"),
        ("https://example.org/jhub/", "https://example.org/jhub/hub/user-redirect/git-pull?"),
    ],
)
def test_nbgitpuller_url(hub: str, prefix: str) -> None:
    url = nbgitpuller_url(hub, REPO, "v2.0", "lab/tree/retrace-course/lessons/01 intro.ipynb")
    assert url.startswith(prefix)
    query = url[len(prefix) :]
    # Every value is percent-encoded: no raw '/', ':' or ' ' in the query string.
    assert not set(query) & set("/: ")
    assert parse_qs(query) == {
        "repo": [REPO],
        "branch": ["v2.0"],
        "urlpath": ["lab/tree/retrace-course/lessons/01 intro.ipynb"],
    }


@pytest.mark.parametrize("hub", ["hub.example.org", "ftp://hub.example.org", "https://"])
def test_nbgitpuller_rejects_bad_hub(hub: str) -> None:
    with pytest.raises(UsageProblem, match="--hub"):
        nbgitpuller_url(hub, REPO, "v1", "lab")


@pytest.mark.parametrize(
    ("hub", "expected"),
    [
        (None, [("01_a.ipynb", "binder-lab"), ("labs_app.ipynb", "binder-voila")]),
        (
            "https://hub.example.org",
            [("01_a.ipynb", "binder-lab"), ("01_a.ipynb", "nbgitpuller"), ("labs_app.ipynb", "binder-voila")],
        ),
    ],
)
def test_one_launch_link_per_learner_and_voila_for_the_app_only(
    hub: str | None, expected: list[tuple[str, str]]
) -> None:
    """Each Binder launch is a new session: one link opens the lessons (learners open the next
    one from the file browser); Voila only for the labs app, never for a lesson."""
    links = workshop_links("v3", hub, lessons=["02_b.ipynb", "01_a.ipynb", "labs_app.ipynb"], repository=REPO)
    assert [(link.lesson, link.kind) for link in links] == expected
    by_key = {(link.lesson, link.kind): link.url for link in links}
    base = "https://mybinder.org/v2/gh/acme/retrace-course/v3"
    assert by_key["01_a.ipynb", "binder-lab"] == f"{base}?urlpath=lab/tree/lessons/01_a.ipynb"
    assert by_key["labs_app.ipynb", "binder-voila"] == f"{base}?urlpath=voila/render/lessons/labs_app.ipynb"
    if hub:
        query = parse_qs(urlsplit(by_key["01_a.ipynb", "nbgitpuller"]).query)
        # nbgitpuller clones into a folder named after the repository.
        assert query["urlpath"] == ["lab/tree/retrace-course/lessons/01_a.ipynb"]
        assert query["branch"] == ["v3"]


@pytest.mark.parametrize("lesson", ["notes.md", "../secret.ipynb", "sub/x.ipynb", ".hidden.ipynb"])
def test_workshop_links_rejects_non_lessons(lesson: str) -> None:
    with pytest.raises(UsageProblem, match="lesson"):
        workshop_links("v1", lessons=[lesson], repository=REPO)


def test_workshop_links_needs_lessons() -> None:
    with pytest.raises(UsageProblem, match="no lessons"):
        workshop_links("v1", lessons=[], repository=REPO)


def test_list_lessons_sorted_notebooks_only(tmp_path: Path) -> None:
    for name in ["10_late.ipynb", "02_mid.ipynb", "01_first.ipynb", "README.md", "data.json"]:
        (tmp_path / name).write_text("{}")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "01_first-checkpoint.ipynb").write_text("{}")
    assert list_lessons(tmp_path) == ["01_first.ipynb", "02_mid.ipynb", "10_late.ipynb"]


def test_find_lessons_dir_from_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "01.ipynb").write_text("{}")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    # Pretend the package is installed outside any checkout.
    monkeypatch.setattr(workshop, "__file__", str(tmp_path / "site" / "tfgraph_lab" / "hubcheck" / "workshop.py"))
    assert workshop.find_lessons_dir(tmp_path / "deep" / "er") == lessons
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    monkeypatch.setattr(workshop, "_checkout_roots", lambda start=None: [empty])
    with pytest.raises(UsageProblem, match="lessons"):
        workshop.find_lessons_dir(empty)


PYPROJECT_CASES = [
    (
        '[project]\nname = "x"\n[project.urls]\nRepository = "https://github.com/o/r"\n',
        "https://github.com/o/r",
    ),
    (
        '[project.urls]\nHomepage = "https://o.example"\nrepository = "https://github.com/o/r2"\n',
        "https://github.com/o/r2",
    ),
    ('[project.urls]\nHomepage = "https://o.example"\n', None),
    ('[tool.x]\nRepository = "https://github.com/not/this"\n', None),
]


@pytest.mark.parametrize(("text", "expected"), PYPROJECT_CASES)
def test_url_from_pyproject(text: str, expected: str | None) -> None:
    assert workshop._url_from_pyproject(text) == expected
    assert workshop._scan_pyproject_urls(text) == expected  # the Python 3.10 path


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["Homepage, https://h", "Repository, https://github.com/o/r"], "https://github.com/o/r"),
        (["repository,https://github.com/o/r"], "https://github.com/o/r"),
        (["Homepage, https://h"], None),
        ([], None),
    ],
)
def test_url_from_project_urls(entries: list[str], expected: str | None) -> None:
    assert workshop._url_from_project_urls(entries) == expected


def test_repository_url_matches_pyproject() -> None:
    """The installed metadata and the checkout's pyproject agree: one source of truth."""
    from_pyproject = repository_url(ROOT / "pyproject.toml")
    assert repository_url() == from_pyproject
    github_org_repo(from_pyproject)


def test_repository_url_falls_back_to_pyproject(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def missing(name: str) -> None:
        raise workshop.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(workshop.metadata, "metadata", missing)
    (tmp_path / "pyproject.toml").write_text('[project.urls]\nRepository = "https://github.com/f/b"\n')
    monkeypatch.setattr(workshop, "_checkout_roots", lambda start=None: [tmp_path])
    assert repository_url() == "https://github.com/f/b"
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    with pytest.raises(UsageProblem, match="Repository"):
        repository_url()


LINKS = [
    WorkshopLink("01_a.ipynb", "binder-lab", "https://b/lab1"),
    WorkshopLink("01_a.ipynb", "binder-voila", "https://b/voila1"),
    WorkshopLink("02_b.ipynb", "binder-lab", "https://b/lab2"),
    WorkshopLink("02_b.ipynb", "binder-voila", "https://b/voila2"),
]


def test_format_text_groups_by_lesson() -> None:
    text = format_links(LINKS)
    blocks = text.strip().split("\n\n")
    assert [block.splitlines()[0] for block in blocks] == ["01_a.ipynb", "02_b.ipynb"]
    assert "https://b/lab1" in blocks[0] and "https://b/voila1" in blocks[0]
    assert "https://b/lab2" not in blocks[0]
    assert "Voila" in blocks[1].splitlines()[-1]
    assert "one link per learner" in blocks[0]


def test_format_markdown_badges() -> None:
    hub = [*LINKS, WorkshopLink("01_a.ipynb", "nbgitpuller", "https://hub/pull1")]
    lines = format_links(hub, "markdown").strip().splitlines()
    assert lines[0].count("|") == 5  # lesson + three kinds
    assert lines[2].startswith("| `01_a` |")
    assert "[![Binder](https://mybinder.org/badge_logo.svg)](https://b/lab1)" in lines[2]
    assert "(https://hub/pull1)" in lines[2]
    assert lines[3].rstrip().endswith("|  |")  # no hub link for 02_b: an empty cell


def test_format_unknown() -> None:
    with pytest.raises(UsageProblem, match="format"):
        format_links(LINKS, "html")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tfgraph-lab")
    sub = parser.add_subparsers(dest="command")
    add_workshop_links_parser(sub)
    return parser.parse_args(argv)


def test_cli_handler_prints_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "01_x.ipynb").write_text("{}")
    args = _parse(
        [
            "workshop-links",
            "--ref",
            "v9",
            "--lessons-dir",
            str(tmp_path),
            "--repository",
            REPO,
            "--hub",
            "https://hub.example.org",
        ]
    )
    assert args.handler(args) == 0
    out, err = capsys.readouterr()
    assert "https://mybinder.org/v2/gh/acme/retrace-course/v9?urlpath=lab/tree/lessons/01_x.ipynb" in out
    assert "git-pull?repo=" in out
    assert err == ""


@pytest.mark.parametrize(
    ("extra", "status", "stderr_has"),
    [
        (["--ref", "main"], 0, "Pin a tag"),
        (["--ref", "v1", "--repository", "https://gitlab.com/a/b"], 2, "GitHub"),
        (["--ref", "v1", "--hub", "not-a-url"], 2, "--hub"),
        (["--ref", "v1", "--binder-url", "binder.example.org"], 2, "--binder-url"),
        (["--ref", "v1", "--lessons-dir", "/nonexistent-folder-xyz"], 2, "--lessons-dir"),
    ],
)
def test_cli_handler_errors_and_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], status: int, stderr_has: str
) -> None:
    (tmp_path / "01_x.ipynb").write_text("{}")
    argv = ["workshop-links", "--lessons-dir", str(tmp_path), "--repository", REPO, *extra]
    args = _parse(argv)
    assert args.handler(args) == status
    assert stderr_has in capsys.readouterr().err


def test_wired_into_console_script(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``tfgraph-lab workshop-links`` exists once the lead's CLI wires the parser in."""
    from tfgraph_lab.faces import cli

    (tmp_path / "01_x.ipynb").write_text(json.dumps({}))
    try:
        status = cli.main(["workshop-links", "--ref", "v1", "--lessons-dir", str(tmp_path)])
    except SystemExit as exc:  # argparse: unknown command
        pytest.fail(f"workshop-links is not a tfgraph-lab command (exit {exc.code})")
    assert status == 0
    out = capsys.readouterr().out
    assert "urlpath=lab/tree/lessons/01_x.ipynb" in out and "voila" not in out


def test_cli_other_binderhub(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "01_x.ipynb").write_text("{}")
    args = _parse(
        ["workshop-links", "--ref", "v1", "--lessons-dir", str(tmp_path), "--repository", REPO,
         "--binder-url", "https://binder.example.org/"]
    )  # fmt: skip
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert (
        "https://binder.example.org/v2/gh/acme/retrace-course/v1?urlpath=lab/tree/lessons/01_x.ipynb" in out
    )
    assert "mybinder.org" not in out


# --------------------------------------------------------------------------------------------
# The facilitator's guide: plans that add up, a hub config that fits the measured kernels

GUIDE = ROOT / "docs" / "WORKSHOP.md"


def _plan_rows(title: str) -> list[tuple[int, str]]:
    """(start minute, what) rows of the agenda table that follows ``title``."""
    text = GUIDE.read_text(encoding="utf-8")
    table = text[text.index(title) :].split("\n\n")[1]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        hours, minutes = cells[0].split(":")
        rows.append((int(hours) * 60 + int(minutes), cells[1]))
    return rows


@pytest.mark.parametrize(("title", "total"), [("**90 minutes**", 90), ("**3 hours**", 180)])
def test_agenda_adds_up_with_slack_for_launches(title: str, total: int) -> None:
    import re

    rows = _plan_rows(title)
    assert rows[0][0] == 0 and "launch" in rows[0][1].lower()
    for (start, what), (next_start, _) in zip(rows, rows[1:] + [(total, "")]):
        found = re.search(r"\((\d+) min|^End: (\d+) min spare", what)
        assert found, what
        minutes = int(found.group(1) or found.group(2))
        assert start + minutes == next_start, f"{what}: ends at {start + minutes}"


def test_hub_config_guarantees_the_measured_memory() -> None:
    import re

    yaml = pytest.importorskip("yaml")
    text = GUIDE.read_text(encoding="utf-8")
    snippet = text[text.index("```yaml") + len("```yaml") :]
    config = yaml.safe_load(snippet[: snippet.index("```")])
    guarantee = config["singleuser"]["memory"]["guarantee"]
    assert guarantee.endswith("G")
    lessons = [
        int(mb)
        for mb in re.findall(r"^\| (?:kernel after running all of lesson )?0\d \| (\d+) MB \|$", text, re.M)
    ]
    server = max(int(mb) for mb in re.findall(r"JupyterLab server[^|]*\| \d+–(\d+) MB", text))
    assert len(lessons) == 9
    assert float(guarantee[:-1]) * 1000 >= max(lessons) + server
    assert config["singleuser"]["extraEnv"]["TF_CPP_MIN_LOG_LEVEL"]
