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
def test_no_import_cycles():
    from verify.closure import cycles, import_graph
    assert cycles(import_graph(references=False)) == []


def test_cycle_detector_finds_a_planted_cycle():
    from verify.closure import cycles
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]


def test_dsl_core_imports_no_model():
    from verify.closure import import_graph
    g = import_graph(references=False)
    core = [m for m in g if m.startswith("ila") and not m.startswith("ila.models")]
    bad = {m: sorted(d for d in g[m] if d.startswith("ila.models")) for m in core}
    assert not {m: d for m, d in bad.items() if d}
