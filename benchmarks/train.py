"""CPU training of the co-simulated applications on the offline data sets, with a weight cache
(``python -m benchmarks.train MODEL [--epochs N] [--data NAME] [--out PATH]``).

Models: ``resnet20``, ``mobilenet_v2``, ``resmlp`` (vision, :func:`benchmarks.data.vision`: the
CIFAR-shaped MNIST sample by default, CIFAR-10 with ``$D2A_CIFAR10``), ``lstm_wlm`` and
``transformer_lm`` (text, :func:`benchmarks.data.text`: gensim's Lee corpora by default, WikiText-2
with ``$D2A_WIKITEXT2``; ``transformer_lm`` is the paper's Transformer as a word language model,
:mod:`benchmarks.models.transformer_lm`); ``all`` trains them one after the other. The models are the applications of
``benchmarks/models/`` built with their defaults (the LSTM-WLM with the data set's vocabulary size
and dropout while training); after training they are in eval mode, so BatchNorm uses its running
statistics (the ONNX exporter behind ``compile.frontend.from_torch`` exports eval-mode modules).

Default configurations (:data:`DEFAULTS`) are sized for minutes on this 2-core machine with
``--threads 1`` (the default): with another process busy on the second core, two torch threads
ran ResMLP's training step at 4.5 s instead of 0.23 s with one (barrier waits), so one thread is
both faster on a shared machine and reproducible. Seeds are fixed (weights, shuffling, dropout);
with the same thread count a run repeats bit for bit.

Vision: SGD with Nesterov momentum (or AdamW) and a one-cycle learning-rate schedule, no data
augmentation, batches drawn from a seeded permutation per epoch; the result is the top-1
accuracy on the test part. Text: Adam, one-cycle schedule, gradient-norm clipping; the training
stream in ``batch`` columns cut into 35-token windows (:func:`benchmarks.data.sequences`), windows
in a seeded order, each starting from a zero LSTM state as the model's ``forward`` does; the
result is the perplexity ``exp(mean negative log-likelihood)`` over every held-out token but the
first, predicted in consecutive 35-token windows from a zero state (the model's own input shape,
``[35, 1]``, batched).

Cache: ``$D2A_CACHE``, else ``$XDG_CACHE_HOME/d2a``, else ``~/.cache/d2a``; one file
``trained/<model>-<data>-<key>.pt`` per model, data set and configuration, where the key hashes
the configuration, the model's keyword arguments, the source of its ``benchmarks/models`` file and
a sha256 of the prepared data tensors (so a change to any of them retrains). The file holds the
state dict, the configuration, the data set description, the metrics and the training seconds.
:func:`trained` returns the cached model without retraining; ``--retrain`` forces training.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
import os
import pathlib
import shutil
import sys
import time

from benchmarks import data as D
from ila.errors import D2AError

VISION_MODELS = ("resnet20", "mobilenet_v2", "resmlp")
TEXT_MODELS = ("lstm_wlm", "transformer_lm")
MODELS = VISION_MODELS + TEXT_MODELS
MODELS_DIR = pathlib.Path(__file__).resolve().parent / "models"


class TrainError(D2AError):
    """A bad training request (unknown model, impossible configuration, unreadable cache file)."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One training run. ``epochs`` over the training part in batches of ``batch_size`` (images,
    or token columns for text); ``optimizer`` ``sgd`` (momentum 0.9, Nesterov) or ``adamw`` /
    ``adam``; ``lr`` is the one-cycle schedule's peak (warm-up ``warmup`` of the steps, cosine
    decay); ``weight_decay``; ``clip``: gradient-norm bound (None: none); ``seed`` for weights,
    order and dropout. ``seq_len``, ``dropout`` and ``features`` (embedding and hidden size; None:
    the model's default): text only. ``max_steps`` stops after that many
    optimiser steps and ``eval_samples`` evaluates only the first images / windows (None: all;
    both for quick checks, not for results)."""
    epochs: int
    batch_size: int
    optimizer: str
    lr: float
    weight_decay: float = 0.0
    warmup: float = 0.15
    clip: float | None = None
    seed: int = 0
    seq_len: int = 35
    dropout: float = 0.0
    features: int | None = None
    max_steps: int | None = None
    eval_samples: int | None = None

    def check(self) -> "TrainConfig":
        if self.epochs < 1 or self.batch_size < 1 or self.seq_len < 1:
            raise TrainError(f"epochs, batch_size and seq_len must be >= 1: {self}")
        if self.optimizer not in ("sgd", "adamw", "adam"):
            raise TrainError(f"unknown optimizer {self.optimizer!r} (sgd, adamw, adam)")
        if not self.lr > 0 or not 0 <= self.warmup < 1 or not 0 <= self.dropout < 1:
            raise TrainError(f"need lr > 0, 0 <= warmup < 1, 0 <= dropout < 1: {self}")
        if self.max_steps is not None and self.max_steps < 1:
            raise TrainError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.eval_samples is not None and self.eval_samples < 1:
            raise TrainError(f"eval_samples must be >= 1, got {self.eval_samples}")
        return self


# The chosen configurations. Measured with them (python -m benchmarks.train MODEL, --threads 1, this
# 2-core machine shared with another engineer's jobs; training seconds, then the float32 result):
#   resnet20      8 epochs, 504 steps   105 s   test accuracy 98.0 % (mnist5k, 1,000 images)
#   mobilenet_v2  3 epochs, 189 steps   325 s   test accuracy 95.8 % (2 epochs: 149 s, 88.6 %)
#   resmlp        8 epochs, 504 steps   141 s   test accuracy 95.3 %
#   lstm_wlm      6 epochs, 582 steps    47 s   held-out perplexity 185.9 (lee, 4,567 tokens; 256 features;
#                                               151 s and 164.2 with the model's default 650)
#   transformer_lm 4 epochs, 388 steps  328 s   held-out perplexity 297.9 (lee, 4,567 tokens; 256 features)
DEFAULTS = {
    "resnet20": TrainConfig(epochs=8, batch_size=64, optimizer="sgd", lr=0.1, weight_decay=5e-4),
    "mobilenet_v2": TrainConfig(epochs=3, batch_size=64, optimizer="sgd", lr=0.1, weight_decay=4e-5),
    "resmlp": TrainConfig(epochs=8, batch_size=64, optimizer="adamw", lr=1e-3, weight_decay=0.05),
    # 256 features (the model's default is the PyTorch example's 650): FlexASR's LSTM needs the input
    # and hidden sizes to be multiples of 64 and their weights to fit a PE's 256 KiB weight buffer
    # (H (I + H + 1) bytes <= 262,144, so I = H <= 320), so the co-simulation (Table 4) offloads it.
    "lstm_wlm": TrainConfig(epochs=6, batch_size=20, optimizer="adam", lr=2e-3, clip=0.5, dropout=0.5, features=256),
    # the paper's Transformer (256 features, 6 + 6 layers) between an embedding and a decoder: about
    # 1 s per step with one thread, so 4 epochs; a post-norm stack this deep wants a small peak rate
    "transformer_lm": TrainConfig(epochs=4, batch_size=20, optimizer="adam", lr=5e-4, clip=0.5, dropout=0.2,
                                  features=256),
}


@dataclasses.dataclass
class Trained:
    """A trained model (eval mode) with what produced it: ``metrics`` (``test_accuracy`` in [0, 1]
    and ``test_samples`` for vision, ``heldout_perplexity`` and ``heldout_tokens`` for text,
    ``final_train_loss`` (running mean of the last steps) and ``steps`` (optimiser steps)), ``seconds`` (training time when it was trained), ``cached`` (loaded from
    the cache now), ``path`` (the cache file) and ``key``."""
    name: str
    model: object
    info: D.DataSetInfo
    config: TrainConfig
    metrics: dict
    seconds: float
    cached: bool
    path: pathlib.Path
    key: str

    def summary(self) -> str:
        m = self.metrics
        res = (f"test accuracy {100 * m['test_accuracy']:.2f} % ({m['test_samples']:,} images)"
               if "test_accuracy" in m else
               f"held-out perplexity {m['heldout_perplexity']:.2f} ({m['heldout_tokens']:,} tokens)")
        how = "from the cache" if self.cached else "trained"
        feats = f" ({self.config.features} features)" if self.config.features is not None else ""
        return (f"{self.name}{feats} on {self.info.name}: {res}; {how}, training took {self.seconds:.1f} s "
                f"({m['steps']:,} steps, {self.config.epochs} epochs at most); {self.path}")


def cache_dir() -> pathlib.Path:
    """``$D2A_CACHE``, else ``$XDG_CACHE_HOME/d2a``, else ``~/.cache/d2a``."""
    if os.environ.get("D2A_CACHE"):
        return pathlib.Path(os.environ["D2A_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return pathlib.Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "d2a"
    return pathlib.Path.home() / ".cache" / "d2a"


def _torch():
    try:
        import torch
    except ImportError:
        raise TrainError("training needs torch: pip install -e \".[torch]\"") from None
    return torch


def _check_name(name: str) -> None:
    if name not in MODELS:
        import difflib
        near = difflib.get_close_matches(name, MODELS, n=1)
        raise TrainError(f"cannot train {name!r}" + (f"; did you mean {near[0]}?" if near else "")
                         + f" (trainable: {', '.join(MODELS)})")


def load_data(name: str, dataset: str = "auto"):
    """The data set model ``name`` trains on: :class:`benchmarks.data.VisionData` or ``TextData``."""
    _check_name(name)
    return D.text(dataset) if name in TEXT_MODELS else D.vision(dataset)


def model_kwargs(name: str, data, config: TrainConfig) -> dict:
    """Keyword arguments of the model's ``build`` for this data set (none for the vision models:
    their defaults are 10 classes of 3x32x32 images)."""
    if name in TEXT_MODELS:
        kw = {"vocab": len(data.vocab), "dropout": config.dropout}
        if config.features is not None:
            kw.update(emb=config.features, hid=config.features)
        return kw
    if data.classes != 10:
        raise TrainError(f"{name} is built for 10 classes, the data set has {data.classes}")
    return {}


def build_model(name: str, kwargs: dict):
    _check_name(name)
    return importlib.import_module(f"benchmarks.models.{name}").build(**kwargs)


def cache_key(name: str, data, config: TrainConfig, kwargs: dict) -> str:
    """sha256 (hex) of the model name, the configuration, the build arguments, the model's
    source file and the prepared data's fingerprint."""
    src = hashlib.sha256((MODELS_DIR / f"{name}.py").read_bytes()).hexdigest()
    cfg = dataclasses.asdict(config)
    if cfg["features"] is None:
        del cfg["features"]                 # absent when unset: keys of the runs before the field stay valid
    blob = json.dumps({"model": name, "config": cfg, "kwargs": kwargs,
                       "source": src, "data": data.info.name, "fingerprint": data.fingerprint},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


# ----------------------------------------------------------------------------- training
def _optimizer(torch, model, cfg: TrainConfig, total_steps: int):
    if cfg.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True,
                              weight_decay=cfg.weight_decay)
    elif cfg.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    warm = max(1, int(cfg.warmup * total_steps))

    def factor(step):                       # one cycle: linear warm-up to lr, cosine down to lr/100
        if step < warm:
            return 0.04 + 0.96 * step / warm
        t = (step - warm) / max(1, total_steps - warm)
        return 0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _progress(total: int, desc: str, enabled: bool):
    if enabled:
        try:
            from tqdm import tqdm
            return tqdm(total=total, desc=desc, unit="step", file=sys.stderr, mininterval=1.0,
                        dynamic_ncols=True)
        except ImportError:
            print(f"{desc}: {total} steps (install tqdm for a progress bar: pip install -e \".[data]\")",
                  file=sys.stderr)

    class _Null:
        def update(self, n=1): pass                             # noqa: E704
        def set_postfix(self, **kw): pass                       # noqa: E704
        def close(self): pass                                   # noqa: E704
    return _Null()


def _step(torch, model, opt, sched, cfg: TrainConfig, loss, loss_avg: float) -> float:
    """One optimiser step on ``loss`` (gradient clipping if configured, schedule step); the running
    mean of the loss (exponential, 0.95)."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if cfg.clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
    opt.step()
    sched.step()
    return loss.item() if math.isnan(loss_avg) else 0.95 * loss_avg + 0.05 * loss.item()


def _fit_vision(torch, model, data, cfg: TrainConfig, bar_enabled: bool) -> tuple:
    n = len(data.y_train)
    per_epoch = math.ceil(n / cfg.batch_size)
    total = per_epoch * cfg.epochs if cfg.max_steps is None else min(cfg.max_steps, per_epoch * cfg.epochs)
    opt, sched = _optimizer(torch, model, cfg, total)
    gen = torch.Generator().manual_seed(cfg.seed)
    bar = _progress(total, "train", bar_enabled)
    step, loss_avg = 0, float("nan")
    model.train()
    try:
        while step < total:
            order = torch.randperm(n, generator=gen)
            for i in range(0, n, cfg.batch_size):
                if step >= total:
                    break
                idx = order[i:i + cfg.batch_size]
                loss = torch.nn.functional.cross_entropy(model(data.x_train[idx]), data.y_train[idx])
                loss_avg = _step(torch, model, opt, sched, cfg, loss, loss_avg)
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss_avg:.3f}", epoch=f"{step / per_epoch:.2f}")
    finally:
        bar.close()
    model.eval()
    return loss_avg, step


def evaluate_vision(model, data, eval_samples: int | None = None, batch: int = 250) -> dict:
    """Top-1 accuracy (in [0, 1]) of ``model`` on the first ``eval_samples`` (all: None) test images."""
    torch = _torch()
    n = len(data.y_test) if eval_samples is None else min(eval_samples, len(data.y_test))
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, n, batch):
            j = min(n, i + batch)
            correct += int((model(data.x_test[i:j]).argmax(1) == data.y_test[i:j]).sum())
    return {"test_accuracy": correct / n, "test_samples": n}


def _fit_text(torch, model, data, cfg: TrainConfig, bar_enabled: bool) -> tuple:
    cols = D.batchify(data.train, cfg.batch_size)
    windows = list(D.sequences(cols, cfg.seq_len))
    per_epoch = len(windows)
    total = per_epoch * cfg.epochs if cfg.max_steps is None else min(cfg.max_steps, per_epoch * cfg.epochs)
    opt, sched = _optimizer(torch, model, cfg, total)
    gen = torch.Generator().manual_seed(cfg.seed)
    bar = _progress(total, "train", bar_enabled)
    step, loss_avg = 0, float("nan")
    model.train()
    try:
        while step < total:
            for k in torch.randperm(per_epoch, generator=gen).tolist():
                if step >= total:
                    break
                x, y = windows[k]
                logits = model(x)
                loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
                loss_avg = _step(torch, model, opt, sched, cfg, loss, loss_avg)
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss_avg:.3f}", ppl=f"{math.exp(min(loss_avg, 50)):.0f}",
                                epoch=f"{step / per_epoch:.2f}")
    finally:
        bar.close()
    model.eval()
    return loss_avg, step


def heldout_windows(ids, seq_len: int = 35):
    """The held-out stream ``[T]`` as consecutive windows: ``(inputs, targets)`` of ``[seq_len, k]``
    int64 (window j = tokens ``j*seq_len .. (j+1)*seq_len - 1`` predicting the next ones), plus the
    shorter remainder window ``[r, 1]`` pair or None. Every token but the first is a target once."""
    n = len(ids) - 1
    k = n // seq_len
    full = None
    if k:
        x = ids[:k * seq_len].reshape(k, seq_len).t().contiguous()
        y = ids[1:k * seq_len + 1].reshape(k, seq_len).t().contiguous()
        full = (x, y)
    r = n - k * seq_len
    rest = (ids[k * seq_len:k * seq_len + r].reshape(r, 1), ids[k * seq_len + 1:].reshape(r, 1)) if r else None
    return full, rest


def evaluate_text(model, data, seq_len: int = 35, eval_samples: int | None = None) -> dict:
    """Held-out perplexity ``exp(mean NLL)`` of ``model``, windows of ``seq_len`` from a zero state
    (first ``eval_samples`` windows only if given)."""
    torch = _torch()
    full, rest = heldout_windows(data.heldout, seq_len)
    parts = [p for p in (full, rest) if p is not None]
    if eval_samples is not None and full is not None:
        parts = [(full[0][:, :eval_samples], full[1][:, :eval_samples])]
    model.eval()
    nll, count = 0.0, 0
    with torch.no_grad():
        for x, y in parts:
            for j in range(0, x.shape[1], 64):
                logits = model(x[:, j:j + 64])
                nll += float(torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), y[:, j:j + 64].reshape(-1), reduction="sum"))
                count += y[:, j:j + 64].numel()
    return {"heldout_perplexity": math.exp(nll / count), "heldout_tokens": count}


# ----------------------------------------------------------------------------- cache + API
def _checkpoint_path(root: pathlib.Path, name: str, data, key: str) -> pathlib.Path:
    return root / "trained" / f"{name}-{data.info.name}-{key[:16]}.pt"


def train_or_load(name: str, *, dataset: str = "auto", config: TrainConfig | None = None,
                  epochs: int | None = None, retrain: bool = False, cache: pathlib.Path | str | None = None,
                  progress: bool = False, threads: int | None = 1) -> Trained:
    """The trained model ``name`` on ``dataset`` with ``config`` (default :data:`DEFAULTS`;
    ``epochs`` overrides its epochs): loaded from the cache when there, else trained (with
    ``threads`` torch threads, restored afterwards; None leaves torch's setting), evaluated, and
    written to the cache."""
    torch = _torch()
    _check_name(name)
    cfg = (config or DEFAULTS[name])
    if epochs is not None:
        cfg = dataclasses.replace(cfg, epochs=epochs)
    cfg.check()
    data = load_data(name, dataset)
    kwargs = model_kwargs(name, data, cfg)
    key = cache_key(name, data, cfg, kwargs)
    root = pathlib.Path(cache).expanduser() if cache is not None else cache_dir()
    path = _checkpoint_path(root, name, data, key)
    if path.is_file() and not retrain:
        try:
            ck = torch.load(path, map_location="cpu", weights_only=True)
            with torch.random.fork_rng(devices=[]):         # the caller's random stream is left alone
                model = build_model(name, kwargs)
            model.load_state_dict(ck["state_dict"])
        except Exception as exc:                    # a corrupt or foreign file: say which, do not guess
            raise TrainError(f"cache file {path} cannot be loaded ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0][:200]}); delete it or pass --retrain") from None
        if ck.get("key") != key:
            raise TrainError(f"cache file {path} belongs to another configuration; delete it or pass --retrain")
        return Trained(name, model.eval(), data.info, cfg, dict(ck["metrics"]), float(ck["seconds"]),
                       True, path, key)
    prev = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        with torch.random.fork_rng(devices=[]):           # seeded here, the caller's stream untouched
            torch.manual_seed(cfg.seed)
            model = build_model(name, kwargs)
            t0 = time.perf_counter()
            fit = _fit_text if name in TEXT_MODELS else _fit_vision
            final_loss, steps = fit(torch, model, data, cfg, progress)
            seconds = time.perf_counter() - t0
            metrics = (evaluate_text(model, data, cfg.seq_len, cfg.eval_samples) if name in TEXT_MODELS
                       else evaluate_vision(model, data, cfg.eval_samples))
    finally:
        torch.set_num_threads(prev)
    metrics["final_train_loss"] = final_loss
    metrics["steps"] = steps
    ck = {"model": name, "key": key, "kwargs": kwargs, "config": dataclasses.asdict(cfg),
          "data": data.info.as_dict(), "metrics": metrics, "seconds": seconds,
          "torch": str(torch.__version__), "state_dict": model.state_dict()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(ck, tmp)
    os.replace(tmp, path)
    return Trained(name, model.eval(), data.info, cfg, metrics, seconds, False, path, key)


def trained(model_name: str, *, dataset: str = "auto", config: TrainConfig | None = None,
            cache: pathlib.Path | str | None = None, progress: bool = False, threads: int | None = 1):
    """``(torch.nn.Module in eval mode, DataSetInfo)``: the cached trained weights of
    ``model_name`` (trained now if the cache lacks them). For the benchmarks."""
    t = train_or_load(model_name, dataset=dataset, config=config, cache=cache, progress=progress,
                      threads=threads)
    return t.model, t.info


# ----------------------------------------------------------------------------- CLI
def main(argv=None) -> int:
    from ila.cli import ArgumentParser
    from ila.errors import report
    ap = ArgumentParser(prog="python -m benchmarks.train", description=__doc__.splitlines()[0])
    ap.add_argument("model", help=f"{', '.join(MODELS)} or all")
    ap.add_argument("--epochs", type=int, help="override the default configuration's epochs")
    ap.add_argument("--data", default="auto",
                    help="auto (default: CIFAR-10 / WikiText-2 when $D2A_CIFAR10 / $D2A_WIKITEXT2 is set, "
                         "else mnist5k / lee), mnist5k, cifar10, lee, wikitext2")
    ap.add_argument("--out", type=pathlib.Path, help="also copy the checkpoint (.pt) here (a directory with all)")
    ap.add_argument("--retrain", action="store_true", help="train even when the cache has the weights")
    ap.add_argument("--threads", type=int, default=1, help="torch threads while training (default 1)")
    ap.add_argument("--max-steps", type=int, help="stop after this many steps (a quick check, not a result)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    names = MODELS if args.model == "all" else (args.model,)
    try:
        _check_arguments(args, names)
        for name in names:
            _check_name(name)
            cfg = DEFAULTS[name]
            if args.max_steps is not None:
                cfg = dataclasses.replace(cfg, max_steps=args.max_steps)
            t = train_or_load(name, dataset=args.data, config=cfg, epochs=args.epochs, retrain=args.retrain,
                              progress=not args.no_progress, threads=args.threads)
            print(t.summary())
            print(f"  {t.info.note()}")
            if args.out is not None:
                dest = args.out / t.path.name if len(names) > 1 or args.out.is_dir() else args.out
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(t.path, dest)
                print(f"  checkpoint copied to {dest}")
    except D2AError as exc:
        return report(exc)
    return 0


def _check_arguments(args, names) -> None:
    """Every option checked before any data is loaded or a model trained (D2AError naming the value)."""
    from benchmarks.data import TEXT_DATASETS, VISION_DATASETS
    from ila.cli import check_count, check_int, output_dir, output_file
    for name in names:
        _check_name(name)
    check_int("--epochs", args.epochs, 1)
    check_int("--max-steps", args.max_steps, 1)
    check_count("--threads", args.threads, 1, item_bytes=8 << 20, what="threads")   # 8 MiB stacks
    if args.data not in ("auto", *VISION_DATASETS, *TEXT_DATASETS):
        raise TrainError(f"--data {args.data!r}: unknown data set (known: auto, "
                         f"{', '.join(VISION_DATASETS + TEXT_DATASETS)})")
    if args.out is not None:
        if len(names) > 1 or args.out.is_dir():
            output_dir(args.out, "--out")
        else:
            output_file(args.out, "--out")


if __name__ == "__main__":
    sys.exit(main())
