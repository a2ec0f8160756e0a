"""docs/architecture.md against the tree (issue 25 item 7).

Convention of the page: the package tables have one row per package,
``| `path/to/package/` | `module.py` `other.py` ... | description |``: the first cell is the
package directory (relative to the repository, ending in ``/``), the second lists every module of
that package (its ``*.py`` files except ``__init__.py``; subpackages have rows of their own), the
third describes it (a bare ``name.py`` there names a module of the row's package).

Checked here, without importing any project module (the page is read as text, modules as ASTs):

* every package under the five top-level packages has a row, and every row is a package;
* each row's module list is exactly the package's modules; bare module names in descriptions exist;
* every path in backticks under a project directory exists (a directory path under the five
  packages must be a package);
* every dotted name in backticks and every ``"module:function"`` string resolves: the longest
  module prefix is a module or package, and the rest is a name defined at its top level (and a
  member of that class, for one more part);
* every ``python -m X`` in backticks names a runnable module (``X.py`` with a ``__main__`` guard, or
  a package with ``__main__.py``).

Names with placeholders (``<machine>``) are not checked. The checks are functions of (root, text)
returning problems, so the last tests run them on a made-up tree to show that an undocumented
package or a missing module is caught.
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("ila", "mappings", "verify", "compile", "benchmarks")
PATH_ROOTS = PACKAGES + ("tests", "docs")

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"^(?:%s)(?:\.[A-Za-z_]\w*)*$" % "|".join(PACKAGES))
_REF = re.compile(r"\"((?:%s)(?:\.\w+)*):(\w+)\"" % "|".join(PACKAGES))
_PLACEHOLDER = re.compile(r"[<>*{}]")


# ----------------------------------------------------------------------------- reading the page
def code_spans(text: str) -> list[str]:
    """The inline code spans of ``text`` (fenced blocks left out)."""
    return _CODE.findall(_FENCE.sub("", text))


def package_rows(text: str) -> tuple[dict[str, tuple[list[str], list[str]]], list[str]]:
    """The package tables: package path -> (listed modules, code spans of the description), and
    the problems of malformed rows."""
    rows, problems = {}, []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            problems.append(f"line {n}: a package row has 3 cells, found {len(cells)} (a '|' in a cell?)")
            continue
        head = _CODE.findall(cells[0])
        if len(head) != 1 or not head[0].endswith("/") or _CODE.sub("", cells[0]).strip():
            problems.append(f"line {n}: the first cell must be one package path in backticks ending in '/'")
            continue
        if head[0] in rows:
            problems.append(f"line {n}: package {head[0]} has two rows")
        listed = _CODE.findall(cells[1])
        if _CODE.sub("", cells[1]).strip():
            problems.append(f"line {n}: the modules cell of {head[0]} holds more than module names")
        rows[head[0]] = (listed, _CODE.findall(cells[2]))
    return rows, problems


# ----------------------------------------------------------------------------- reading the tree
def tree_packages(root: pathlib.Path) -> set[str]:
    """Every package directory under the five top-level packages, as ``path/``."""
    out = set()
    for top in PACKAGES:
        for init in (root / top).rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            if "__pycache__" not in rel.parts:
                out.add(rel.as_posix() + "/")
    return out


def modules_of(package_dir: pathlib.Path) -> set[str]:
    return {f.name for f in package_dir.glob("*.py") if f.name != "__init__.py"}


def module_file(root: pathlib.Path, dotted: str) -> pathlib.Path | None:
    base = root.joinpath(*dotted.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


@functools.lru_cache(maxsize=None)
def _definitions(path: pathlib.Path) -> tuple[frozenset, dict]:
    """Top-level names of a module (defs, classes, assignments, imports) and, per class, the
    names its body defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def names(body) -> set[str]:
        out = set()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Assign):
                out |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, (ast.If, ast.Try)):
                out |= names(node.body)
        return out
    classes = {n.name: frozenset(names(n.body)) for n in tree.body if isinstance(n, ast.ClassDef)}
    return frozenset(names(tree.body)), classes


def resolve_dotted(root: pathlib.Path, dotted: str) -> str | None:
    """None when ``dotted`` resolves (module, then at most a top-level name and a class member),
    else the problem."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        f = module_file(root, ".".join(parts[:k]))
        if f is None:
            continue
        rest = parts[k:]
        if not rest:
            return None
        if len(rest) > 2:
            return f"{dotted}: {'.'.join(parts[:k])} has no submodule {rest[0]}"
        top, classes = _definitions(f)
        if rest[0] not in top:
            return f"{dotted}: {f.relative_to(root)} defines no {rest[0]!r}"
        if len(rest) == 2 and rest[1] not in classes.get(rest[0], ()):
            return f"{dotted}: {rest[0]} in {f.relative_to(root)} is not a class defining {rest[1]!r}"
        return None
    return f"{dotted}: no such module"


# ----------------------------------------------------------------------------- the checks
def package_problems(root: pathlib.Path, text: str) -> list[str]:
    rows, problems = package_rows(text)
    for pkg in sorted(tree_packages(root) - set(rows)):
        problems.append(f"package {pkg} has no row in the package tables")
    for pkg, (listed, described) in rows.items():
        d = root / pkg
        if not (d / "__init__.py").is_file():
            problems.append(f"row {pkg}: not a package (no __init__.py)")
            continue
        have = modules_of(d)
        bad = [m for m in listed if not m.endswith(".py") or "/" in m]
        if bad:
            problems.append(f"row {pkg}: not bare module names: {bad}")
        if len(listed) != len(set(listed)):
            problems.append(f"row {pkg}: a module is listed twice")
        if set(listed) - have:
            problems.append(f"row {pkg}: lists modules that do not exist: {sorted(set(listed) - have)}")
        if have - set(listed):
            problems.append(f"row {pkg}: does not list {sorted(have - set(listed))}")
        for m in described:
            if re.fullmatch(r"\w+\.py", m) and m not in have | {"__init__.py"}:
                problems.append(f"row {pkg}: the description names {m}, which is not in the package")
    return problems


def path_problems(root: pathlib.Path, text: str) -> list[str]:
    problems = []
    for span in code_spans(text):
        if _PLACEHOLDER.search(span) or " " in span or "/" not in span:
            continue
        if span.split("/")[0] not in PATH_ROOTS:
            continue
        p = root / span.rstrip("/")
        if span.endswith("/"):
            if not p.is_dir():
                problems.append(f"`{span}`: no such directory")
            elif span.split("/")[0] in PACKAGES and not (p / "__init__.py").is_file():
                problems.append(f"`{span}`: a directory of a project package but not a package")
        elif not p.is_file():
            problems.append(f"`{span}`: no such file")
    return problems


def name_problems(root: pathlib.Path, text: str) -> list[str]:
    problems = []
    for span in code_spans(text):
        if _PLACEHOLDER.search(span):
            continue
        names = [span] if _DOTTED.match(span) else []
        names += [f"{m}.{a}" for m, a in _REF.findall(span)]
        for n in names:
            why = resolve_dotted(root, n)
            if why:
                problems.append(why)
    return problems


def command_problems(root: pathlib.Path, text: str) -> list[str]:
    problems = []
    for span in code_spans(text):
        if not span.startswith("python -m "):
            continue
        mod = span.split()[2]
        if _PLACEHOLDER.search(mod):
            continue
        f = module_file(root, mod)
        if f is None:
            problems.append(f"`{span}`: no module {mod}")
        elif f.name == "__init__.py":
            if not (f.parent / "__main__.py").is_file():
                problems.append(f"`{span}`: package {mod} has no __main__.py")
        elif '__name__ == "__main__"' not in f.read_text(encoding="utf-8"):
            problems.append(f"`{span}`: {f.relative_to(root)} has no __main__ guard")
    return problems


# ----------------------------------------------------------------------------- the page itself
def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def test_every_package_has_a_row_and_every_row_lists_its_modules():
    assert package_problems(ROOT, _text()) == []


def test_paths_in_backticks_exist():
    assert path_problems(ROOT, _text()) == []


def test_dotted_names_and_references_resolve():
    assert name_problems(ROOT, _text()) == []


def test_commands_name_runnable_modules():
    assert command_problems(ROOT, _text()) == []


def test_the_page_covers_the_layers_and_the_flow_of_a_model():
    text = _text()
    for heading in ("## Layers", "## The flow of one model through the compiler"):
        assert heading in text
    flow = text.split("## The flow of one model through the compiler", 1)[1].split("\n## ", 1)[0]
    for name in ("compile.egraph.Session", "compile.call.Call", "compile.gate.decide_call",
                 "compile.runtime.cosim.CoSimulator", "compile.codegen.emit", "compile.frontend.from_torch"):
        assert f"`{name}`" in flow, name


# ----------------------------------------------------------------------------- the checks catch drift
def _tree(tmp_path, files):
    for f in files:
        p = tmp_path / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text('"""x"""\nVALUE = 1\nclass K:\n    def m(self):\n        pass\n')
    return tmp_path


def test_an_undocumented_package_is_caught(tmp_path):
    root = _tree(tmp_path, ["ila/__init__.py", "ila/a.py", "ila/fresh/__init__.py", "ila/fresh/b.py"])
    doc = "| Package | Modules | What |\n|---|---|---|\n| `ila/` | `a.py` | the core |\n"
    assert package_problems(root, doc) == ["package ila/fresh/ has no row in the package tables"]
    doc += "| `ila/fresh/` | `b.py` | new |\n"
    assert package_problems(root, doc) == []


def test_missing_extra_and_unlisted_modules_are_caught(tmp_path):
    root = _tree(tmp_path, ["ila/__init__.py", "ila/a.py", "ila/b.py"])
    doc = "| `ila/` | `a.py` `gone.py` | uses `c.py` |\n| `ila/none/` | `x.py` | no such package |\n"
    problems = package_problems(root, doc)
    assert "row ila/: lists modules that do not exist: ['gone.py']" in problems
    assert "row ila/: does not list ['b.py']" in problems
    assert "row ila/: the description names c.py, which is not in the package" in problems
    assert "row ila/none/: not a package (no __init__.py)" in problems


def test_wrong_paths_names_and_commands_are_caught(tmp_path):
    root = _tree(tmp_path, ["ila/__init__.py", "ila/a.py", "ila/sub/__init__.py"])
    doc = ("`ila/a.py` `ila/zz.py` `ila/sub/` `ila/nodir/` `ila/models/<m>/` "
           "`ila.a.VALUE` `ila.a.K.m` `ila.a.NOPE` `ila.a.K.nope` `ila.gone` `x=\"ila.a:VALUE\"` `\"ila.a:NONE\"` "
           "`python -m ila.a` `python -m ila.sub` `python -m ila.none`")
    assert path_problems(root, doc) == ["`ila/zz.py`: no such file", "`ila/nodir/`: no such directory"]
    assert name_problems(root, doc) == ["ila.a.NOPE: ila/a.py defines no 'NOPE'",
                                        "ila.a.K.nope: K in ila/a.py is not a class defining 'nope'",
                                        "ila.gone: ila/__init__.py defines no 'gone'",
                                        "ila.a.NONE: ila/a.py defines no 'NONE'"]
    assert command_problems(root, doc) == ["`python -m ila.a`: ila/a.py has no __main__ guard",
                                           "`python -m ila.sub`: package ila.sub has no __main__.py",
                                           "`python -m ila.none`: no module ila.none"]
