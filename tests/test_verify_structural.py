"""The structural adapter check (verify.structural, compile.certify.structural_adapter_proof): value
numbering over two compiler-IR ILA programs proves calls of any size equal to their mapping's IR
fragment; it rests on the footprint table of ila.models.relay.footprint, which is checked here
against the ILA simulator (a wrong footprint, read or written, is caught); adapter bugs at
application sizes are not proved (the call is then not proved), and a structural difference is
never reported as a counterexample."""
import dataclasses

import numpy as np
import pytest

from compile.certify import adapter_proof, structural_adapter_proof, unproved_reason
from compile.ir.graph import call as C, const, var
from ila.models.relay import footprint
from ila.models.relay.model import FUNC_IDS, RelayMachine
from mappings.registry import get
from verify.structural import same_outputs

from calls import call_at as _call

RNG = np.random.default_rng(0)

# one command per described operator, regions apart (bases 0, 1000, 2000, 3000)
CASES = {
    "nn.dense": [0, 1000, 2000, 3, 5, 4],
    "nn.bias_add": [0, 1000, 2000, 2, 3, 4],
    "add": [0, 1000, 2000, 7],
    "multiply": [0, 1000, 2000, 7],
    "nn.relu": [0, 2000, 9],
    "reshape": [0, 2000, 9],
    "transpose": [0, 2000, 3, 5],
    "nn.max_pool2d": [0, 2000, 2, 5, 6, (2 << 16) | 3, (2 << 16) | 1],
    "nn.avg_pool2d": [0, 2000, 2, 5, 6, (3 << 16) | 2, (1 << 16) | 2],
    "nn.conv2d_nchw": [0, 1000, 2000, 2, 5, 6, 3, (2 << 24) | (2 << 8) | 3],
    "nn.conv2d_nhwc": [0, 1000, 2000, 2, 5, 6, 3, (1 << 24) | (3 << 8) | 2],
}


def _cmd(op, args):
    return {"func_id": FUNC_IDS[op], **{f"arg_{k}": a for k, a in enumerate(args)}}


def footprint_errors(op, args, seed=0):
    """What the ILA simulator shows against the footprint table for one command: cells outside the
    declared write region that change; written elements that depend on memory outside the declared
    read regions or keep a value from before; a data-movement gather that moves other elements."""
    acc = footprint.access(_cmd(op, args))
    rm = RelayMachine("float32", tensor_entries=1 << 13)
    mem = rm.sim.memory("tensor")
    rng = np.random.default_rng(seed)
    runs = []
    first = None
    for k in range(2):
        rm.put(0, rng.standard_normal(mem.shape[0]).astype(np.float32))
        if first is not None:                      # the read regions as in the first run, the rest redrawn
            for b, n in acc.reads:
                mem[b:b + n] = first[b:b + n]
        before = mem.copy()
        if first is None:
            first = before
        rm.run(op, *args)
        runs.append((before, mem.copy()))
    errors = []
    wb, wn = acc.write
    outside = np.ones(mem.shape[0], bool)
    outside[wb:wb + wn] = False
    for before, after in runs:
        if np.any(before[outside] != after[outside]):
            errors.append(f"{op} changes cells outside its write region: {np.flatnonzero((before != after) & outside)[:5]}")
    if np.any(runs[0][1][wb:wb + wn] != runs[1][1][wb:wb + wn]):
        errors.append(f"{op}'s result depends on more than its read regions (or keeps an old value)")
    if acc.gather is not None:
        src = np.concatenate([runs[0][0][b:b + n] for b, n in acc.reads])
        if np.any(runs[0][1][wb:wb + wn] != src[acc.gather]):
            errors.append(f"{op} does not move its elements as its gather says")
    return errors


def test_every_described_operator_has_a_case():
    assert set(CASES) == set(footprint.DESCRIBED)


@pytest.mark.parametrize("op", sorted(CASES))
def test_footprints_agree_with_the_ila_simulator(op):
    assert footprint.access(_cmd(op, CASES[op])).degenerate is None
    assert footprint_errors(op, CASES[op]) == []


@pytest.mark.parametrize("bug", ["read", "write+", "write-"])
def test_a_wrong_footprint_is_caught(monkeypatch, bug):
    """Seeded bugs in the table the structural check rests on: a weight region one element short,
    a result region one element too long or too short."""
    real = footprint._TABLE["nn.conv2d_nchw"]

    def wrong(a):
        reads, (wb, wn), params, gather, extents = real(a)
        if bug == "read":
            reads = [reads[0], (reads[1][0], reads[1][1] - 1)]
        else:
            wn += 1 if bug == "write+" else -1
        return reads, (wb, wn), params, gather, extents
    monkeypatch.setitem(footprint._TABLE, "nn.conv2d_nchw", wrong)
    assert footprint_errors("nn.conv2d_nchw", CASES["nn.conv2d_nchw"]) != []


def test_degenerate_commands_are_not_described():
    assert footprint.access(_cmd("nn.dense", [0, 100, 200, 3, 0, 4])).degenerate
    assert footprint.access(_cmd("nn.conv2d_nchw", [0, 100, 200, 1, 2, 2, 1, (1 << 24) | (3 << 8) | 3])).degenerate
    assert footprint.access({"func_id": FUNC_IDS["nn.softmax"]}) is None


def _store(addr, data):
    return {"func_id": FUNC_IDS["tensor_store"], "addr_in": addr, "data_in": data}


def test_value_numbering_is_conservative():
    a, b = object(), object()
    add_ab = [_store(0, a), _store(1, b), _cmd("add", [0, 1, 2, 1])]
    add_ba = [_store(0, b), _store(1, a), _cmd("add", [0, 1, 2, 1])]
    moved = [_store(5, a), _store(9, b), _cmd("add", [5, 9, 20, 1])]
    assert same_outputs(add_ab, 2, moved, 20, 1, 64)[0]             # addresses differ, values do not
    same, why = same_outputs(add_ab, 2, add_ba, 2, 1, 64)
    assert not same and "computed differently" in why               # a + b vs b + a: left open, not refuted
    same, why = same_outputs([_cmd("nn.relu", [0, 1, 1])], 1, [_cmd("nn.relu", [0, 1, 1])], 1, 1, 64)
    assert not same                                                 # the memory before the programs is not shared
    same, why = same_outputs(add_ab + [_cmd("add", [0, 1, 1, 2])], 1, add_ab + [_cmd("add", [0, 1, 1, 2])], 1, 1, 64)
    assert not same and "over its operand" in why                   # a result overlapping an operand
    same, why = same_outputs(add_ab + [_cmd("nn.softmax", [0, 2, 1, 1])], 2, add_ab, 2, 1, 64)
    assert not same and "no described footprint" in why


def _conv_nchw(h, c, o, pad=1, stride=1):
    x = var("x", (1, c, h, h))
    w = const((RNG.standard_normal((o, c, 3, 3)) * 0.2).astype(np.float32))
    return C("nn.conv2d", x, w, strides=(stride, stride), padding=(pad, pad, pad, pad))


def _dense(n, k, m):
    return C("nn.dense", var("x", (n, k)), const(RNG.standard_normal((m, k)).astype(np.float32)))


def hw_swapped(m):
    """An adapter bug: the NCHW image with H and W exchanged (a no-op only for images symmetric under
    that exchange; the shapes still fit square images)."""
    def bind(shape, operands):
        x, w = operands
        return {"x": np.asarray(x).transpose(0, 1, 3, 2), "w": w}
    return dataclasses.replace(m, bind_operands=bind)


def w_transposed(m):
    """An adapter bug: the dense weight passed transposed (shapes fit when K == M)."""
    def bind(shape, operands):
        x, w = operands
        return {"x": np.asarray(x).reshape(shape["N"], shape["K"]), "w": np.asarray(w).T}
    return dataclasses.replace(m, bind_operands=bind)


@pytest.mark.parametrize("name,node,broken", [
    ("hlscnn.conv2d_nchw", _conv_nchw(32, 16, 16), hw_swapped),
    ("hlscnn.conv2d_nchw", _conv_nchw(16, 32, 64, stride=2), hw_swapped),
    ("vta.dense", _dense(64, 64, 64), w_transposed),
])
def test_application_sized_calls_are_proved_by_structure_and_adapter_bugs_are_not(name, node, broken):
    good = _call(name, node)
    v = structural_adapter_proof(good)
    assert v.kind == "proved" and "same values for all data" in v.detail, v
    assert adapter_proof(good).kind == "proved"
    bad = _call(name, node, broken(get(name)))
    v = structural_adapter_proof(bad)
    assert v.kind == "unknown" and "computed differently" in v.reason, v
    v = adapter_proof(bad)                      # above the BMC limit: open, so the call is not proved
    assert v.kind == "unknown"
    assert "not shown by structure" in unproved_reason(bad)


def test_the_adapter_check_sees_the_adapter_as_it_is_now():
    """No verdict is reused across a change of the code an adapter calls (a seeded bug that patches a
    module function the mapping object calls, the object itself unchanged)."""
    m = get("vta.dense")
    impl = [m.bind_operands]
    mapping = dataclasses.replace(m, bind_operands=lambda shape, operands: impl[0](shape, operands))
    call = _call("vta.dense", _dense(64, 64, 64), mapping)
    assert structural_adapter_proof(call).kind == "proved"
    impl[0] = w_transposed(m).bind_operands
    assert structural_adapter_proof(call).kind == "unknown"
    assert adapter_proof(call).kind == "unknown"


def test_structure_and_bmc_agree_on_a_small_call():
    good = _call("hlscnn.conv2d_nchw", _conv_nchw(3, 1, 2))
    assert structural_adapter_proof(good).kind == "proved"
    bad = _call("hlscnn.conv2d_nchw", _conv_nchw(3, 1, 2), hw_swapped(get("hlscnn.conv2d_nchw")))
    assert structural_adapter_proof(bad).kind == "unknown"
    v = adapter_proof(bad)                      # small: BMC decides, with a replayed counterexample
    assert v.kind == "counterexample" and v.replayed, v
