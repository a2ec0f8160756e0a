"""The mappings' IR patterns, parsed from the registry, and exact matching on IR graphs."""
import numpy as np
import pytest

from compile.ir.graph import Graph, call, const, var
from compile.patterns import PatternError, exact_counts, mapping_patterns, matches, parse


def test_every_registered_pattern_parses():
    pats = mapping_patterns()
    assert pats["flexasr.linear"].op == "nn.bias_add" and pats["flexasr.linear"].args[0].op == "nn.dense"
    assert dict(pats["flexasr.maxpool"].attrs)["pool_size"] == ("2", "1")


@pytest.mark.parametrize("text, why", [("(nn.dense ?x", "missing"), ("(nn.dense ?x ?w))", "after"),
                                       ("(frobnicate ?x)", "not an operator"), ("(nn.relu x)", "neither")])
def test_malformed_patterns_are_refused(text, why):
    with pytest.raises(PatternError, match=why):
        parse(text)


def _linear_net():
    x = var("x", (4, 16))
    w1, b1 = const(np.zeros((8, 16), np.float32)), const(np.zeros(8, np.float32))
    y = call("nn.bias_add", call("nn.dense", x, w1), b1)            # exact FlexASR linear
    z = call("nn.dense", call("nn.relu", y), const(np.zeros((8, 8), np.float32)))   # bare dense
    p = call("nn.max_pool2d", call("reshape", z, newshape=(1, 1, 4, 8)), pool_size=(2, 1), strides=(2, 1))
    q = call("nn.max_pool2d", p, pool_size=(2, 2), strides=(2, 2))
    return Graph([x], [q])


def test_exact_matching_counts_sites():
    g = _linear_net()
    counts = exact_counts(g)
    assert counts["flexasr.linear"] == 1           # the bare dense needs flexible matching
    assert counts["flexasr.maxpool"] == 1          # the (2,2) pool does not match (2,1)
    assert counts["vta.relu"] == 0                 # VTA's ALU is int32: a float relu does not match
    assert counts["vta.gemm"] == 0                 # out_dtype int32: the float dense does not match
    assert counts["hlscnn.conv2d"] == 0
    assert set(exact_counts(g, targets={"vta"})) == {"vta.add", "vta.dense", "vta.dense_bias", "vta.gemm", "vta.relu"}
    assert exact_counts(g, targets={"vta"})["vta.dense"] == 2   # both float denses (the biased one too)


def test_the_mapping_dtype_is_part_of_the_pattern():
    a = var("a", (4, 16), "int32")
    g = Graph([a], [call("nn.relu", call("add", a, a))])
    assert exact_counts(g, targets={"vta"}) == {"vta.add": 1, "vta.dense": 0, "vta.dense_bias": 0, "vta.gemm": 0,
                                                "vta.relu": 1}
    f = var("f", (4, 16))
    assert exact_counts(Graph([f], [call("nn.relu", call("add", f, f))]), targets={"vta"})["vta.add"] == 0


def test_repeated_variables_must_bind_the_same_value():
    pat = mapping_patterns(["flexasr.attention"])["flexasr.attention"]
    dec, enc, other = var("dec", (4, 8)), var("enc", (6, 8)), var("other", (6, 8))

    def attn(second):
        return Graph([dec, enc, other], [call("nn.dense", call("nn.softmax", call("nn.dense", dec, enc)),
                                              call("transpose", second, axes=(1, 0)))])
    assert len(matches(attn(enc), pat)) == 1
    assert matches(attn(other), pat) == []


def test_attribute_variables_and_layout_defaults():
    pat = parse("(nn.conv2d ?x ?w (strides S S) (padding 0 0))")
    x, w = var("x", (1, 2, 6, 6)), var("w", (2, 2, 3, 3))
    assert len(matches(Graph([x, w], [call("nn.conv2d", x, w, strides=(2, 2))]), pat)) == 1
    assert matches(Graph([x, w], [call("nn.conv2d", x, w, strides=(1, 2))]), pat) == []
    assert matches(Graph([x, w], [call("nn.conv2d", x, w, padding=(1, 1, 1, 1))]), pat) == []
    nhwc = mapping_patterns(["hlscnn.conv2d"])["hlscnn.conv2d"]     # the IR's convolutions are NCHW
    assert matches(Graph([x, w], [call("nn.conv2d", x, w)]), nhwc) == []
