"""benchmarks.data (offline data sets) and benchmarks.train (CPU training, weight cache)."""
import dataclasses
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("mlxtend")
pytest.importorskip("gensim")

from benchmarks import data as D          # noqa: E402
from benchmarks import train as T         # noqa: E402
from ila.errors import D2AError           # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


@pytest.fixture(scope="module")
def mnist():
    return D.vision("mnist5k")


@pytest.fixture(scope="module")
def lee():
    return D.text("lee")


# ----------------------------------------------------------------------------- vision
def test_mnist5k_shapes_dtypes_split_sizes_labels(mnist):
    assert mnist.x_train.shape == (4000, 3, 32, 32) and mnist.x_test.shape == (1000, 3, 32, 32)
    assert mnist.x_train.dtype == torch.float32 and mnist.x_test.dtype == torch.float32
    assert mnist.y_train.dtype == torch.int64 and mnist.y_test.shape == (1000,)
    for y, per in ((mnist.y_train, 400), (mnist.y_test, 100)):
        assert int(y.min()) == 0 and int(y.max()) == 9
        assert torch.bincount(y, minlength=10).tolist() == [per] * 10
    assert mnist.info.name == "mnist5k" and (mnist.info.n_train, mnist.info.n_test) == (4000, 1000)
    # any prefix of the test set is balanced: digits interleaved 0..9
    assert mnist.y_test[:20].tolist() == list(range(10)) * 2


def test_mnist5k_split_is_fixed_stratified_and_disjoint():
    tr1, te1 = D.mnist5k_split()
    tr2, te2 = D.mnist5k_split()
    assert np.array_equal(tr1, tr2) and np.array_equal(te1, te2)
    assert len(set(tr1.tolist()) | set(te1.tolist())) == 5000 and not set(tr1.tolist()) & set(te1.tolist())
    _, labels = D.mnist5k_raw()
    for d in range(10):                       # file order: first 400 rows of each digit train, last 100 test
        rows = np.flatnonzero(labels == d)
        assert np.array_equal(tr1[labels[tr1] == d], rows[:400])
        assert np.array_equal(np.sort(te1[labels[te1] == d]), rows[400:])


def test_mnist5k_padding_channels_and_normalisation(mnist):
    zero = -D.MNIST5K_MEAN / D.MNIST5K_STD
    x = mnist.x_test
    border = torch.ones(32, 32, dtype=torch.bool)
    border[2:30, 2:30] = False
    assert torch.allclose(x[:, :, border], torch.full_like(x[:, :, border], zero), atol=1e-6)
    assert torch.equal(x[:, 0], x[:, 1]) and torch.equal(x[:, 0], x[:, 2])
    images, _ = D.mnist5k_raw()
    _, te = D.mnist5k_split()
    want = (images[te[:50]].astype(np.float32) / 255 - D.MNIST5K_MEAN) / D.MNIST5K_STD
    np.testing.assert_allclose(x[:50, 1, 2:30, 2:30].numpy(), want, atol=1e-5)
    # the documented constants are the training part's pixel mean and standard deviation
    tr, _ = D.mnist5k_split()
    px = images[tr].astype(np.float64) / 255
    assert abs(px.mean() - D.MNIST5K_MEAN) < 1e-5 and abs(px.std() - D.MNIST5K_STD) < 1e-5


def _fake_cifar(tmp_path, n=4):
    d = tmp_path / "cifar-10-batches-py"
    d.mkdir()
    rng = np.random.default_rng(0)
    for k, name in enumerate(D.CIFAR10_TRAIN_FILES + (D.CIFAR10_TEST_FILE,)):
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                 b"labels": [(k + i) % 10 for i in range(n)], b"batch_label": name.encode()}
        (d / name).write_bytes(pickle.dumps(batch))
    return d


def test_cifar10_loader_reads_the_python_batches(tmp_path, monkeypatch):
    d = _fake_cifar(tmp_path)
    monkeypatch.setenv(D.ENV_CIFAR10, str(tmp_path))          # the parent works as well as the directory
    v = D.vision("auto")
    assert v.info.name == "cifar10" and v.info.is_paper_dataset and "paper's data set" in v.info.note()
    assert v.x_train.shape == (20, 3, 32, 32) and v.x_test.shape == (4, 3, 32, 32)
    assert v.x_train.dtype == torch.float32 and v.y_train.dtype == torch.int64
    raw = pickle.loads((d / "data_batch_1").read_bytes())[b"data"].reshape(-1, 3, 32, 32)
    want = (raw[1, 2].astype(np.float32) / 255 - D.CIFAR10_MEAN[2]) / D.CIFAR10_STD[2]   # image 1, blue plane
    np.testing.assert_allclose(v.x_train[1, 2].numpy(), want, rtol=1e-6, atol=1e-6)
    assert v.y_test.tolist() == [5, 6, 7, 8]


def test_missing_cifar10_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(D.ENV_CIFAR10, raising=False)
    with pytest.raises(D.DataError, match=r"\$D2A_CIFAR10"):
        D.vision("cifar10")
    monkeypatch.setenv(D.ENV_CIFAR10, str(tmp_path / "nowhere"))
    with pytest.raises(D.DataError, match="lacks data_batch_1.*test_batch"):
        D.vision("auto")                                      # a set but wrong path is never a silent fallback
    d = _fake_cifar(tmp_path)
    (d / "test_batch").write_bytes(b"not a pickle")
    monkeypatch.setenv(D.ENV_CIFAR10, str(d))
    with pytest.raises(D.DataError, match="test_batch is not a CIFAR-10 python batch"):
        D.vision("cifar10")
    assert issubclass(D.DataError, D2AError)


def test_missing_package_is_named():
    with pytest.raises(D.DataError, match="no_such_pkg_d2a package is not installed.*data extra"):
        D._package_dir("no_such_pkg_d2a")


# ----------------------------------------------------------------------------- text
def test_tokenize():
    assert D.tokenize("At 4:00pm AEDT, Mr Smith's dog--1,500 don't.") == \
        ["at", "4:00", "pm", "aedt", ",", "mr", "smith's", "dog", "-", "-", "1,500", "don't", "."]


def test_build_vocab_counts_training_tokens_only():
    v = D.build_vocab(["b", "a", "b", "c", "a", "b", "<eos>"], min_freq=2)
    assert v.words == ("<unk>", "<eos>", "b", "a")
    assert v.encode(["a", "c", "zzz", "<eos>"]).tolist() == [3, 0, 0, 1]
    assert v.decode([2, 0]) == ["b", "<unk>"]


def test_lee_vocabulary_comes_from_the_training_part(lee):
    d = D.gensim_test_data_dir()
    train_tokens = D._lee_tokens(D.LEE_TRAIN_FILES)
    held_tokens = D._lee_tokens(D.LEE_HELDOUT_FILES)
    counts = {}
    for t in train_tokens:
        counts[t] = counts.get(t, 0) + 1
    only_held = sorted(set(held_tokens) - set(train_tokens))
    assert only_held and not any(w in lee.vocab for w in only_held)
    w = only_held[0]
    pos = held_tokens.index(w)
    assert int(lee.heldout[pos]) == lee.vocab.unk == 0            # a held-out-only word is <unk>
    once = sorted(t for t, n in counts.items() if n == 1)
    assert once and once[0] not in lee.vocab                       # below the minimum frequency
    assert all(t in lee.vocab for t, n in counts.items() if n >= D.LEE_MIN_FREQ)
    assert len(lee.vocab) == 2 + sum(1 for t, n in counts.items() if n >= D.LEE_MIN_FREQ and t != "<eos>")
    assert lee.train.dtype == torch.int64 and lee.train.shape == (len(train_tokens),)
    assert lee.heldout.shape == (len(held_tokens),)
    assert int((lee.train == 1).sum()) == 300 and int((lee.heldout == 1).sum()) == 50   # <eos> per article
    assert lee.vocab.decode(lee.train[:3]) == ["hundreds", "of", "people"]
    assert (d / "lee.cor").is_file() and "WikiText-2" in lee.info.note()


def test_wikitext2_loader_and_missing_path(tmp_path, monkeypatch):
    monkeypatch.delenv(D.ENV_WIKITEXT2, raising=False)
    with pytest.raises(D.DataError, match=r"\$D2A_WIKITEXT2"):
        D.text("wikitext2")
    d = tmp_path / "wikitext-2"
    d.mkdir()
    (d / "wiki.train.tokens").write_text(" = Title = \n the cat sat on the mat . \n", encoding="utf-8")
    (d / "wiki.valid.tokens").write_text(" the dog . \n", encoding="utf-8")
    monkeypatch.setenv(D.ENV_WIKITEXT2, str(tmp_path))
    with pytest.raises(D.DataError, match="lacks wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens"):
        D.text("auto")
    (d / "wiki.test.tokens").write_text(" the Dog sat . \n", encoding="utf-8")
    t = D.text("auto")
    assert t.info.name == "wikitext2" and t.info.is_paper_dataset
    assert t.vocab.decode(t.heldout) == ["the", "<unk>", "sat", ".", "<eos>"]   # case kept, "Dog" unseen
    assert len(t.train) == 12 and t.vocab.words[:4] == ("<unk>", "<eos>", "=", "the")   # count, then alphabet


def test_batchify_and_sequences_shapes():
    ids = torch.arange(103)
    cols = D.batchify(ids, 4)
    assert cols.shape == (25, 4) and cols[:, 1].tolist() == list(range(25, 50))
    pairs = list(D.sequences(cols, 10))
    assert [tuple(x.shape) for x, _ in pairs] == [(10, 4), (10, 4), (4, 4)]
    for x, y in pairs:
        assert x.dtype == torch.int64 and torch.equal(y, x + 1)
    with pytest.raises(D.DataError):
        D.batchify(ids, 0)


def test_heldout_windows_predict_every_token_but_the_first_once():
    ids = torch.arange(100)
    full, rest = T.heldout_windows(ids, 35)
    assert full[0].shape == (35, 2) and rest[0].shape == (29, 1)
    targets = torch.cat([full[1].t().reshape(-1), rest[1].reshape(-1)])
    assert targets.tolist() == list(range(1, 100))
    assert torch.equal(full[1], full[0] + 1) and torch.equal(rest[1], rest[0] + 1)


# ----------------------------------------------------------------------------- models and training
def test_lstm_wlm_defaults_unchanged_and_dropout_only_in_training():
    import importlib
    lstm_wlm = importlib.import_module("benchmarks.models.lstm_wlm")   # the package attribute is the entry point
    m = lstm_wlm.build()
    assert m.encoder.num_embeddings == 10000 and m.rnn.hidden_size == 650 and m.dropout == 0.0
    assert sum(p.numel() for p in m.parameters()) == 10000 * 650 + 4 * 650 * (650 + 650 + 2) + 650 * 10000 + 10000
    torch.manual_seed(0)
    a = lstm_wlm.build(vocab=50, emb=8, hid=8, dropout=0.5)
    b = lstm_wlm.build(vocab=50, emb=8, hid=8)
    b.load_state_dict(a.state_dict())
    x = torch.randint(0, 50, (35, 1))
    with torch.no_grad():
        assert torch.equal(a.eval()(x), b.eval()(x))
        assert not torch.equal(a.train()(x), b.train()(x))


TINY = T.TrainConfig(epochs=1, batch_size=8, optimizer="sgd", lr=0.01, max_steps=1, eval_samples=8)


def test_cache_returns_the_same_weights_without_retraining(tmp_path, monkeypatch):
    first = T.train_or_load("resnet20", dataset="mnist5k", config=TINY, cache=tmp_path)
    assert not first.cached and first.path.is_file() and first.path.parent == tmp_path / "trained"
    assert first.metrics["steps"] == 1 and first.metrics["test_samples"] == 8 and not first.model.training

    def boom(*a, **k):
        raise AssertionError("retrained although the cache holds the weights")
    monkeypatch.setattr(T, "_fit_vision", boom)
    model, info = T.trained("resnet20", dataset="mnist5k", config=TINY, cache=tmp_path)
    again = T.train_or_load("resnet20", dataset="mnist5k", config=TINY, cache=tmp_path)
    assert again.cached and again.key == first.key and again.metrics == first.metrics
    assert info.name == "mnist5k" and not model.training
    for k, v in first.model.state_dict().items():
        assert torch.equal(v, model.state_dict()[k]), k
    # another configuration is another cache entry (and would train)
    other = dataclasses.replace(TINY, lr=0.02)
    assert T.cache_key("resnet20", D.vision("mnist5k"), other, {}) != first.key
    with pytest.raises(AssertionError, match="retrained"):
        T.train_or_load("resnet20", dataset="mnist5k", config=other, cache=tmp_path)


def test_training_is_seeded(tmp_path):
    a = T.train_or_load("lstm_wlm", dataset="lee", config=TINY, cache=tmp_path / "a")
    b = T.train_or_load("lstm_wlm", dataset="lee", config=TINY, cache=tmp_path / "b")
    assert a.key == b.key and not b.cached
    assert a.model.encoder.num_embeddings == len(D.text("lee").vocab)
    for k, v in a.model.state_dict().items():
        assert torch.equal(v, b.model.state_dict()[k]), k
    assert a.metrics["heldout_perplexity"] == b.metrics["heldout_perplexity"] > 1


def test_cache_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("D2A_CACHE", str(tmp_path / "c"))
    assert T.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("D2A_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert T.cache_dir() == tmp_path / "x" / "d2a"


def test_cli_errors_exit_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(D.ENV_CIFAR10, str(tmp_path / "missing"))
    monkeypatch.setenv("D2A_CACHE", str(tmp_path))
    assert T.main(["resnet20", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: CIFAR-10: $D2A_CIFAR10=") and "Traceback" not in err
    assert T.main(["resnet2"]) == 2
    assert "did you mean resnet20" in capsys.readouterr().err
    bad = T.TrainConfig(epochs=0, batch_size=8, optimizer="sgd", lr=0.1)
    with pytest.raises(T.TrainError, match="epochs"):
        T.train_or_load("resmlp", config=bad, cache=tmp_path)
