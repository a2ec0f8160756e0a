"""Seeded compiler bugs, one per claim of the compiler's certified path, kept as data.

Each :class:`CompilerBug` is a :class:`verify.mutations.Mutation` (patches applied around a check,
production code knows nothing of them) and the scenario that must catch it: a small model compiled
(and co-simulated) with the bug applied, whose offending offload must be *refused* (not offloaded,
or stopped with a :class:`ila.errors.D2AError` naming the call, never a raw traceback) or whose
certification must be *refuted*. Every scenario also runs without the bug (the control), which
must offload and run cleanly: a check that refuses everything catches nothing.

Claims (``layer``): operand-adapters (the mapping's adapters at the call's shape), pattern-attributes
(closed patterns), fragment-writer (what ``--emit`` writes is what ran), fast-path (the vectorised
stream builder equals the element path the proofs run), chain-fusion (only values with one user
stay in the accelerator), gate (a certificate about the call's own subject), rewrites (a rewrite's
guard), expansion (a graph expansion splices each certified right-hand side in place of its own node,
:func:`compile.expand.check_expansion`). ``python -m benchmarks.compile_mutations`` prints the kill table.
"""
from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verify.mutations import Mutation, Patch, applied


@dataclass(frozen=True)
class CompilerBug:
    mutation: Mutation
    scenario: str          # name of a function of this module: (ledger path, mutated) -> Outcome
    control: str = "offloaded"     # what the scenario must give without the bug (Outcome.how)

    @property
    def name(self) -> str:
        return self.mutation.name

    @property
    def layer(self) -> str:
        return self.mutation.layer


@dataclass
class Outcome:
    """What a scenario observed: ``caught`` (the offload refused / the certification refuted, with
    ``how``), ``detail`` (the refusal or the verdict, one line)."""
    caught: bool
    how: str
    detail: str


# ----------------------------------------------------------------------------- the bugs
def _nwhc(m):
    """hlscnn.conv2d's adapters read the NHWC image as NWHC (H and W in the wrong order, the buffer
    re-cut accordingly): a no-op for square images."""
    def match_shape(attrs, shapes, out):
        s = m.match_shape(attrs, shapes, out)
        return None if s is None else dict(s, H=s["W"], W=s["H"])

    def bind(shape, operands):
        x, w = operands
        return {"x": np.asarray(x).reshape(1, shape["H"], shape["W"], shape["C"]), "w": w}
    return dataclasses.replace(m, match_shape=match_shape, bind_operands=bind)


def _ignore_dilation(defaults_ok):
    def mutated(node, stated):
        return defaults_ok(node, set(stated) | {"dilation"})
    return mutated


PE_OFFSET = 0x1000     # the writer bug shows on PE weight-buffer offsets from here (4 KiB)


def _pe_weight_offset(a: int) -> int | None:
    """The byte offset of FlexASR address ``a`` in a PE's weight buffer (PE i at 0x34000000 +
    i * 0x01000000, window +0x00500000), else None."""
    if 0x34000000 <= a < 0x38000000 and (a & 0x00F00000) == 0x00500000:
        return a & 0x000FFFFF
    return None


def _writer(port):
    """The FlexASR fragment writer writes a W entry at a PE weight-buffer offset >= 4 KiB sixteen
    bytes further (the proof shape 1x16x64 never reaches such offsets)."""
    real = port.entry_of

    def entry_of(cmd):
        e = real(cmd)
        if e.get("mode") == "W":
            a = int(e["addr"], 16)
            off = _pe_weight_offset(a)
            if off is not None and off >= PE_OFFSET:
                e = dict(e, addr=f"0x{a + 16:08X}")
        return e
    return dataclasses.replace(port, entry_of=entry_of)


def _lane_swap(mmio_table):
    """FlexASR's vectorised stream builder swaps data lanes 0 and 1 (writes and reads alike, so
    results even come back right); the element path the proofs run is untouched."""
    def mutated(prog, lib):
        from ila.commands import CommandTable
        t, modes = mmio_table(prog, lib)
        cols = dict(t.columns)
        cols["data_in_0"], cols["data_in_1"] = cols["data_in_1"], cols["data_in_0"]
        return CommandTable(cols), modes
    return mutated


def _vta_table_short(dram_write_table):
    """VTA's numeric stream builder (the table of DRAM writes) drops the last non-zero word (the
    word-by-word path the proofs run is right)."""
    return lambda image, upto=None, **kw: dram_write_table(image, upto, bug="drops_last_word")


def _any_user(chains):
    """Chain detection without the sole-user condition: a call whose value has other users too is
    fused (its value then stays in the accelerator)."""
    def mutated(program):
        class AllSole:                       # every value looks as if its one user were the reader
            def __init__(self, p):
                self.p = p

            def __getattr__(self, k):
                return getattr(self.p, k)

            def users(self):
                return {s.index: [i for i in range(len(self.p.steps))
                                  if s.index in self.p.steps[i].args][:1] for s in self.p.steps}
        return chains(AllSole(program))
    return mutated


def _any_subject(certificates):
    """The gate looks call certificates up by mapping only (any shape, any subject)."""
    def mutated(call, *, require="any", path=None):
        from verify import ledger
        got = [e for e in ledger.current([e for e in ledger.load(path) if e["mapping"] == call.mapping.name
                                          and e.get("method") == "call"])
               if e["result"] in (("proved",) if require == "proved" else ("proved", "passed"))]
        return got or certificates(call, require=require, path=path)
    return mutated


def _pairing(expand):
    """Graph expansion pairs each replaced node with the next replaced node's right-hand side (the
    nodes have one shape, so nothing fails downstream: two LSTM layers' results change places)."""
    def mutated(graph, rewrites):
        from compile.expand import Expansion, substitute
        from compile.ir.graph import Graph
        e = expand(graph, rewrites)
        items = list(e.replaced.items())
        if len(items) < 2:
            return e
        rhs = [r for _, (_, _, r) in items[1:] + items[:1]]
        replaced = {u: (n, rw, r) for (u, (n, rw, _)), r in zip(items, rhs)}
        outs = substitute(graph.outputs, {u: r for u, (_, _, r) in replaced.items()})
        return Expansion(Graph(graph.inputs, outs, graph.name), e.applied, replaced)
    return mutated


BUGS: dict[str, CompilerBug] = {b.name: b for b in (
    CompilerBug(Mutation("adapter_nonsquare", "operand-adapters", "hlscnn.conv2d's adapters read NHWC as NWHC (only "
                         "non-square images differ)", (Patch("mappings.hlscnn.conv2d", "MAPPING", _nwhc),)),
                "scenario_adapter"),
    CompilerBug(Mutation("pattern_ignores_dilation", "pattern-attributes", "closed patterns ignore the dilation "
                         "attribute (a dilated convolution matches HLSCNN's pattern)",
                         (Patch("compile.patterns", "_defaults_ok", _ignore_dilation),)), "scenario_dilation",
                control="not matched"),
    CompilerBug(Mutation("writer_above_proof_shape", "fragment-writer", "the FlexASR fragment writer puts PE "
                         "weight-buffer writes at offsets >= 4 KiB 16 bytes too far (never at the proof shape)",
                         (Patch("ila.models.flexasr.port", "PORT", _writer),)), "scenario_writer"),
    CompilerBug(Mutation("fast_path_lane_swap", "fast-path", "FlexASR's vectorised stream builder swaps data lanes "
                         "0 and 1 (the element path the proofs run is right)",
                         (Patch("ila.models.flexasr.driver", "mmio_table", _lane_swap),)), "scenario_fast_path"),
    CompilerBug(Mutation("vta_fast_path_short", "fast-path", "VTA's numeric stream builder drops the last non-zero "
                         "DRAM word of a program (the word-by-word path the proofs run is right)",
                         (Patch("ila.models.vta.driver", "dram_write_table", _vta_table_short),)),
                "scenario_vta_fast_path"),
    CompilerBug(Mutation("chain_two_users", "chain-fusion", "chain detection fuses pools across a value that has a "
                         "second user", (Patch("compile.chains", "chains", _any_user),)), "scenario_chain",
                control="ran"),
    CompilerBug(Mutation("gate_any_shape", "gate", "the gate looks call certificates up by mapping only (any shape, "
                         "any subject)", (Patch("compile.certify", "certificates", _any_subject),)), "scenario_gate",
                control="no certificate"),
    CompilerBug(Mutation("expand_pairing", "expansion", "graph expansion splices each LSTM layer's unrolled form in "
                         "place of the next layer of the same shape", (Patch("compile.expand", "expand", _pairing),)),
                "scenario_expansion"),
)}


# ----------------------------------------------------------------------------- scenarios
def _compile(graph, targets, path, *, matching="exact", certify="sim", rewrites=None):
    from compile.compiler import compile_graph
    return compile_graph(graph, targets, matching=matching, certify=certify, budget=300.0, ledger_path=path,
                         rewrites=rewrites)


def _refused(res, mapping: str) -> str:
    got = [d.describe() for d in res.refused if d.mapping == mapping]
    return got[0] if got else ""


def _conv_graph(h, w, dilation=(1, 1), k=3, stride=1):
    from compile.ir.graph import Graph, call, const, var
    rng = np.random.default_rng(1)
    x = var("x", (1, h, w, 3))
    wt = const((rng.standard_normal((8, k, k, 3)) * 0.2).astype(np.float32))
    y = call("nn.conv2d", x, wt, strides=(stride, stride), dilation=dilation, data_layout="NHWC", kernel_layout="OHWI")
    return Graph([x], [y])


def scenario_adapter(path, mutated: bool) -> Outcome:
    res = _compile(_conv_graph(5, 7), ("hlscnn",), path)
    if res.counts().get("hlscnn.conv2d"):
        return Outcome(False, "offloaded", "a 5x7 NHWC convolution offloaded to hlscnn.conv2d")
    return Outcome(True, "refused", _refused(res, "hlscnn.conv2d"))


def scenario_dilation(path, mutated: bool) -> Outcome:
    res = _compile(_conv_graph(12, 12, dilation=(2, 2), k=2, stride=3), ("hlscnn",), path)
    if res.counts().get("hlscnn.conv2d"):
        return Outcome(False, "offloaded", "a dilated convolution offloaded to hlscnn.conv2d")
    why = _refused(res, "hlscnn.conv2d")
    return Outcome(True, "refused", why) if why else Outcome(True, "not matched", "no match of the closed pattern")


def _linear_graph(t, i, o):
    from compile.ir.graph import Graph, call, const, var
    rng = np.random.default_rng(2)
    x = var("x", (t, i))
    w = const((rng.standard_normal((o, i)) / 8).astype(np.float32))
    b = const((rng.standard_normal(o) / 8).astype(np.float32))
    return Graph([x], [call("nn.bias_add", call("nn.dense", x, w), b)])


def scenario_writer(path, mutated: bool) -> Outcome:
    res = _compile(_linear_graph(16, 256, 64), ("flexasr.linear",), path)
    if res.counts().get("flexasr.linear"):
        return Outcome(False, "offloaded", "the 16x256x64 linear layer offloaded")
    return Outcome(True, "refused", _refused(res, "flexasr.linear"))


def _pool_graph(r, c, second_user=False):
    from compile.ir.graph import Graph, call, var
    x = var("x", (1, 1, r, c))
    p1 = call("nn.max_pool2d", x, pool_size=(2, 1), strides=(2, 1))
    p2 = call("nn.max_pool2d", p1, pool_size=(2, 1), strides=(2, 1))
    outs = [p2, call("nn.relu", p1)] if second_user else [p2]
    return Graph([x], outs)


def scenario_fast_path(path, mutated: bool) -> Outcome:
    res = _compile(_pool_graph(8, 32), ("flexasr.maxpool",), path)
    if res.counts().get("flexasr.maxpool"):
        return Outcome(False, "offloaded", "the pools offloaded")
    return Outcome(True, "refused", _refused(res, "flexasr.maxpool"))


def scenario_vta_fast_path(path, mutated: bool) -> Outcome:
    from compile.ir.graph import Graph, call, const, var
    rng = np.random.default_rng(4)
    x = var("x", (8, 40))
    g = Graph([x], [call("nn.dense", x, const((rng.standard_normal((24, 40)) / 8).astype(np.float32)))])
    res = _compile(g, ("vta.dense",), path)
    if res.counts().get("vta.dense"):
        return Outcome(False, "offloaded", "the 8x40x24 dense layer offloaded")
    return Outcome(True, "refused", _refused(res, "vta.dense"))


def scenario_chain(path, mutated: bool) -> Outcome:
    from compile.runtime.cosim import cosimulate
    from ila.errors import D2AError
    from ila.numerics import adaptivfloat as af
    g = _pool_graph(8, 32, second_user=True)
    res = _compile(g, ("flexasr",), path)
    rng = np.random.default_rng(3)
    x = af.dequantize(rng.integers(0, 256, (1, 1, 8, 32)), 3).astype(np.float32)     # representable: exact
    try:
        out = cosimulate(res, {"x": x})
    except D2AError as exc:
        return Outcome(True, "refused", " ".join(str(exc).split()))
    ok = all(np.array_equal(a, b) for a, b in zip(out.outputs, out.reference))
    return Outcome(not ok, "ran", f"co-simulated ({'equal to the host' if ok else 'DIFFERENT from the host'}), "
                                  f"chains fused: {res.chains()}")


def scenario_gate(path, mutated: bool) -> Outcome:
    from compile.runtime.cosim import cosimulate
    from ila.errors import D2AError
    _compile(_linear_graph(1, 16, 64), ("flexasr.linear",), path)    # a certificate at another subject
    res = _compile(_linear_graph(4, 32, 64), ("flexasr.linear",), path, certify="none")
    if not res.counts().get("flexasr.linear"):
        why = _refused(res, "flexasr.linear")
        return Outcome(True, "no certificate" if "no current certificate" in why else "refused", why)
    try:
        cosimulate(res, {"x": np.ones((4, 32), np.float32)})
    except D2AError as exc:
        return Outcome(True, "refused at run time", " ".join(str(exc).split()))
    return Outcome(False, "offloaded", "the 4x32x64 linear layer offloaded on another subject's certificate")


def _two_lstms(T=3, I=16, H=16):
    """Two LSTM layers of one shape (one weight set) over two inputs, both results outputs."""
    from compile.ir.graph import Graph, call, const, var
    rng = np.random.default_rng(2)
    w, r, b = (const((rng.standard_normal(s) * 0.3).astype(np.float32))
               for s in ((1, 4 * H, I), (1, 4 * H, H), (1, 8 * H)))
    x1, x2 = var("x1", (T, 1, I)), var("x2", (T, 1, I))
    return Graph([x1, x2], [call("nn.lstm", x1, w, r, b), call("nn.lstm", x2, w, r, b)])


def scenario_expansion(path, mutated: bool) -> Outcome:
    from compile.runtime.cosim import cosimulate
    from ila.errors import D2AError
    g = _two_lstms()
    res = _compile(g, ("vta",), path, matching="flexible", rewrites=("lstm_unroll", "dense_zero_bias"))
    if res.expansions_refused:
        return Outcome(True, "refused", res.expansions_refused[0])
    if not res.rules_used.get("lstm_unroll"):
        return Outcome(False, "not expanded", f"no expansion; offloads {res.counts()}")
    rng = np.random.default_rng(3)
    ins = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    try:
        out = cosimulate(res, ins)
    except D2AError as exc:
        return Outcome(True, "refused at run time", " ".join(str(exc).split()))
    return Outcome(False, "offloaded", f"{res.counts()} offloads, co-simulated within {out.error():.1e} of the host")


def passes(bug: CompilerBug, outcome: Outcome, *, control: bool) -> bool:
    """Whether ``outcome`` is what ``bug``'s scenario must give: the bug caught (mutated), or the
    scenario's expected behaviour without it (control)."""
    return outcome.how == bug.control if control else outcome.caught and outcome.how != bug.control


def run(bug: CompilerBug, *, control: bool = False) -> tuple[Outcome, float]:
    """Run ``bug``'s scenario with the bug applied (``control``: without it), on a fresh ledger:
    (outcome, seconds)."""
    fn = globals()[bug.scenario]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "ledger.json"
        with applied(None if control else bug.mutation):
            out = fn(path, not control)
    return out, time.perf_counter() - t0


__all__ = ["BUGS", "CompilerBug", "Outcome", "run"]
