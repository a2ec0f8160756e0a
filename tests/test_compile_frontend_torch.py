"""compile.frontend.from_torch on the paper's applications (defined in benchmarks.models): the host
runtime equals torch within 1e-4 relative; a wrong example input is a clear CompileError; and
python -m compile.run reports errors on one line with exit 2."""
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from benchmarks.models import NAMES, get  # noqa: E402
from compile.errors import CompileError  # noqa: E402
from compile.frontend import from_torch  # noqa: E402
from compile.runtime import run  # noqa: E402


def _check(name):
    m, x = get(name)
    g = from_torch(m, x, name=name)
    with torch.no_grad():
        want = m(*x).numpy()
    got = run(g, {v.name: a.numpy() for v, a in zip(g.inputs, x)})[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    return g


def test_resnet20_equals_torch():
    g = _check("resnet20")
    hist = g.op_histogram()
    assert hist["nn.conv2d"] == 19 and "nn.batch_norm" not in hist       # the exporter folds batch-norm


def test_lstm_wlm_equals_torch_with_one_lstm_operator():
    g = _check("lstm_wlm")
    assert g.op_histogram()["nn.lstm"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["efficientnet_b0", "mobilenet_v2", "resmlp", "transformer"])
def test_other_applications_equal_torch(name):
    _check(name)


def test_every_application_builds_and_runs_forward():
    for name in NAMES:
        if name == "transformer":
            continue                                    # slow to run; covered by the slow test above
        m, x = get(name)
        with torch.no_grad():
            y = m(*x)
        assert y.shape[-1] == {"lstm_wlm": 10000}.get(name, 10)


def test_wrong_example_input_is_a_clear_error():
    m, _ = get("resnet20")
    with pytest.raises(CompileError, match=r"ResNet20 does not run on example inputs of shape\(s\) \(1, 5, 32, 32\)"):
        from_torch(m, (torch.randn(1, 5, 32, 32),))
    with pytest.raises(CompileError, match="needs a torch.nn.Module"):
        from_torch(lambda x: x, (torch.randn(2),))


def test_run_cli_errors_exit_2(tmp_path):
    for cli, argv, says in (("compile.run", ["resnet21"], "did you mean resnet20"),
                            ("compile.run", [str(tmp_path / "x.onnx")], "no such file"),
                            ("compile.run", ["benchmarks.models:nope"], "does not resolve"),
                            ("compile.run", ["benchmarks.models:get"], "cannot be called with no arguments")):
        out = subprocess.run([sys.executable, "-m", cli, *argv], capture_output=True, text=True)
        assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr, (cli, argv, out.stderr)
