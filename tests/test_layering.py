"""The layering of DESIGN.md: ila <- mappings <- verify <- compile (imports point down only)."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORDER = ["ila", "mappings", "verify", "compile", "benchmarks"]


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def test_packages_import_only_lower_layers():
    bad = []
    for i, pkg in enumerate(ORDER):
        higher = set(ORDER[i + 1:])
        for f in (ROOT / pkg).rglob("*.py"):
            for mod in _imports(f):
                if mod in higher:
                    bad.append(f"{f.relative_to(ROOT)} imports {mod}")
    assert not bad, bad


def test_ila_core_imports_no_other_project_package():
    for f in (ROOT / "ila").rglob("*.py"):
        assert not {"mappings", "verify", "compile", "benchmarks"} & set(_imports(f)), f


# ----------------------------------------------------------------------------- import cycles
PKGS = ["ila", "mappings", "verify", "compile"]


def _modname(f: pathlib.Path) -> str:
    parts = list(f.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its source (function-local imports and
    relative imports included: a lazy import is still a dependency)."""
    mods = {_modname(f): f for p in PKGS for f in (ROOT / p).rglob("*.py")}

    def resolve(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None
    graph = {}
    for m, f in mods.items():
        pkg = m if f.name == "__init__.py" else m.rpartition(".")[0]
        out = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                out |= {resolve(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                out |= {resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in mods else resolve(base)
                        for a in node.names}
        graph[m] = out - {None, m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (iterative Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
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


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_cycle_detector_finds_a_planted_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]


def test_dsl_core_imports_no_model():
    g = import_graph()
    core = [m for m in g if m.startswith("ila") and not m.startswith("ila.models")]
    bad = {m: sorted(d for d in g[m] if d.startswith("ila.models")) for m in core}
    assert not {m: d for m, d in bad.items() if d}
