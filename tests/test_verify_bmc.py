"""The mapping BMC machinery on a toy mapping between two instances of the compiler-IR ILA
(different tensor layouts, different abstract max functions linked by an axiom): proved when
right, and refuted with a replayed counterexample when the mapping is broken."""
import numpy as np
import pytest

from ila.models.relay.model import FUNC_IDS, relay_ila
from ila.models.relay.numerics import abstract
from verify.bmc import check_bmc
from verify.fragments import ProofSetup, Side, symbolic_data


def toy(R, C, *, acc_out=9000, acc_in=5000, read_base=None, ir_out=2000):
    umax = np.maximum
    ni, na = abstract("ir", 8, max_body=umax), abstract("acc", 8, max_body=umax)
    ir, acc = relay_ila(ni, tensor_entries=1 << 14), relay_ila(na, tensor_entries=1 << 14)
    d = symbolic_data(R * C, 8)

    def st(base, t, c):
        return {"func_id": 1, "addr_in": base + t * C + c, "data_in": d[t * C + c]}

    def pool(src, dst):
        return {"func_id": FUNC_IDS["nn.max_pool2d"], "arg_0": src, "arg_1": dst, "arg_2": 1, "arg_3": R,
                "arg_4": C, "arg_5": (2 << 16) | 1, "arg_6": (2 << 16) | 1}
    ir_cmds = [st(0, t, c) for t in range(R) for c in range(C)] + [pool(0, ir_out)]
    acc_cmds = [st(acc_in, t, c) for t in range(R) for c in range(C)] + [pool(read_base or acc_in, acc_out)]
    outs = [(ir_out + t * C + c, 9000 + t * C + c) for t in range(R // 2) for c in range(C)]

    def link(apps):
        return [n.eq(na.max(*n.args)) for n in apps if n.payload is ni.max]
    return ProofSetup(Side(ir, ir_cmds, "tensor"), Side(acc, acc_cmds, "tensor"), d, outs, axioms=[link])


@pytest.mark.parametrize("solver", ["z3", "cvc5"])
def test_correct_toy_mapping_is_proved(solver):
    assert check_bmc(toy(4, 16), solver=solver).kind == "proved"


@pytest.mark.parametrize("broken", [dict(acc_out=9016), dict(read_base=5001), dict(ir_out=40)])
def test_broken_toy_mappings_are_refuted_with_replayed_counterexamples(broken):
    v = check_bmc(toy(4, 16, **broken), solver="z3")
    assert v.kind == "counterexample" and v.replayed
    assert v.trace["ir_value"] != v.trace["acc_value"]
