"""Verdicts of checkers: values, not prints.

``Proved`` (for the stated scope: a bound, a shape, or all sizes), ``Counterexample`` (a concrete
trace that the simulator has replayed before the verdict is built) and ``Unknown`` (a timeout or a
solver giving up; never shown as proved). The CLI chooses the exit code: only ``Proved`` is 0.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Status(Enum):
    """The answer of one check inside a checker (a clause, a lemma, a goal, an engine's safety
    question): the claim holds, fails, or is undecided (timeout, solver gave up). Used end to end
    instead of 'sat'/'valid'/'safe' strings; :meth:`worst` combines answers (FAILS > UNKNOWN >
    HOLDS)."""
    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"

    @staticmethod
    def of_negation(smt_status: str) -> "Status":
        """The status of a claim from the solver's answer on its negation (unsat: it holds)."""
        return {"unsat": Status.HOLDS, "sat": Status.FAILS}.get(smt_status, Status.UNKNOWN)

    def worst(self, other: "Status") -> "Status":
        order = (Status.HOLDS, Status.UNKNOWN, Status.FAILS)
        return max(self, other, key=order.index)


@dataclass(frozen=True)
class _Verdict:
    method: str
    solver: str
    seconds: float
    detail: str = ""

    @property
    def ok(self) -> bool:
        return isinstance(self, Proved)

    @property
    def kind(self) -> str:
        return type(self).__name__.lower()

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["result"] = {"Proved": "proved", "Counterexample": "counterexample", "Unknown": "unknown"}[type(self).__name__]
        return d


@dataclass(frozen=True)
class Proved(_Verdict):
    scope: str = ""          # e.g. "bound 8", "16x64", "symbolic" (all sizes within the side conditions)
    covers: tuple = ()       # the claims proved (verify.scope: codegen-bytes, order, model-loops, ...)


@dataclass(frozen=True)
class Counterexample(_Verdict):
    """A violation the simulator has reproduced: building one without a replay is a bug here
    (``replayed`` must be True and ``trace`` must hold the replayed observation)."""
    trace: dict = field(default_factory=dict)   # inputs, observed values of the replay
    replayed: bool = False                       # the simulator reproduced the violation

    def __post_init__(self):
        if not self.replayed or not self.trace:
            from ila.errors import D2AInternalError
            raise D2AInternalError(f"a {self.method} counterexample must be replayed in the simulator before it "
                                   "is reported")


@dataclass(frozen=True)
class Unknown(_Verdict):
    reason: str = ""


Verdict = Proved | Counterexample | Unknown
