"""The LSTM unroll: the front-ends' folded ``nn.lstm`` as its cell's operators, one step at a time,
so that the dense layers inside a recurrent layer reach an accelerator's dense mapping (VTA's
``vta.dense_bias``; the paper's LSTM-WLM offloads 36 dense layers to VTA, §5, Table 1).

``lstm_unroll`` (one rule per sequence length T = 1 .. :data:`MAX_T` and per operand count):
``nn.lstm(x[T, 1, I], w[1, 4H, I], r[1, 4H, H], b[1, 8H], h0 = 0, c0 = 0)`` with ONNX's gate order
(i, o, f, c) in the 4H rows, equals

* ``P = bias_add(dense(reshape(x, [T, I]), W), Wb + Rb)`` (``[T, 4H]``: the input projection of every
  step in one dense layer; ``dense(...)`` alone without a bias);
* per step t: ``z_t = P[t]`` at t = 0 (the initial state is zero, so the recurrence term is zero),
  else ``bias_add(dense(h_(t-1), R), P[t])``; the gates are the column blocks of ``z_t``:
  ``i = sigmoid(z[0:H])``, ``o = sigmoid(z[H:2H])``, ``f = sigmoid(z[2H:3H])``,
  ``g = tanh(z[3H:4H])``; ``c_t = f * c_(t-1) + i * g`` (``i * g`` at t = 0), ``h_t = o * tanh(c_t)``;
* ``Y = reshape(concatenate([h_0, ..., h_(T-1)], axis 0), [T, 1, 1, H])``.

So a layer of T steps has T dense layers with a bias (one input projection, T - 1 recurrences) that
an accelerator can take, and 9 host element-wise operators per step. It is the ONNX LSTM operator's
definition (forward, default activations f = sigmoid, g = h = tanh, no peepholes, zero initial
state), certified like every rewrite (:mod:`compile.rewrites.certify`): the exact check lowers both
sides to the compiler-IR ILA with sigmoid and tanh uninterpreted (every activation function) at
small I and H, including the rule at the applications' sequence length, and the property test
measures the float32 rounding of the unrolled form (it rounds after every operator, the folded
operator once).

The compiler applies it to the graph rather than in the e-graph (``Rewrite.expands``: the unrolled
values are shared many times over, which tree-cost extraction cannot price) and keeps the unrolled
program when it costs less: on the host the folded layer costs what its unrolled form costs
(:func:`compile.egraph.lstm_host_cost`), so that is when some of its operators are offloaded.
"""
from __future__ import annotations

from compile.egraph import (RuleSpec, Term, dtype, eq, int_vars, rule_var, shape, str_vars, term_vars, terms, vec,
                            vec_vars, zero_term)
from compile.rewrites.base import Rewrite, RuleFamily
from compile.rewrites.rules import _lstm_lhs, _rand_lstm as _rand_short

MAX_T = 40                 # the longest sequence unrolled (LSTM-WLM: 35); a rule per length
GATES = (0, 1, 2, 3)       # ONNX's blocks i, o, f, c of the 4H rows, in the order the cell reads them


def _rows(v, begin: int, end: int, axis: int):
    return Term.strided_slice(v, vec(begin), vec(end), vec(1), vec(axis))


def _step(lets: list, step: int, z, c, H: int, gates=GATES):
    """One LSTM step on the pre-activations z[1, 4H] and the previous cell state c (None: zero):
    appends the step's cell and hidden states to ``lets`` (shared values are let-bound) and
    returns their variables (h, c')."""
    i, o, f, g = (_rows(z, q * H, (q + 1) * H, 1) for q in gates)
    i, o, f, g = Term.sigmoid(i), Term.sigmoid(o), Term.sigmoid(f), Term.tanh(g)
    ig = Term.multiply(i, g)
    lets.append((f"c{step}", ig if c is None else Term.add(Term.multiply(f, c), ig)))
    c = rule_var(f"c{step}")
    lets.append((f"h{step}", Term.multiply(o, Term.tanh(c))))
    return rule_var(f"h{step}"), c


def lstm_unroll_rules(lengths=range(1, MAX_T + 1), *, gates=GATES, recurrence: bool = True,
                      check_state: bool = True, name: str = "lstm_unroll"):
    """The egglog rules of ``lstm_unroll``: one per sequence length in ``lengths`` and operand count
    (3: no bias, 4: bias, 5 and 6: initial states, which must be zero constants). ``gates`` /
    ``recurrence`` / ``check_state`` exist for the seeded wrong variants
    (:mod:`compile.rewrites.broken`)."""
    out = []
    for T in lengths:
        for arity in (3, 4, 5, 6):
            t, x, w, r, b, h0, c0 = term_vars("t x w r b h0 c0")
            sx, sr, sb = vec_vars("sx sr sb")
            I, H = int_vars("I H")
            (d,) = str_vars("d")
            ops = [x, w, r, b, h0, c0][:arity]
            where = [eq(sx).to(shape(x)), eq(sx.length()).to(3), eq(sx[0]).to(T), eq(sx[1]).to(1),
                     eq(I).to(sx[2]), eq(sr).to(shape(r)), eq(sr.length()).to(3), eq(H).to(sr[2]),
                     eq(d).to(dtype(x))]
            if arity >= 4:
                where += [eq(sb).to(shape(b)), eq(sb).to(vec(1, H * 8))]
            if check_state:
                where += [zero_term(s) for s in ops[4:]]
            W = Term.reshape(w, vec(H * 4, I))
            R = Term.reshape(r, vec(H * 4, H))
            P = Term.dense(Term.reshape(x, vec(T, I)), W)
            if arity >= 4:
                wb, rb = (Term.reshape(_rows(b, off, off + H * 4, 1), vec(H * 4)) for off in (0, H * 4))
                P = Term.bias_add(P, Term.add(wb, rb), 1)
            lets = [("P", P), ("R", R)]
            P, R = rule_var("P"), rule_var("R")
            hs, h, c = [], None, None
            for step in range(T):
                z = _rows(P, step, step + 1, 0)
                if h is not None and recurrence:
                    z = Term.bias_add(Term.dense(h, R), Term.reshape(z, vec(H * 4)), 1)
                lets.append((f"z{step}", z))
                h, c = _step(lets, step, rule_var(f"z{step}"), c, H, gates)
                hs.append(h)
            y = Term.reshape(Term.concatenate(terms(*hs), 0), vec(T, 1, 1, H))
            out.append(RuleSpec(name, f"T{T}/{arity}-operands", t, Term.lstm(terms(*ops)), tuple(where), y,
                                tuple(lets)))
    return tuple(out)


def _rand_lstm(rng) -> dict:
    """The property test's parameters: lstm_fold's (T <= 6), and one draw in four at a length up
    to :data:`MAX_T` (I, H <= 3), so the rules of long sequences are measured too."""
    p = _rand_short(rng)
    if rng.integers(4) == 0:
        p.update(T=int(rng.integers(7, MAX_T + 1)), I=int(rng.integers(1, 4)), H=int(rng.integers(1, 4)))
    return p


def _length(node) -> int | None:
    """The sequence length of an ``nn.lstm`` node (the key of its rules), else None."""
    return int(node.shape[0]) if node.op == "nn.lstm" and len(node.shape) == 4 else None


def family(**variant) -> RuleFamily:
    """The rules of ``lstm_unroll`` as a family by sequence length (``variant``: keyword arguments
    of :func:`lstm_unroll_rules` for the seeded wrong variants)."""
    return RuleFamily(lambda lengths: lstm_unroll_rules(lengths, **variant), range(1, MAX_T + 1), _length)


# The exact check's instances: every operand form at T = 2 with several gate rows (H = 2), and the
# rule at LSTM-WLM's length (T = 35) at I = H = 1 (where a step's gates are single elements).
SPACE = [dict(T=2, I=i, H=2, B=b, bias=bias, state=state, ints=True)
         for i in (1, 2) for b in (1, 2) for bias in ("input", "const", "none")
         for state in ("absent", "zeros", "input", "ones")] + \
        [dict(T=T, I=1, H=1, B=1, bias="input", state="absent", ints=True) for T in (1, 3, 35)]

# Property-test tolerance, measured (seeds 0..59 of the generator above, 40 draws each, 1,068 cases
# where the rules apply; standard-normal float32 data): relative Frobenius error median 9.0e-8,
# 99.9th percentile 4.2e-7, largest 4.9e-7. The unrolled form rounds to float32 after every operator,
# the folded operator (float64 inside) once at the end. 1e-5, as lstm_fold's: ~20x the largest
# seen, four orders below a swapped gate or a dropped recurrence (relative errors 0.1 .. 0.6).
RTOL = 1e-5

UNROLL = (
    Rewrite("lstm_unroll", "nn.lstm(x[T,1,I], w, r, b, h0=0, c0=0) [ONNX gates i,o,f,c] => the cell per step: "
            "P = bias_add(dense(x, W), Wb + Rb); z_t = bias_add(dense(h_(t-1), R), P[t]); i, o, f = sigmoid, "
            "g = tanh of z_t's blocks; c_t = f c_(t-1) + i g; h_t = o tanh(c_t); Y = concatenate(h_t)  "
            f"(T <= {MAX_T}; the dense layers of the recurrence reach VTA, paper Table 1)",
            family(), _lstm_lhs, _rand_lstm, SPACE,
            bit_exact=False, rtol=RTOL, expands=True),
)


def lstm_unroll(n):
    """The unrolled form of IR node ``n`` (None where the rules do not apply)."""
    return UNROLL[0].apply(n)


__all__ = ["UNROLL", "MAX_T", "lstm_unroll", "lstm_unroll_rules"]
