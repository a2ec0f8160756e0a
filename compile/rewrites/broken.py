"""Seeded wrong rewrites: the certification must refute each (compile.rewrites.certify).

Two kinds: wrong right-hand sides (a transposed kernel, a wrong pool stride, swapped LSTM gates, a
dropped bias half), and right rules with a guard condition dropped (``unguarded_*``: the rule then
also fires where the dropped condition fails; the property test's parameters are drawn without
assuming the guard, and the exact check runs at every combination of the parameter space, so both
reach those cases). The guard-dropped variants reuse the rules' own declarations in
:mod:`compile.rewrites.rules` with one condition switched off.
"""
from __future__ import annotations

from compile.egraph import RuleSpec, eq, int_vars, vec
from compile.rewrites import rules, tiling, unroll
from compile.rewrites.base import Rewrite


def _pool_wrong_stride_rules():
    """A (2a,1)/(a,1) window as an (a,1)/(1,1) pool then a (2,1)/(a,1) pool: the first pool's
    stride is wrong (windows of a + 1 rows, not 2a)."""
    t, x, lhs, where, (kh, kw, a, sw) = rules._pool_vars()
    (b,) = int_vars("b")
    where += [a >= 2, eq(b).to(a * 2), eq(kh).to(b), eq(kw).to(1)]
    rhs = rules._pool(rules._pool(x, vec(a, 1), vec(1, 1)), vec(2, 1), vec(a, 1))
    return (RuleSpec("maxpool_split_wrong_stride", "any", t, lhs, tuple(where), rhs),)


def _pool_lhs(p):
    return rules._pool_lhs(dict(kh=2 * p["a"], kw=1, sh=p["a"], sw=1, N=1, C=1, H=p["H"], W=1))


# one small instance: T = 2 so the forget gate (multiplying the cell state of step 0) matters; the
# BMC counterexample takes ~2 s here, ~8 s at I = H = 2
_LSTM_SPACE = [dict(T=2, I=1, H=1, bias="input", state="zeros")]
_POOL_SPACE = dict(kh=(2, 4, 6), kw=(1, 2), sh=(2, 4), sw=(1,), N=(1,), C=(1,), H=(8,), W=(2,))

BROKEN = (
    Rewrite("conv2d_im2col_transposed_kernel", "im2col with the kernel's KH and KW axes swapped",
            rules.conv2d_im2col_rules(kernel_axes=(0, 1, 3, 2), name="conv2d_im2col_transposed_kernel"),
            rules._conv_lhs, rules._rand_conv, [dict(C=1, O=1, KH=2, KW=2, S=1, P=0, H=2, W=2)]),
    Rewrite("maxpool_split_wrong_stride", "a (2a,1)/(a,1) pool split with the first pool at stride 1",
            _pool_wrong_stride_rules(), _pool_lhs, lambda rng: dict(a=int(rng.integers(1, 4)),
                                                                     H=int(rng.integers(2, 12))),
            [dict(a=2, H=6)]),
    Rewrite("lstm_fold_swapped_gates", "lstm_fold with ONNX's o and f gates taken for PyTorch's f and o (the "
            "permutation (i, o, c, f) instead of (i, f, c, o))",
            rules.lstm_fold_rules(order=(0, 1, 3, 2), name="lstm_fold_swapped_gates"), rules._lstm_lhs,
            rules._rand_lstm, _LSTM_SPACE, bit_exact=False, rtol=rules.LSTM_RTOL),
    Rewrite("lstm_fold_dropped_bias", "lstm_fold summing only the input bias Wb (the recurrence bias Rb dropped)",
            rules.lstm_fold_rules(halves=(True, False), name="lstm_fold_dropped_bias"), rules._lstm_lhs,
            rules._rand_lstm, _LSTM_SPACE, bit_exact=False, rtol=rules.LSTM_RTOL),
    Rewrite("lstm_unroll_swapped_gates", "lstm_unroll reading ONNX's o and f gate blocks the other way round",
            unroll.family(gates=(0, 2, 1, 3), name="lstm_unroll_swapped_gates"), rules._lstm_lhs, unroll._rand_lstm,
            _LSTM_SPACE, bit_exact=False, rtol=unroll.RTOL),
    Rewrite("lstm_unroll_no_recurrence", "lstm_unroll without the recurrence term (each step's gates from its input "
            "projection only, h_(t-1) R dropped)",
            unroll.family(recurrence=False, name="lstm_unroll_no_recurrence"), rules._lstm_lhs, unroll._rand_lstm,
            _LSTM_SPACE, bit_exact=False, rtol=unroll.RTOL),
    Rewrite("dense_flatten_swapped_rows", "dense_flatten reading x's rows with its first two axes transposed",
            rules.dense_flatten_rules(swap_leading=True, name="dense_flatten_swapped_rows"), rules._dense_lhs,
            lambda rng: dict(zip("NKM", rules._dims(rng, 3)), R=int(rng.integers(2, 6))),
            dict(R=(3,), N=(2,), K=(1,), M=(2,))),
    Rewrite("conv2d_tile_rows_shifted", "conv2d_tile_rows whose second tile reads its input rows one row early "
            "(the halo counted on the wrong side; same shapes, wrong rows)",
            tiling.conv2d_tile_rows_rules(shift=1, name="conv2d_tile_rows_shifted"), rules._conv_lhs,
            tiling._rand_conv_tile, dict(C=(1,), O=(1,), KH=(1, 2), KW=(1,), S=(1,), P=(0,), H=(5,), W=(2,)),
            checked=tiling.conv2d_tile_rows_rules(None, shift=1, name="conv2d_tile_rows_shifted"),
            size_guard="operands + result > TILE_LIMIT elements"),
    Rewrite("slice_compose_shifted", "slice_compose whose composed slice starts one row late (a nested tile "
            "reading the rows of its neighbour)",
            tiling.slice_compose_rules(shift=1, name="slice_compose_shifted"), tiling._slice_lhs, tiling._rand_slice,
            [dict(S=(6, 2), A=0, b1=1, e1=4, b2=0, e2=2), dict(S=(2, 5), A=1, b1=0, e1=5, b2=2, e2=3)]),
    # the rules the compiler runs differ from the checked ones by more than the size bound: only the
    # bound check sees it (the exact and property checks run the checked rules, which are right)
    Rewrite("conv2d_tile_out_unchecked_cut", "conv2d_tile_out whose compiled rules split at O/2 + 1 while the "
            "checked rules split at ceil(O/2)",
            tiling.conv2d_tile_out_rules(cut=lambda o: o / 2 + 1, name="conv2d_tile_out_unchecked_cut"),
            rules._conv_lhs, tiling._rand_conv_tile, dict(C=(1,), O=(16,), KH=(1,), KW=(1,), S=(1,), P=(0,), H=(3,),
                                                           W=(2,)),
            checked=tiling.conv2d_tile_out_rules(None, name="conv2d_tile_out_unchecked_cut"),
            size_guard="operands + result > TILE_LIMIT elements"),
    # guard dropped
    Rewrite("unguarded_conv2d_im2col", "conv2d_im2col without its dilation condition (im2col ignores dilation: "
            "issue 22's dilated convolution)",
            rules.conv2d_im2col_rules(certified=False, name="unguarded_conv2d_im2col"), rules._conv_lhs,
            rules._rand_conv, dict(C=(1,), O=(1,), KH=(2,), KW=(2,), S=(1, 2), P=(0,), H=(5,), W=(5,), D=(1, 2))),
    Rewrite("unguarded_maxpool_halve", "maxpool_halve without kh = sh (windows that do not tile the rows)",
            rules.maxpool_halve_rules(check_tiling=False), rules._pool_lhs, rules._rand_pool_rows, _POOL_SPACE),
    Rewrite("unguarded_maxpool_windows", "maxpool_windows without batch 1",
            rules.maxpool_windows_rules(check_batch=False), rules._pool_lhs, rules._rand_pool,
            dict(kh=(2,), kw=(2,), sh=(1,), sw=(2,), N=(1, 2), C=(1,), H=(3,), W=(4,))),
    Rewrite("unguarded_pool_pad_columns", "pool_pad_columns without the row-pool condition (window (k, 1), stride "
            "(k, 1))",
            rules.pool_pad_columns_rules(check_rows=False), rules._pool_lhs, rules._rand_pool_rows,
            dict(kh=(2,), kw=(1, 2), sh=(2,), sw=(1,), N=(1,), C=(1,), H=(4,), W=(3,))),
    Rewrite("unguarded_transpose_pair", "transpose_pair returning x without checking that p∘q is the identity",
            rules.transpose_pair_rules(check_identity=False), rules._transposes_lhs, rules._rand_perms,
            [dict(shape=(2, 2), p1=(1, 0), p2=(1, 0)), dict(shape=(2, 2), p1=(0, 1), p2=(1, 0))]),
    Rewrite("unguarded_add_bias", "add_bias without the condition on the bias shape (any b of rank r - 1)",
            rules.add_bias_rules(check_bias=False), rules._add_lhs, rules._rand_add,
            dict(N=(1,), C=(2,), H=(2,), rank2=(1,), b=("channel", "full"))),
    Rewrite("unguarded_lstm_unroll", "lstm_unroll without the zero initial state condition (h0, c0 dropped)",
            unroll.family(check_state=False, name="unguarded_lstm_unroll"), rules._lstm_lhs, unroll._rand_lstm,
            [dict(T=2, I=1, H=1, bias="input", state="ones", ints=True)], bit_exact=False, rtol=unroll.RTOL),
    Rewrite("unguarded_lstm_fold", "lstm_fold without the zero initial state condition (h0, c0 dropped)",
            rules.lstm_fold_rules(check_state=False, name="unguarded_lstm_fold"), rules._lstm_lhs, rules._rand_lstm,
            [dict(T=2, I=1, H=1, bias="input", state="ones", ints=True)], bit_exact=False, rtol=rules.LSTM_RTOL),
)
