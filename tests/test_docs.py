"""The README and docs/ as tests: every Python snippet runs, the site builds with --strict.

Each ```python block of README.md and docs/*.md runs in-process in a fresh namespace, from
a file in a temporary working directory. A block that is deliberately not runnable is fenced as
```text or ```pycon; any other language tag that looks like Python fails the fence check,
so no snippet escapes the test silently.
"""

from __future__ import annotations

import importlib.util
import re
import runpy
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
ALLOWED_TAGS = {"python", "bash", "text", "pycon", "yaml", "json", "toml"}
SNIPPET_BUDGET_S = 20.0
"""Per snippet; the snippets use a few worlds, so each runs in seconds on 2 cores once
Warp's kernel cache is warm (the MuJoCo-Warp one compiles for ~30 s on a cold cache)."""


def fences(page: Path) -> list[tuple[str, int, str]]:
    """(language tag, line of the opening fence, body) of every fenced block of `page`."""
    text = page.read_text()
    return [
        (m.group(1).strip(), text.count("\n", 0, m.start()) + 1, m.group(2))
        for m in FENCE.finditer(text)
    ]


def python_snippets() -> list:
    return [
        pytest.param(body, id=f"{page.relative_to(ROOT)}:{line}")
        for page in PAGES
        for tag, line, body in fences(page)
        if tag == "python"
    ]


@pytest.mark.parametrize("source", python_snippets())
def test_python_snippet_runs(source: str, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "snippet.py"  # a file, so that Warp can read a Warp function's source
    path.write_text(source)
    start = time.perf_counter()
    runpy.run_path(str(path), run_name="__snippet__")
    elapsed = time.perf_counter() - start
    assert elapsed < SNIPPET_BUDGET_S, f"snippet took {elapsed:.1f} s; make it cheaper"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fence_has_a_known_language(page: Path):
    bad = [(line, tag) for tag, line, _ in fences(page) if tag not in ALLOWED_TAGS]
    assert not bad, (
        f"{page.name}: fences {bad} need one of {sorted(ALLOWED_TAGS)}; "
        "use ```text or ```pycon for code that is deliberately not run"
    )


def test_readme_is_a_guide():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200, "README.md should stay under ~200 lines"
    first = fences(ROOT / "README.md")[0]
    assert first[0] == "bash" and "python scripts/train.py" in first[2], (
        "the README's first block must stay the install-and-train command CI runs"
    )
    assert "python -m pytest -q" in first[2]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_scripts_and_relative_links_exist(page: Path):
    text = page.read_text()
    scripts = set(re.findall(r"\bscripts/[\w.]+\.(?:py|sh)\b", text))
    missing = [s for s in scripts if not (ROOT / s).exists()]
    links = re.findall(r"\]\((?!https?://)([^)#\s]+)(?:#[^)]*)?\)", text)
    missing += [link for link in links if not (page.parent / link).exists()]
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def test_mkdocs_build_strict(tmp_path):
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (pip install -e '.[docs]')")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-q",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "api" / "index.html").exists()
