"""The user-facing text as tests: every link resolves, and nothing speaks of how it was made.

Links: every Markdown link and image of README.md, docs/**/*.md, the READMEs under tasks/
and orbitlab/ and examples/**/*.md (inline `[text](target)`, reference definitions
`[ref]: target`, `<https://...>` autolinks and HTML `href`/`src`), outside fenced code
blocks and code spans, must resolve:

* a relative path names a file or directory inside the repository;
* an `#anchor` names a heading of its target (or of its own page) by GitHub's slug rules
  (lowercase, punctuation other than '-' and '_' removed, each space a '-', repeats
  '-1', '-2', ...), and, for a link between two pages of docs/, by mkdocs' too (runs of
  spaces and '-' one '-', non-ASCII dropped, repeats '_1', '_2', ...): both render it;
* an http(s) link is well formed (a scheme, a host with a dot or 'localhost', no spaces);
  nothing is fetched.

Files named in code spans (`orbitlab/bridge/protocol.py`) exist too.

Wording: no user-facing text (those pages, scripts/, examples/ and the sources under
orbitlab/ and tasks/, docstrings and comments included) speaks of work sessions or issue
numbers; it speaks of dates, commands and facts instead.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]


def link_pages() -> list[Path]:
    """The Markdown pages whose links are checked."""
    pages = [ROOT / "README.md"]
    pages += sorted((ROOT / "docs").rglob("*.md"))
    pages += sorted((ROOT / "tasks").rglob("README.md"))
    pages += sorted((ROOT / "orbitlab").rglob("README.md"))
    pages += sorted((ROOT / "examples").rglob("*.md"))
    return [p for p in pages if p.is_file()]


# --------------------------------------------------------------------------- parsing
FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:[^`\n]|\n(?![ \t]*\n))+?\1")
INLINE_LINK = re.compile(
    r"!?\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]"  # text, one level of nested brackets
    r"\(\s*(?:<(?P<angled>[^>\n]*)>|(?P<target>[^\s()]*(?:\([^\s()]*\)[^\s()]*)*))"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
REFERENCE_DEFINITION = re.compile(
    r"^ {0,3}\[(?P<ref>[^\]]+)\]:\s*<?(?P<target>[^\s>]+)>?", re.MULTILINE
)
AUTOLINK = re.compile(r"<(?P<target>https?://[^>\s]*)>")
HTML_ATTRIBUTE = re.compile(r"<[a-zA-Z][^>]*?\b(?:href|src)\s*=\s*[\"'](?P<target>[^\"']*)[\"']")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(?P<text>.*?)(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
HTML_ID = re.compile(r"<[a-zA-Z][^>]*?\b(?:id|name)\s*=\s*[\"'](?P<id>[^\"']+)[\"']")


def without_code(text: str) -> str:
    """`text` with fenced code blocks and code spans blanked (newlines kept, so line numbers
    and offsets stay those of the file)."""
    out, fence = [], None
    for line in text.split("\n"):
        match = FENCE_OPEN.match(line)
        if fence is None and match:
            fence = match.group(1)
            out.append("")
        elif fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = None
            out.append("")
        else:
            out.append(line)
    prose = "\n".join(out)
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose)


@dataclass(frozen=True)
class Link:
    page: Path
    line: int
    target: str

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}: ({self.target})"


def links(page: Path) -> list[Link]:
    """Every link target of a page, outside code, with its line."""
    prose = without_code(page.read_text(encoding="utf-8"))

    def line_of(offset: int) -> int:
        return prose.count("\n", 0, offset) + 1

    found = []
    for match in INLINE_LINK.finditer(prose):
        target = match.group("angled")
        if target is None:
            target = match.group("target")
        found.append(Link(page, line_of(match.start()), target.strip()))
    for pattern in (REFERENCE_DEFINITION, AUTOLINK, HTML_ATTRIBUTE):
        for match in pattern.finditer(prose):
            found.append(Link(page, line_of(match.start()), match.group("target").strip()))
    return found


# ------------------------------------------------------------------------------ slugs
def heading_text(markdown: str) -> str:
    """A heading's text as rendered: links and images by their text, no code ticks, no
    emphasis markers, no HTML tags."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "")
    text = re.sub(r"(\*{1,3}|_{1,3})(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    return text.strip()


def github_slug(text: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation but '-' and '_' removed, each
    space a '-'."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def mkdocs_slug(text: str) -> str:
    """Python-Markdown's toc anchor (mkdocs' default): ASCII only, punctuation but '-' and
    '_' removed, lowercase, runs of spaces and '-' one '-'."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(page: Path) -> list[str]:
    """The texts of a page's ATX and setext headings, outside code, in order."""
    lines = without_code(page.read_text(encoding="utf-8")).split("\n")
    found = []
    for i, line in enumerate(lines):
        match = ATX_HEADING.match(line)
        if match:
            found.append(heading_text(match.group("text")))
        elif (
            i > 0
            and SETEXT_UNDERLINE.match(line)
            and lines[i - 1].strip()
            and not ATX_HEADING.match(lines[i - 1])
            and not re.match(r"^\s*([-*+]|\d+[.)]|\|)", lines[i - 1])
            and not SETEXT_UNDERLINE.match(lines[i - 1])
        ):
            found.append(heading_text(lines[i - 1]))
    return found


def unique(slugs: list[str], separator: str) -> set[str]:
    """Anchors of headings in order, repeats numbered as each renderer numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for slug in slugs:
        if slug in seen:
            seen[slug] += 1
            out.add(f"{slug}{separator}{seen[slug]}")
        else:
            seen[slug] = 0
            out.add(slug)
    return out


@cache
def anchors(page: Path) -> tuple[frozenset[str], frozenset[str]]:
    """(GitHub's, mkdocs') anchors of a page; explicit HTML ids count for both."""
    texts = headings(page)
    ids = {m.group("id") for m in HTML_ID.finditer(page.read_text(encoding="utf-8"))}
    return (
        frozenset(unique([github_slug(t) for t in texts], "-") | ids),
        frozenset(unique([mkdocs_slug(t) for t in texts], "_") | ids),
    )


# ----------------------------------------------------------------------------- checks
def in_docs(path: Path) -> bool:
    return (ROOT / "docs") in path.parents


def problem(link: Link) -> str | None:
    """Why a link does not resolve, or None."""
    target = link.target
    if not target:
        return "empty target"
    parts = urlsplit(target)
    if parts.scheme in ("http", "https"):
        host = parts.hostname or ""
        if any(c.isspace() for c in target) or not ("." in host or host == "localhost"):
            return "malformed URL"
        return None
    if parts.scheme == "mailto":
        return None if "@" in parts.path else "malformed mailto"
    if parts.scheme or parts.netloc:
        return f"unexpected scheme '{parts.scheme}' (only http, https, mailto or a path)"
    if parts.path.startswith("/"):
        return "absolute path: write it relative to the page"
    path = (link.page.parent / unquote(parts.path)).resolve() if parts.path else link.page
    try:
        path.relative_to(ROOT)
    except ValueError:
        return "points outside the repository"
    if not path.exists():
        return "no such file or directory"
    if parts.fragment:
        if path.suffix != ".md" or not path.is_file():
            return f"an anchor into {path.name}, which is no Markdown page"
        github, mkdocs = anchors(path)
        anchor = unquote(parts.fragment)
        if anchor not in github:
            return f"no heading with GitHub anchor '#{anchor}' in {path.relative_to(ROOT)}"
        if in_docs(link.page) and in_docs(path) and anchor not in mkdocs:
            return f"no heading with mkdocs anchor '#{anchor}' in {path.relative_to(ROOT)}"
    return None


PAGES = link_pages()


def test_the_checked_pages_exist():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/index.md", "docs/bridge_protocol.md"} <= names
    assert any(n.startswith("tasks/") for n in names)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_resolves(page: Path):
    broken = [f"{link.where()}: {why}" for link in links(page) if (why := problem(link))]
    assert not broken, "broken links:\n" + "\n".join(broken)


NAMED_FILE = re.compile(r"`(?P<path>[\w.-]+(?:/[\w.-]+)+\.(?:md|py|sh|ya?ml|toml|json))`")
"""A repository file named in a code span: a path with a folder and a known extension."""
GENERATED = (".", "runs/", "outputs/", "out/")
"""Paths of files a run writes (`.hydra/config.yaml`, `runs/<task>/...`), not shipped ones."""


def named_files(page: Path) -> list[tuple[int, str]]:
    """(line, path) of every repository file a page names in a code span, outside fences."""
    text = page.read_text(encoding="utf-8")
    out, in_fence = [], None
    for number, line in enumerate(text.split("\n"), 1):
        match = FENCE_OPEN.match(line)
        if in_fence is None and match:
            in_fence = match.group(1)[0]
        elif in_fence is not None:
            if line.strip().startswith(in_fence * 3):
                in_fence = None
        else:
            out += [(number, m.group("path")) for m in NAMED_FILE.finditer(line)]
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_named_repository_files_exist(page: Path):
    """A file named as `path/to/file.py` exists: from the repository root, the page's
    folder or the package (`sensors/noise.py` is orbitlab/sensors/noise.py)."""
    bases = (ROOT, page.parent, ROOT / "orbitlab")
    missing = [
        f"{page.relative_to(ROOT)}:{number}: {path}"
        for number, path in named_files(page)
        if not path.startswith(GENERATED) and not any((base / path).exists() for base in bases)
    ]
    assert not missing, "named files that are not in the repository:\n" + "\n".join(missing)


# ------------------------------------------------------------- the checker itself
def test_slugs_follow_github_and_mkdocs():
    text = heading_text("Fused sensors and a `GPU` step (2026-12-05)")
    assert github_slug(text) == mkdocs_slug(text) == "fused-sensors-and-a-gpu-step-2026-12-05"
    assert github_slug("'ros' mode: the node") == "ros-mode-the-node"
    assert github_slug("a - b") == "a---b" and mkdocs_slug("a - b") == "a-b"
    assert github_slug("snake_case name") == "snake_case-name"
    assert unique(["a", "a", "b"], "-") == {"a", "a-1", "b"}
    assert heading_text("See [Physics](physics.md) **now**") == "See Physics now"


def test_checker_finds_broken_links_and_ignores_code(tmp_path):
    lines = [
        "# Title",
        "[ok](physics.md) [ok too](#orbitlab) ![img](../README.md) [dir](../tasks)",
        "[gone](nowhere.md) [bad anchor](physics.md#no-such-heading)",
        "`[in a code span](nowhere.md)` and [web](https://example.org/a?b#c)",
        "```text",
        "[in a fence](nowhere.md)",
        "```",
        "[no host](https://nohost/x) [outside](../../x.md) [abs](/docs/index.md)",
        "[ref]: also-missing.md",
    ]
    fake = tmp_path / "page.md"
    fake.write_text("\n".join(lines))
    page = ROOT / "docs" / "index.md"  # a real page (heading: orbitlab) as the base
    found = [Link(page, link.line, link.target) for link in links(fake)]
    broken = {(link.line, link.target) for link in found if problem(link)}
    assert broken == {
        (3, "nowhere.md"),
        (3, "physics.md#no-such-heading"),
        (8, "https://nohost/x"),
        (8, "../../x.md"),
        (8, "/docs/index.md"),
        (9, "also-missing.md"),
    }
    assert len(found) == 11  # the fenced and the code-span links are not links


# ---------------------------------------------------------------------------- wording
WORDING = re.compile(
    r"\bsessions?[ -]#?\d+\b"  # "session 13", "session-12"
    r"|\bissues?[ -]?#\d+\b|\bissues? \d+\b"  # "issue #22", "issue 2", "issues 18"
    r"|\b(?:this|previous|earlier|last|next|current) (?:work )?session\b"
    r"|\bwork[ -]sessions?\b"
    r"|\bthis workplace\b",
    re.IGNORECASE,
)
"""Words about how the project was worked on, not about what it does. A "training session"
or a "ROS 2 session" passes: only a numbered or 'this/previous' session is flagged."""
TEXT_SUFFIXES = {".md", ".py", ".sh", ".yaml", ".yml", ".toml", ".txt", ".rst", ".cfg"}


def wording_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "mkdocs.yml", ROOT / "pyproject.toml"]
    for folder in ("docs", "tasks", "examples", "scripts", "orbitlab"):
        files += sorted(
            p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
        )
    return [p for p in files if p.is_file()]


def test_wording_pattern_is_tight():
    for flagged in (
        "in session 13",
        "session-12 figures",
        "blocked, issue 2:",
        "see issue #22",
        "this session's CI",
        "the previous session",
    ):
        assert WORDING.search(flagged), flagged
    for fine in (
        "a ROS 2 session",
        "the training session ended",
        "a recording session is killed",
        "onnxruntime.InferenceSession(path)",
        "the step issues no host read",
        "no issues at 4096 envs",
    ):
        assert not WORDING.search(fine), fine


def test_user_facing_text_names_no_sessions_or_issues():
    hits = []
    for path in wording_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            match = WORDING.search(line)
            if match:
                hits.append(f"{path.relative_to(ROOT)}:{number}: '{match.group(0)}'")
    assert not hits, "speak to users (dates, commands, facts):\n" + "\n".join(hits)


def test_named_files_are_found_outside_fences(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See `shared/spec/x.md` and `a.py`.\n```text\n`orbitlab/gone.py`\n```\n")
    assert named_files(page) == [(1, "shared/spec/x.md")]
