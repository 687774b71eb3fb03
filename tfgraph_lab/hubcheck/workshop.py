"""Launch links for workshops: one per learner for the lessons (Binder JupyterLab, nbgitpuller),
and Voila app mode for the labs app.

The repository URL lives in one place, ``[project.urls] Repository`` in ``pyproject.toml``. It is
read from the installed package's metadata (``Project-URL: Repository, …``) and, when the
package metadata does not carry it (running from a bare checkout), from ``pyproject.toml``.

Everything here is pure string work except :func:`repository_url` and :func:`find_lessons_dir`,
which read files. ``tfgraph-lab workshop-links --ref TAG`` (in :mod:`tfgraph_lab.faces.cli`) prints the
links; see
``docs/WORKSHOP.md`` for how a facilitator uses them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from ..model.errors import UsageProblem

__all__ = [
    "BINDER_BASE",
    "KINDS",
    "MOVING_REFS",
    "WorkshopLink",
    "binder_url",
    "find_lessons_dir",
    "format_links",
    "github_org_repo",
    "list_lessons",
    "nbgitpuller_url",
    "repository_url",
    "workshop_links",
]

DISTRIBUTION = "tfgraph-lab"
BINDER_BASE = "https://mybinder.org"
LESSONS_DIRNAME = "lessons"

#: Link kinds, in the order they are printed for each lesson.
KINDS = ("binder-lab", "binder-voila", "nbgitpuller")
_KIND_LABELS = {
    "binder-lab": "Binder, JupyterLab",
    "binder-voila": "Binder, app (Voila)",
    "nbgitpuller": "JupyterHub (nbgitpuller)",
}
# Refs that move: Binder rebuilds the image whenever they do, so a workshop should pin a tag.
MOVING_REFS = frozenset({"main", "master", "HEAD", "develop", "dev"})


@dataclass(frozen=True)
class WorkshopLink:
    """One launch link: which lesson (notebook file name), which kind (see :data:`KINDS`), URL."""

    lesson: str
    kind: str
    url: str


# ---------------------------------------------------------------------------------------------
# Where the repository and the lessons are


def _url_from_project_urls(entries: Iterable[str]) -> str | None:
    """``Project-URL`` metadata entries look like ``"Repository, https://…"``."""
    for entry in entries:
        label, sep, url = entry.partition(",")
        if sep and label.strip().lower() == "repository" and url.strip():
            return url.strip()
    return None


def _url_from_pyproject(text: str) -> str | None:
    """The ``Repository`` value of ``[project.urls]`` in a pyproject.toml text."""
    if sys.version_info >= (3, 11):
        import tomllib

        urls = tomllib.loads(text).get("project", {}).get("urls", {})
        for label, url in urls.items():
            if label.lower() == "repository" and isinstance(url, str) and url:
                return url
        return None
    return _scan_pyproject_urls(text)  # pragma: no cover - Python 3.10


def _scan_pyproject_urls(text: str) -> str | None:
    """Python 3.10 has no tomllib: a line scan of the one table needed."""
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        header = re.fullmatch(r"\[\s*([^\[\]]+?)\s*\]", line)
        if header:
            section = header.group(1)
            continue
        if section == "project.urls":
            match = re.fullmatch(r"""["']?[Rr]epository["']?\s*=\s*["']([^"']+)["']""", line)
            if match:
                return match.group(1)
    return None


def _checkout_roots(start: Path | None = None) -> list[Path]:
    """Candidate checkout roots: the one holding this package (editable install), then cwd."""
    roots = [Path(__file__).resolve().parents[2]]
    here = (start or Path.cwd()).resolve()
    roots.extend([here, *here.parents])
    seen: list[Path] = []
    for root in roots:
        if root not in seen:
            seen.append(root)
    return seen


def repository_url(pyproject: Path | None = None) -> str:
    """The project's repository URL (``[project.urls] Repository``).

    With ``pyproject`` given, that file is read. Otherwise the installed distribution's
    metadata is tried first, then the ``pyproject.toml`` of the checkout this module sits in or
    of the current directory.
    """
    if pyproject is None:
        try:
            entries = metadata.metadata(DISTRIBUTION).get_all("Project-URL") or []
        except metadata.PackageNotFoundError:
            entries = []
        url = _url_from_project_urls(entries)
        if url:
            return url
        candidates = [root / "pyproject.toml" for root in _checkout_roots()]
    else:
        candidates = [pyproject]
    for candidate in candidates:
        if candidate.is_file():
            url = _url_from_pyproject(candidate.read_text(encoding="utf-8"))
            if url:
                return url
    raise UsageProblem(
        "no repository URL found: neither the installed tfgraph-lab metadata nor a pyproject.toml "
        "has [project.urls] Repository. Run from a checkout, or pass --repository URL."
    )


def github_org_repo(url: str) -> tuple[str, str]:
    """``("ORG", "REPO")`` of a GitHub repository URL (``.git`` and a trailing slash allowed)."""
    parts = urlsplit(url.strip())
    path = parts.path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    pieces = path.split("/")
    if (
        parts.scheme not in ("https", "http")
        or parts.netloc.lower() not in ("github.com", "www.github.com")
        or len(pieces) != 2
        or not all(pieces)
    ):
        raise UsageProblem(
            f"repository URL {url!r} is not a GitHub repository URL like "
            "https://github.com/ORG/REPO; Binder's gh provider needs one."
        )
    return pieces[0], pieces[1]


def find_lessons_dir(start: Path | None = None) -> Path:
    """The ``lessons/`` folder of the checkout this package lives in, or of cwd (or a parent)."""
    for root in _checkout_roots(start):
        candidate = root / LESSONS_DIRNAME
        if candidate.is_dir() and any(candidate.glob("*.ipynb")):
            return candidate
    raise UsageProblem(
        "no lessons/ folder with notebooks found next to the package or in the current directory; "
        "run from a checkout of the repository, or pass --lessons-dir DIR."
    )


def list_lessons(lessons_dir: Path) -> list[str]:
    """The notebook file names in ``lessons_dir``, sorted (lesson numbers order them)."""
    return sorted(p.name for p in lessons_dir.glob("*.ipynb") if p.is_file())


# ---------------------------------------------------------------------------------------------
# URLs


def _check_ref(ref: str) -> str:
    ref = ref.strip()
    if not ref or any(ch.isspace() for ch in ref):
        raise UsageProblem(f"--ref {ref!r} is not a git tag, branch or commit name")
    return ref


def _check_lesson(name: str) -> str:
    if not name.endswith(".ipynb") or "/" in name or "\\" in name or name.startswith("."):
        raise UsageProblem(f"lesson {name!r} is not a notebook file name in lessons/ (NAME.ipynb)")
    return name


def binder_url(org: str, repo: str, ref: str, urlpath: str, base: str = BINDER_BASE) -> str:
    """``BASE/v2/gh/ORG/REPO/REF?urlpath=URLPATH`` (the ref percent-encoded, slashes included)."""
    ref = _check_ref(ref)
    return (
        f"{base.rstrip('/')}/v2/gh/{quote(org, safe='')}/{quote(repo, safe='')}/"
        f"{quote(ref, safe='')}?urlpath={quote(urlpath, safe='/')}"
    )


def nbgitpuller_url(hub: str, repo_url: str, ref: str, urlpath: str) -> str:
    """``HUB/hub/user-redirect/git-pull?repo=…&branch=REF&urlpath=…``, every value URL-encoded."""
    ref = _check_ref(ref)
    hub_parts = urlsplit(hub.strip())
    if hub_parts.scheme not in ("https", "http") or not hub_parts.netloc:
        raise UsageProblem(f"--hub {hub!r} is not a JupyterHub URL like https://hub.example.org")
    query = urlencode(
        {"repo": repo_url, "branch": ref, "urlpath": urlpath},
        quote_via=quote,
        safe="",
    )
    return f"{hub.strip().rstrip('/')}/hub/user-redirect/git-pull?{query}"


def _is_lesson(name: str) -> bool:
    """A numbered lesson (``NN_title.ipynb``); other notebooks (the labs app) are apps."""
    return re.match(r"^\d\d_", name) is not None


def workshop_links(
    ref: str,
    hub: str | None = None,
    *,
    lessons: Sequence[str] | None = None,
    repository: str | None = None,
    binder_base: str = BINDER_BASE,
) -> list[WorkshopLink]:
    """The launch links of a workshop: **one per learner** for the lessons — Binder JupyterLab
    opened at the first lesson (and, with ``hub``, the same through nbgitpuller); learners open
    the next lessons from JupyterLab's file browser in the same session, so each learner starts
    one Binder session, not one per lesson (Binder limits sessions per repository). Voila links
    only for the notebooks that are apps (not numbered ``NN_…``: the labs app).

    ``lessons`` defaults to :func:`list_lessons` of :func:`find_lessons_dir`; ``repository`` to
    :func:`repository_url`."""
    ref = _check_ref(ref)
    repo_url = repository if repository is not None else repository_url()
    org, repo = github_org_repo(repo_url)
    names = [
        _check_lesson(name) for name in (lessons if lessons is not None else list_lessons(find_lessons_dir()))
    ]
    if not names:
        raise UsageProblem("no lessons to link: lessons/ holds no .ipynb notebooks")
    numbered = sorted(name for name in names if _is_lesson(name))
    links: list[WorkshopLink] = []
    if numbered:
        first = numbered[0]
        path = f"{LESSONS_DIRNAME}/{first}"
        links.append(
            WorkshopLink(first, "binder-lab", binder_url(org, repo, ref, f"lab/tree/{path}", binder_base))
        )
        if hub is not None:
            # nbgitpuller clones into a folder named after the repository.
            links.append(
                WorkshopLink(
                    first, "nbgitpuller", nbgitpuller_url(hub, repo_url, ref, f"lab/tree/{repo}/{path}")
                )
            )
    for app in (name for name in names if not _is_lesson(name)):
        path = f"{LESSONS_DIRNAME}/{app}"
        links.append(
            WorkshopLink(app, "binder-voila", binder_url(org, repo, ref, f"voila/render/{path}", binder_base))
        )
    return links


# ---------------------------------------------------------------------------------------------
# Output


def _lesson_title(name: str) -> str:
    return name[: -len(".ipynb")] if name.endswith(".ipynb") else name


def format_links(links: Sequence[WorkshopLink], fmt: str = "text") -> str:
    """Render links grouped by lesson: ``text`` (for a terminal or a chat message) or
    ``markdown`` (a table of Binder badges for a README)."""
    by_lesson: dict[str, dict[str, str]] = {}
    for link in links:
        by_lesson.setdefault(link.lesson, {})[link.kind] = link.url
    if fmt == "text":
        width = max(len(label) for label in _KIND_LABELS.values())
        blocks = []
        for lesson, urls in by_lesson.items():
            lines = [lesson]
            if "binder-lab" in urls or "nbgitpuller" in urls:
                lines.append("  one link per learner: the other lessons open from JupyterLab's file browser")
            lines.extend(f"  {_KIND_LABELS[kind]:<{width}}  {urls[kind]}" for kind in KINDS if kind in urls)
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks) + ("\n" if blocks else "")
    if fmt == "markdown":
        kinds = [kind for kind in KINDS if any(kind in urls for urls in by_lesson.values())]
        header = "| Lesson | " + " | ".join(_KIND_LABELS[kind] for kind in kinds) + " |"
        rule = "| --- |" + " --- |" * len(kinds)
        rows = [header, rule]
        for lesson, urls in by_lesson.items():
            cells = []
            for kind in kinds:
                url = urls.get(kind)
                if url is None:
                    cells.append("")
                elif kind.startswith("binder"):
                    cells.append(f"[![Binder](https://mybinder.org/badge_logo.svg)]({url})")
                else:
                    cells.append(f"[open on the hub]({url})")
            rows.append(f"| `{_lesson_title(lesson)}` | " + " | ".join(cells) + " |")
        return "\n".join(rows) + "\n"
    raise UsageProblem(f"unknown format {fmt!r}: use 'text' or 'markdown'")
