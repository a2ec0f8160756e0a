"""Entry points of the ``d2a.applications`` group (``pyproject.toml``): one function per
application of :mod:`benchmarks.models`, called by :func:`compile.applications.load` after
``torch.manual_seed``, returning ``(module in eval mode, example_inputs tuple)``.

They live outside ``benchmarks.models`` because importing a submodule (``benchmarks.models.lstm_wlm``)
sets the package attribute of the same name, which would shadow a function defined there.
"""
from benchmarks.models import _build


def efficientnet_b0(): return _build("efficientnet_b0")   # noqa: E704
def lstm_wlm(): return _build("lstm_wlm")                 # noqa: E704
def mobilenet_v2(): return _build("mobilenet_v2")         # noqa: E704
def resmlp(): return _build("resmlp")                     # noqa: E704
def resnet20(): return _build("resnet20")                 # noqa: E704
def transformer(): return _build("transformer")           # noqa: E704
