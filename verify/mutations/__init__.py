"""Seeded bugs as data, applied by the verifier for mutation testing (a verifier's worth is what it
refutes).

A :class:`Mutation` names one bug in one layer of the trusted path (``verify.scope``: the code
generator's bytes or addresses, the command order, the configuration fields, the model's loops,
the read-back) and the patches that make it: each wraps one attribute of one module (or one entry
of a module-level dict) for the duration of :func:`applied`. Production code knows nothing of
them. Model patches rebuild the model (``rebuild``: caches to clear on entry and exit), so a proof
setup built inside the context sees the buggy model and one built outside it the real one; every
memo of code-computed values (:func:`ila.memo.clear_all`) is emptied on entry and exit too, so no
memo answers a mutant with the original's values or the reverse.

Every mutation says which layer (claim) of a proof it is seeded in (``layer``);
``benchmarks/mutation_maxpool`` and ``benchmarks/proofs`` print the kill table. One module per
accelerator family holds the bugs (``verify/mutations/layer_reduce.py``, ...); each mapping names
the function returning its own (``mappings.base.Mapping.mutations``).
"""
from __future__ import annotations

import importlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable

from ila import memo
from mappings.base import MappingError


@dataclass(frozen=True)
class Patch:
    module: str
    attr: str
    wrap: Callable[[Any], Any]          # the original -> its replacement
    key: Any = None                     # patch ``module.attr[key]`` instead of ``module.attr``


@dataclass(frozen=True)
class Mutation:
    name: str
    layer: str                          # codegen-bytes | order | configuration-fields | model-loops | read-back
    description: str
    patches: tuple[Patch, ...]
    rebuild: tuple[str, ...] = ()       # "module:function" lru caches to clear (models built from patched code)


def _clear(rebuild):
    for spec in rebuild:
        mod, fn = spec.split(":")
        getattr(importlib.import_module(mod), fn).cache_clear()


@contextmanager
def applied(mutation: Mutation | None):
    """Apply ``mutation``'s patches (None: nothing) for the duration of the block."""
    if mutation is None:
        yield
        return
    saved = []
    try:
        for p in mutation.patches:
            mod = importlib.import_module(p.module)
            if p.key is None:
                orig = getattr(mod, p.attr)
                setattr(mod, p.attr, p.wrap(orig))
            else:
                table = getattr(mod, p.attr)
                orig = table[p.key]
                table[p.key] = p.wrap(orig)
            saved.append((mod, p, orig))
        _clear(mutation.rebuild)
        memo.clear_all()
        yield
    finally:
        for mod, p, orig in reversed(saved):
            if p.key is None:
                setattr(mod, p.attr, orig)
            else:
                getattr(mod, p.attr)[p.key] = orig
        _clear(mutation.rebuild)
        memo.clear_all()


def _table(name: str) -> dict[str, Mutation]:
    """The seeded bugs of mapping ``name``: those its declaration names (``Mapping.mutations``;
    {} for a mapping without seeded bugs)."""
    from mappings.registry import MODULES, get
    spec = get(name).mutations if name in MODULES else None
    if spec is None:
        return {}
    mod, fn = spec.split(":")
    return getattr(importlib.import_module(mod), fn)()


def names(mapping) -> dict[str, str]:
    """The seeded bugs of ``mapping``: name -> description."""
    return {k: m.description for k, m in _table(mapping.name).items()}


def layers(mapping) -> dict[str, str]:
    """The seeded bugs of ``mapping``: name -> the layer (claim) it is seeded in."""
    return {k: m.layer for k, m in _table(mapping.name).items()}


def get(mapping, name: str | None) -> Mutation | None:
    """The registered Mutation ``name`` of ``mapping`` (None for None); MappingError naming the
    known bugs for an unknown one."""
    if name is None:
        return None
    t = _table(mapping.name)
    if name not in t:
        raise MappingError(f"{mapping.name}: unknown mutation {name!r}; known: {sorted(t)}")
    return t[name]


def check(mapping, shape, mutation: str | None, method: str = "bmc", **kw):
    """Run ``method`` ('bmc' or 'chc') on ``mapping`` at ``shape`` (None: all sizes, CHC only)
    with seeded bug ``mutation`` applied for the whole check, replay included. Returns the
    verdict; keyword arguments go to the checker."""
    from verify.bmc import check_bmc
    from verify.chc import check_chc
    if method not in ("bmc", "chc"):
        raise MappingError(f"unknown method {method!r}; use 'bmc' or 'chc'")
    if mapping.proof is None:
        raise MappingError(f"{mapping.name} has no proof setup")
    m = get(mapping, mutation)
    with applied(m):
        if method == "chc":
            return check_chc(mapping, shape, **kw)
        return check_bmc(mapping.proof.bmc(shape), **kw)
