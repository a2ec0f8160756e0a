"""PyTorch models with the layers issue 23 found refused (GRU, a bidirectional LSTM, Conv1d,
Upsample / interpolate, LeakyReLU, Hardsigmoid squeeze-and-excite blocks, ELU, SELU, where /
greater, amax / sum) import through from_torch and equal torch within 1e-5 relative, with every
refused layer now one IR operator (or a few)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)
nn = torch.nn
F = torch.nn.functional

from compile.frontend import from_torch  # noqa: E402
from compile.runtime import run  # noqa: E402


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, num_layers=2, bidirectional=True)
        self.lstm = nn.LSTM(32, 12, bidirectional=True, batch_first=True)

    def forward(self, x):                      # x[T, B, 8]
        y, _ = self.gru(x)
        z, _ = self.lstm(y.transpose(0, 1))
        return z


class Audio(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 5, padding=2, dilation=1)
        self.c2 = nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=4)
        self.pool = nn.MaxPool1d(2)
        self.up = nn.Upsample(scale_factor=2)

    def forward(self, x):                      # x[B, 4, L]
        y = F.leaky_relu(self.c1(x), 0.1)
        y = self.up(self.pool(F.elu(self.c2(y))))
        return F.avg_pool1d(y, 3, stride=1, padding=1)


class SqueezeExcite(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.a, self.b = nn.Conv2d(8, 2, 1), nn.Conv2d(2, 8, 1)

    def forward(self, x):                      # x[B, 8, H, W]
        y = self.conv(x)
        s = F.hardsigmoid(self.b(F.relu(self.a(y.mean((2, 3), keepdim=True)))))
        y = F.hardswish(y * s)
        z = torch.where(y > 0.1, y, F.selu(y))
        z = z + z.amax(1, keepdim=True) - z.sum(1, keepdim=True) / 8
        z = F.interpolate(z, scale_factor=2, mode="bilinear", align_corners=False)
        return F.interpolate(z, size=(5, 7), mode="nearest")


CASES = {"recurrent": (Recurrent, (6, 2, 8)), "audio": (Audio, (2, 4, 20)), "squeeze_excite": (SqueezeExcite,
                                                                                               (1, 8, 6, 6))}
WANT_OPS = {"recurrent": {"nn.gru": 4, "nn.lstm": 2}, "audio": {"nn.conv1d": 2, "nn.leaky_relu": 1, "nn.elu": 1,
                                                               "nn.max_pool1d": 1, "image.resize": 1, "nn.avg_pool1d": 1},
            "squeeze_excite": {"nn.hardsigmoid": 1, "nn.hardswish": 1, "where": 1, "greater": 1, "nn.selu": 1,
                               "max": 1, "sum": 1, "image.resize": 2}}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_written_models_equal_torch(name):
    cls, shape = CASES[name]
    torch.manual_seed(0)
    m = cls().eval()
    x = torch.randn(*shape)
    g = from_torch(m, (x,), name=name)
    with torch.no_grad():
        want = m(x).numpy()
    got = run(g, {g.inputs[0].name: x.numpy()})[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    hist = g.op_histogram()
    for op, count in WANT_OPS[name].items():
        assert hist.get(op, 0) == count, (op, hist)
