"""The reference rule: every ``§`` in the repository points at a numbered heading of a file that exists.

Rules checked (all failures are reported at once, as ``file:line: message``):

1. **Section references.** Every ``§N`` / ``§N.M`` in the scanned files is part of a reference
   ``path.md §N``: the nearest ``*.md`` path written earlier on the same line (no other ``.md``
   path in between) names the file, so ranges and lists such as ``docs/theory/two_step.md §5–§8``
   or ``docs/conventions.md §5.2/§5.3`` resolve every number against that file.  The path is
   relative to the repository root (``docs/conventions.md``, ``docs/theory/two_step.md``), the file
   exists, and it has a markdown heading (``#`` to ``####``) whose text starts with the number
   followed by ``.`` or a space (``## 5. Loss ...``, ``### 5.4 Exactly solvable case``).
2. **Self-contained.** No scanned file mentions the ``shared/`` folder of working notes, and no
   ``../`` path points outside the repository (markdown links may use ``../`` only to reach a file
   inside it).
3. **Links.** Relative markdown links and images in ``README.md`` and ``docs/**/*.md`` resolve to
   existing files inside the repository (``http(s)``, ``mailto:`` and pure ``#anchor`` links are
   not checked).

Scanned: every text file under ``rmtfl/``, ``docs/``, ``figures/`` (JSON sidecars included),
``benchmarks/`` and ``tests/``, plus ``README.md``; ``.git``, caches and binary files are skipped,
and so is this file (it holds the patterns).
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve()
SCAN_DIRS = ("rmtfl", "docs", "figures", "benchmarks", "tests")
SCAN_FILES = ("README.md",)
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules"}
BINARY_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".pdf", ".npz", ".npy", ".pkl", ".pickle", ".pyc", ".pyo",
                   ".so", ".sqlite", ".db", ".gz", ".zip", ".tar", ".whl", ".h5", ".hdf5", ".ico", ".woff", ".ttf"}

MD_PATH = re.compile(r"[\w./-]+\.md\b")
SECTION = re.compile(r"§ ?(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{1,4}[ \t]+(\d+(?:\.\d+)*)(?:\.(?!\d)|[ \t]|$)")
FENCE = re.compile(r"^\s*(```|~~~)")
WORKING_NOTES = re.compile(r"(?<![\w.-])shared/")
UP_PATH = re.compile(r"\.\./")
MD_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
INLINE_CODE = re.compile(r"`+[^`\n]*`+")


# ------------------------------------------------------------------------------------------- file discovery
def _is_text(path: Path) -> bool:
    if path.suffix.lower() in BINARY_SUFFIXES:
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except OSError:
        return False
    return b"\0" not in head


def _scanned_files(dirs=SCAN_DIRS, files=SCAN_FILES) -> list[Path]:
    out = [ROOT / f for f in files if (ROOT / f).is_file()]
    for top in dirs:
        base = ROOT / top
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            for name in sorted(filenames):
                p = Path(dirpath) / name
                if p.resolve() != SELF and _is_text(p):
                    out.append(p)
    return out


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return []


def _rel(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.as_posix()


# ------------------------------------------------------------------------------------------- headings
@lru_cache(maxsize=None)
def _section_numbers(rel_path: str) -> frozenset:
    """Numbers of the numbered headings (``#`` to ``####``) of a markdown file, code fences skipped."""
    numbers, fenced = set(), False
    for line in _lines(ROOT / rel_path):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            m = HEADING.match(line)
            if m:
                numbers.add(m.group(1))
    return frozenset(numbers)


def _inside_repo(target: Path) -> bool:
    try:
        target.resolve().relative_to(ROOT)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------------- rule 1
def _section_failures(files) -> list[str]:
    failures = []
    for path in files:
        rel = _rel(path)
        for lineno, line in enumerate(_lines(path), 1):
            if "§" not in line:
                continue
            paths = list(MD_PATH.finditer(line))
            for pos in (i for i, ch in enumerate(line) if ch == "§"):
                where = f"{rel}:{lineno}"
                m = SECTION.match(line, pos)
                if m is None:
                    failures.append(f"{where}: '§' not followed by a section number: {line.strip()[:120]}")
                    continue
                number = m.group(1)
                before = [p for p in paths if p.end() <= pos]
                if not before:
                    failures.append(f"{where}: §{number} names no file; qualify it with its page on the same line, "
                                    f"e.g. 'docs/theory/two_step.md §{number}'")
                    continue
                target = before[-1].group(0)
                while target.startswith("./"):
                    target = target[2:]
                if target.startswith("/") or ".." in Path(target).parts:
                    failures.append(f"{where}: {target} §{number}: the path must be relative to the repository root")
                    continue
                if not (ROOT / target).is_file():
                    failures.append(f"{where}: {target} §{number}: no such file in the repository "
                                    f"(paths are relative to the repository root)")
                    continue
                if number not in _section_numbers(target):
                    failures.append(f"{where}: {target} has no heading numbered {number}")
    return failures


# ------------------------------------------------------------------------------------------- rule 2
def _markdown_link_spans(line: str):
    return [m.span() for m in MD_LINK.finditer(INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line))]


def _self_contained_failures(files) -> list[str]:
    failures = []
    for path in files:
        rel = _rel(path)
        is_md = path.suffix.lower() == ".md"
        for lineno, line in enumerate(_lines(path), 1):
            where = f"{rel}:{lineno}"
            if WORKING_NOTES.search(line):
                failures.append(f"{where}: mentions the working-notes folder 'shared/': {line.strip()[:120]}")
            if "../" not in line:
                continue
            spans = _markdown_link_spans(line) if is_md else []
            for m in UP_PATH.finditer(line):
                in_link = any(a <= m.start() < b for a, b in spans)
                if not in_link:
                    failures.append(f"{where}: '../' path (points outside the repository or its own folder): "
                                    f"{line.strip()[:120]}")
                    break
    return failures


# ------------------------------------------------------------------------------------------- rule 3
def _markdown_files() -> list[Path]:
    return [p for p in _scanned_files(dirs=("docs",)) if p.suffix.lower() == ".md"]


def _link_failures(files) -> list[str]:
    failures = []
    for path in files:
        rel = _rel(path)
        fenced = False
        for lineno, line in enumerate(_lines(path), 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for m in MD_LINK.finditer(INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)):
                target = m.group(1)
                if not target or target.startswith("#") or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue
                file_part = target.split("#", 1)[0].split("?", 1)[0]
                dest = (ROOT / file_part.lstrip("/")) if file_part.startswith("/") else (path.parent / file_part)
                if not _inside_repo(dest):
                    failures.append(f"{rel}:{lineno}: link '{target}' points outside the repository")
                elif not dest.exists():
                    failures.append(f"{rel}:{lineno}: link '{target}' does not resolve to a file")
    return failures


def _report(failures: list[str], what: str) -> str:
    return f"{len(failures)} {what}:\n" + "\n".join(failures)


# ------------------------------------------------------------------------------------------- tests
def test_section_references_resolve():
    """Every § in the repository resolves to a numbered heading of an existing markdown file."""
    failures = _section_failures(_scanned_files())
    assert not failures, _report(failures, "unresolved section references")


def test_docs_section_references_resolve():
    """The same rule restricted to docs/ (the pages cite each other by file and section)."""
    failures = _section_failures(_scanned_files(dirs=("docs",), files=()))
    assert not failures, _report(failures, "unresolved section references in docs/")


def test_no_working_notes_or_outside_paths():
    failures = _self_contained_failures(_scanned_files())
    assert not failures, _report(failures, "references to files outside the repository")


def test_markdown_links_resolve():
    files = [ROOT / "README.md"] if (ROOT / "README.md").is_file() else []
    failures = _link_failures(files + _markdown_files())
    assert not failures, _report(failures, "broken markdown links")


def test_docs_section_numbers_unique():
    """A section number appears once per page, so a reference cannot be ambiguous."""
    failures = []
    for path in _markdown_files():
        seen, fenced = {}, False
        for lineno, line in enumerate(_lines(path), 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            m = None if fenced else HEADING.match(line)
            if m:
                if m.group(1) in seen:
                    failures.append(f"{_rel(path)}:{lineno}: section {m.group(1)} already at line {seen[m.group(1)]}")
                seen.setdefault(m.group(1), lineno)
    assert not failures, _report(failures, "duplicate section numbers")


def test_rule_itself(tmp_path):
    """The checker accepts qualified references, ranges and lists, and rejects the rest."""
    f = tmp_path / "probe.py"
    f.write_text("ok: docs/conventions.md §5 and docs/conventions.md §3–§5, docs/conventions.md §2.1/§2\n"
                 "bad: §7.2 alone\n"
                 "bad: docs/conventions.md §99\n"
                 "bad: conventions.md §5\n", encoding="utf-8")
    lines = [x.split(": ", 1)[0].rsplit(":", 1)[1] for x in _section_failures([f])]
    assert lines == ["2", "3", "4"], lines
