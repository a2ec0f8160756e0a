"""The paper's six applications (Appendix B), defined here in PyTorch (torchvision's and timm's
wheels on our registry are CUDA builds that fail at import), importable by short name.

``get(name, seed=0) -> (module in eval mode with seeded weights, example_inputs tuple)``; the
vision models take CIFAR-shaped 3x32x32 images (the paper trained MobileNet-V2, ResMLP and
ResNet-20 on CIFAR-10 at 32x32; EfficientNet-B0 is also run at 32x32 here), LSTM-WLM a batch of
one 35-token sequence, the Transformer a source and a target sequence of 35 and 20 positions of
256 features. Needs the ``torch`` extra.
"""
from __future__ import annotations

import importlib

NAMES = ("efficientnet_b0", "lstm_wlm", "mobilenet_v2", "resmlp", "resnet20", "transformer")


def get(name: str, seed: int = 0):
    """(module, example_inputs) of application ``name``; CompileError for an unknown name."""
    if name not in NAMES:
        from compile.errors import CompileError
        import difflib
        near = difflib.get_close_matches(name, NAMES, n=1)
        raise CompileError(f"unknown application {name!r}" + (f"; did you mean {near[0]}?" if near else "")
                           + f" (known: {', '.join(NAMES)})")
    import torch
    torch.manual_seed(seed)
    return _build(name)


def _build(name: str):
    mod = importlib.import_module(f"benchmarks.models.{name}")
    model = mod.build().eval()
    return model, mod.example_inputs()
