"""Simulation-based validation of mappings: ``--method sim`` and ``--method fuzz``.

``sim``: N random inputs (seeded) at the mapping's default shape (or a given one); each runs end
to end through the accelerator's assembler and ILA simulator and through the IR reference; the
Frobenius relative error ‖ref − acc‖_F / ‖ref‖_F is summarised by mean and standard deviation;
the check passes when every error is within the mapping's tolerance at the input's shape
(``Mapping.tolerance_at``: a number, or a function of the shape for mappings whose numerics err
more at some shapes).

Both methods check every input against the mapping's data conditions before running it
(``Mapping.check_data``): inputs violating one raise MappingError naming the condition and the
measured value (a generator producing such data is a bug of the mapping, not a failed check).

``fuzz``: hypothesis over shapes satisfying the side conditions and over data, including edge
values (zeros, negative zero, saturating magnitudes) from the mapping; a failure reports the
minimal shrunk example and the command that replays it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from mappings.base import Mapping, format_shape, frobenius_relative_error


@dataclass
class SimReport:
    """The errors of one sim or fuzz run; ``tolerances[k]`` is the mapping's tolerance at the shape
    of input k (fractions: 0.05 = 5 %)."""
    mapping: str
    method: str
    shape: str
    seed: int
    errors: list[float] = field(default_factory=list)
    tolerances: list[float] = field(default_factory=list)
    seconds: float = 0.0
    failure: str = ""

    def add(self, error: float, tolerance: float) -> None:
        self.errors.append(float(error))
        self.tolerances.append(float(tolerance))

    @property
    def passed(self) -> bool:
        return not self.failure and all(e <= t for e, t in zip(self.errors, self.tolerances))

    @property
    def tolerance(self) -> float | None:
        """The tolerance when it is the same for every input (always for sim), else None."""
        return self.tolerances[0] if self.tolerances and len(set(self.tolerances)) == 1 else None

    @property
    def worst_ratio(self) -> float:
        """max over the inputs of error / tolerance (1 = at the tolerance; inf for an inexact result
        of an exact mapping; nan without inputs)."""
        if not self.errors:
            return float("nan")
        return max((e / t) if t > 0 else (0.0 if e == 0 else float("inf"))
                   for e, t in zip(self.errors, self.tolerances))

    @property
    def mean(self) -> float:
        return float(np.mean(self.errors)) if self.errors else float("nan")

    @property
    def std(self) -> float:
        return float(np.std(self.errors)) if self.errors else float("nan")

    def to_json(self) -> dict:
        return {"mapping": self.mapping, "method": self.method, "shape": self.shape, "seed": self.seed,
                "samples": len(self.errors), "mean_error": self.mean, "std_error": self.std,
                "max_error": max(self.errors) if self.errors else None, "tolerance": self.tolerance,
                "tolerance_range": [min(self.tolerances), max(self.tolerances)] if self.tolerances else None,
                "max_error_over_tolerance": self.worst_ratio if self.errors else None,
                "seconds": self.seconds, "passed": self.passed, "failure": self.failure}


def run_sim(m: Mapping, *, shape: dict | None = None, samples: int = 100, seed: int = 0) -> SimReport:
    """``samples`` seeded random inputs at ``shape`` (default: the mapping's), each against the
    tolerance at that shape. Raises MappingError for a shape violating a side condition or an input
    violating a data condition (naming it)."""
    shape = dict(shape or m.default_shape)
    m.check_shape(shape)
    tol = m.tolerance_at(shape)
    rng = np.random.default_rng(seed)
    rep = SimReport(m.name, "sim", format_shape(shape), seed)
    t0 = time.perf_counter()
    for _ in range(samples):
        inputs = m.random_inputs(shape, rng)
        m.check_data(shape, inputs)
        rep.add(frobenius_relative_error(m.reference(shape, inputs), m.run_accelerator(shape, inputs)), tol)
    rep.seconds = time.perf_counter() - t0
    return rep


def run_fuzz(m: Mapping, *, seed: int = 0, examples: int = 40) -> SimReport:
    """Hypothesis over the mapping's shapes and data (``examples`` examples, seeded), each input
    against the tolerance at its shape; a failure is reported in ``SimReport.failure`` (the shrunk
    example and the replay command). Raises MappingError for an input violating a data condition."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    rep = SimReport(m.name, "fuzz", "hypothesis", seed)
    shapes = m.shape_strategy() if m.shape_strategy else st.just(dict(m.default_shape))
    t0 = time.perf_counter()

    @hseed(seed)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(shapes, st.integers(0, 2**32 - 1), st.integers(0, 3))
    def prop(shape, data_seed, edge):
        m.check_shape(shape)
        rng = np.random.default_rng(data_seed)
        inputs = m.random_inputs(shape, rng)
        if edge and m.edge_inputs is not None:
            cands = m.edge_inputs(shape, rng)
            inputs = cands[(edge - 1) % len(cands)]
        m.check_data(shape, inputs)
        tol = m.tolerance_at(shape)
        err = frobenius_relative_error(m.reference(shape, inputs), m.run_accelerator(shape, inputs))
        rep.add(err, tol)
        assert err <= tol, (f"shape {format_shape(shape)}, data seed {data_seed}, edge case {edge}: "
                            f"Frobenius relative error {err:.4g} > tolerance {tol:.4g} at this shape")

    try:
        prop()
    except AssertionError as exc:
        rep.failure = (f"{exc}\n  minimal example above; replay with: python -m verify.mapping {m.name} "
                       f"--method fuzz --seed {seed}")
    rep.seconds = time.perf_counter() - t0
    return rep
