"""The import closure of a module inside the project's packages, computed from the sources.

Every ``import`` / ``from ... import`` statement anywhere in a file counts (function-local lazy
imports and relative imports included), and so does every string constant of the form
``"package.module:function"`` naming a project module (the lazy references of
:class:`mappings.base.Proof` and ``Mapping.mutations``). A package's ``__init__.py``
belongs to the closure of any module under it (Python runs it on import). Used by the proof ledger
(a verdict's digest covers every file it depends on) and by the layering test (no cycles).
"""
from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("ila", "mappings", "verify", "compile")
_REF = re.compile(r"^([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+):[A-Za-z_]\w*$")


def module_files(root: pathlib.Path = ROOT, packages=PACKAGES) -> dict[str, pathlib.Path]:
    """Dotted module name -> source file, for every module of ``packages`` under ``root``."""
    out = {}
    for p in packages:
        for f in sorted((root / p).rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def import_graph(root: pathlib.Path = ROOT, packages=PACKAGES, *, references: bool = True) -> dict[str, set[str]]:
    """Module -> the project modules its source imports, and (``references``) names in
    ``"module:function"`` strings (module docstring). The import-cycle test leaves references
    out: they are resolved on use, which is how a spec names its proof module without importing it."""
    mods = module_files(root, packages)

    def resolve(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None
    graph = {}
    for m, f in mods.items():
        pkg = m if f.name == "__init__.py" else m.rpartition(".")[0]
        out = set()
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            if isinstance(node, ast.Import):
                out |= {resolve(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                out |= {resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in mods else resolve(base)
                        for a in node.names}
            elif references and isinstance(node, ast.Constant) and isinstance(node.value, str):
                hit = _REF.match(node.value)
                if hit and hit.group(1).split(".")[0] in packages:
                    out.add(resolve(hit.group(1)))
        graph[m] = out - {None, m}
    return graph


def external_module(name: str, root: pathlib.Path = ROOT, packages=PACKAGES):
    """A module outside ``packages`` (importable by ``name``): (its source file, the project modules
    its source names, as :func:`import_graph` reads them), or None when it has no source file."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    path = pathlib.Path(spec.origin)
    mods = module_files(root, packages)

    def resolve(n):
        while n and n not in mods:
            n = n.rpartition(".")[0]
        return n or None
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {resolve(f"{node.module}.{a.name}") if f"{node.module}.{a.name}" in mods else resolve(node.module)
                    for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (hit := _REF.match(node.value)) \
                and hit.group(1).split(".")[0] in packages:
            out.add(resolve(hit.group(1)))
    return path, out - {None}


def closure(modules, graph: dict[str, set[str]] | None = None) -> set[str]:
    """Every project module reachable from ``modules`` (included), with the ``__init__`` of each
    enclosing package."""
    graph = import_graph() if graph is None else graph
    seen, todo = set(), [m for m in modules if m in graph]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts)) if ".".join(parts[:k]) in graph]
        todo += sorted(graph[m])
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (iterative Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
    for root in graph:
        if root in index:
            continue
        visit(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    visit(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out
