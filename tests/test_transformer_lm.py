"""The Transformer word language model of Table 4 (``benchmarks/models/transformer_lm.py``): the
paper's ``nn.Transformer`` between an embedding and a decoder, causal in every attention."""
import pytest

torch = pytest.importorskip("torch")

from benchmarks import table4 as T                          # noqa: E402
from benchmarks import train                                # noqa: E402
from benchmarks.models import transformer_lm as M           # noqa: E402


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    return M.build(vocab=50).eval()


def test_the_papers_transformer_inside(model):
    t = model.transformer
    assert len(t.encoder.layers) == 6 and len(t.decoder.layers) == 6
    layer = t.encoder.layers[0]
    assert layer.self_attn.num_heads == 8 and layer.self_attn.embed_dim == 256 and layer.linear1.out_features == 1024


def test_shapes_and_a_shorter_window(model):
    with torch.no_grad():
        assert tuple(model(torch.randint(0, 50, (M.SEQ, 2))).shape) == (M.SEQ, 2, 50)
        assert tuple(model(torch.randint(0, 50, (7, 1))).shape) == (7, 1, 50)      # the last training window


def test_position_t_sees_tokens_up_to_t_only(model):
    """Changing tokens from position 20 on leaves the logits of positions 0..19 unchanged (every
    attention -- encoder, decoder, decoder to memory -- is masked), and changes the later ones."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(0, 50, (M.SEQ, 1), generator=gen)
    y = x.clone()
    y[20:] = (y[20:] + 7) % 50
    with torch.no_grad():
        a, b = model(x), model(y)
    assert torch.equal(a[:20], b[:20])
    assert (a[20:] - b[20:]).abs().max() > 1e-3


def test_one_width():
    with pytest.raises(ValueError, match="emb .* and hid .* must be equal"):
        M.build(vocab=50, emb=256, hid=128)


def test_table4_and_training_know_it():
    assert "transformer_lm" in train.TEXT_MODELS and "transformer_lm" in train.DEFAULTS
    model, cfg = T.training_config("transformer")
    assert model == "transformer_lm" and cfg.features == 256 and T.APPS["transformer"].text
    assert [d[0] for d in T.APPS["transformer"].designs] == ["original", "guarded", "vta"]
    assert T.PAPER.get("transformer", T.NOT_IN_PAPER)[3].startswith("–")
