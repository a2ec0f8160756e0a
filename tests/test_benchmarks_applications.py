"""The application entry points stay callable after the model submodules are imported (a submodule
import rebinds the package attribute of its name, so the entry points live in benchmarks.applications)."""
import pytest


def test_entry_points_survive_submodule_imports():
    pytest.importorskip("torch")
    import importlib

    from compile.applications import load, names
    assert set(names()) >= {"lstm_wlm", "resnet20"}
    for _ in range(2):
        importlib.import_module("benchmarks.models.lstm_wlm")
        module, ex = load("lstm_wlm", 0)
        assert tuple(ex[0].shape) == (35, 1)
