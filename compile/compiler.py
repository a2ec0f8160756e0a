"""Matching and extraction: which IR nodes run on which accelerator, on what certificate.

``compile_graph(graph, targets, matching=...)`` works on one egglog e-graph (:mod:`compile.egraph`,
the only module that touches egglog):

1. The graph's values go into the e-graph (equal operator, attributes and operands: one e-node),
   with their shapes and dtypes.
2. ``matching='flexible'``: the certified compiler-IR rewrites (:mod:`compile.rewrites`, only those
   with a current ``proved`` ledger certificate) run as egglog rules under egglog's scheduler until
   the e-graph saturates or a limit stops it (``max_iters`` iterations, ``time_limit`` seconds,
   ``max_terms`` e-nodes); :attr:`Compiled.stop_reason` says which. A rewrite's two sides are united
   only when their shapes and dtypes agree (otherwise :class:`compile.egraph.EGraphError` names it).
   ``matching='exact'`` skips this step (stop reason ``none``). A certified expansion
   (``Rewrite.expands``: the LSTM unroll) is not run in the e-graph; where it applies, the graph it
   gives (:func:`compile.expand.expand`) is compiled too, and the program that costs less is kept
   (:func:`compile.expand.program_cost`; :attr:`Compiled.rules_used` then names the expansion).
   The expanded graph is compiled only if the splice is checked equal to the certified rewrite
   (:func:`compile.expand.check_expansion`); otherwise :attr:`Compiled.expansions_refused` says why.
3. IR->accelerator: every e-node where a target mapping's registered IR pattern matches
   (e-matching over the e-graph's typed view; each pattern node is tested by
   :func:`compile.patterns.node_matches`, closed patterns: unstated attributes at their defaults,
   every operator and operand of the mapping's dtype) is instantiated (:func:`instantiate`: the
   mapping's shape at the match and the call artefact, :class:`compile.call.Call`, and the
   verified-only gate, :func:`compile.gate.decide_call`); each allowed match unions an accelerator-call e-node into the matched
   e-class.
   With on-demand certification (``certify`` other than ``none``), a match refused only for want
   of a certificate is offered as a pending call and certified only if extraction chooses it
   (:func:`_extract_certified`: a call that does not certify is refused and priced out, and
   extraction runs again), so the tiles of a large operator (:mod:`compile.rewrites.tiling`) are
   certified at the sizes extraction uses, not at every level of the tiling.
4. egglog's extractor picks one e-node per e-class with static costs (a host compute operator
   :data:`compile.egraph.HOST`, a data-movement operator ``MOVE``, a call ``CALL``, the compile-time
   ``add`` of two constants 0), which maximises the operators offloaded, as the paper's cost does;
   ``cost='data-movement'`` also charges each call its stores and loads (``set_cost``). The chosen
   e-nodes become the program (:mod:`compile.program`); an ``add`` of constants is evaluated now,
   with the IR's own semantics.

The result lists each offload (mapping, shape, the certificate it rests on, the rewrites that
produced the matched term) and each refused match with the gate's reason.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError
from compile.ir.graph import Graph, Node, Value, Var

MATCHING = ("exact", "flexible")
COSTS = ("offloads", "data-movement")


@dataclass
class Offload:
    """One accelerator call of the extracted program: the call (:class:`compile.call.Call`), the
    certificate about it, the rewrites that created the matched term's e-classes."""
    call: object
    certificate: dict
    chain: tuple = ()

    @property
    def mapping(self) -> str:
        return self.call.mapping.name

    @property
    def shape(self) -> str:
        return self.call.shape.text

    @property
    def node(self) -> Node:
        return self.call.term


@dataclass
class Compiled:
    matching: str
    offloads: list = field(default_factory=list)     # in the extracted program
    refused: list = field(default_factory=list)      # gate decisions that were refusals
    host_ops: int = 0                                # host compute operators left
    host_moves: int = 0                              # host data-movement operators (layout, im2col)
    rules_used: dict = field(default_factory=dict)   # rewrite -> applications (egglog's, in the e-graph)
    rules_missing: list = field(default_factory=list)  # rewrites without a current certificate
    terms: int = 0                                   # e-classes
    egraph_size: int = 0                             # e-nodes (calls included)
    seconds: dict = field(default_factory=dict)
    program: object = None                           # compile.program.Program (the extracted program)
    deferred: int = 0                                # uncertified subjects extraction never chose (not certified)
    graph: object = None                             # the source IR graph (its inputs name the program's)
    fused: list = field(default_factory=list)        # [(call step indices, gate Decision)]: chains fused
                                                     # on the chain mapping's certificate (compile.chains)
    stop_reason: str = "none"                        # saturation: saturated | time | e-nodes | iterations | none
    iterations: int = 0                              # egglog iterations run
    expansions_refused: list = field(default_factory=list)  # expansions whose splice check failed (why)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.offloads:
            out[o.mapping] = out.get(o.mapping, 0) + 1
        return dict(sorted(out.items()))

    def transfers(self) -> int:
        """Stores and loads between host and accelerators in the extracted program: a store and a
        load per call, one of each per fused chain (kept in the accelerator on its certificate)."""
        if self.program is None:
            return 0
        ch = self.chains()
        return 2 * (len(self.program.calls()) - sum(len(c) for c in ch) + len(ch))

    def chains(self) -> list[tuple]:
        """The fused chains (call step indices, first to last)."""
        return [c for c, _ in self.fused]

    def per_accelerator(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for m, n in self.counts().items():
            out[m.split(".")[0]] = out.get(m.split(".")[0], 0) + n
        return out


@dataclass
class Match:
    """One match of mapping ``mapping``'s pattern in the e-graph: the matched e-class, the e-classes
    bound to the pattern's ?variables (in order of first appearance), the matched subterm as IR
    (``node``: every attribute, shape and dtype; its operands the placeholder variables ``bound``),
    the bindings ``env`` (?variable -> placeholder, attribute variables) and ``chain`` (the rewrites
    that created the matched e-classes)."""
    mapping: str
    eclass: int
    operands: tuple
    node: Node
    bound: tuple
    env: dict
    chain: tuple = ()


@dataclass
class CallPlan:
    """An allowed call: the match, the call (:class:`compile.call.Call`) and the gate's decision."""
    match: Match
    call: object
    decision: object


def _certified_rules(certify: str, budget: float, ledger_path, out: Compiled, graph: Graph, names=None):
    """The rewrites (of ``names``; None: all) with a current ``proved`` certificate (obtained on
    demand with ``certify``); a rule family none of whose sizes occurs in ``graph`` (no LSTM of a
    length it unrolls) can match nothing there, so it is neither certified nor used."""
    from compile.rewrites import registry
    from compile.rewrites.base import RuleFamily, rules_for
    from verify import ledger
    known = registry()
    if names is not None:
        bad = [n for n in names if n not in known]
        if bad:
            raise CompileError(f"unknown rewrite(s) {bad}; known: {', '.join(known)}")
        known = {n: rw for n, rw in known.items() if n in names}
    entries = ledger.current(ledger.load(ledger_path))
    ok = {e["mapping"][len("rewrite."):] for e in entries if e["mapping"].startswith("rewrite.") and
          e["result"] == "proved"}
    rules = []
    for name, rw in known.items():
        if isinstance(rw.rules, RuleFamily) and not rules_for(rw.rules, graph.outputs):
            continue
        if name not in ok and certify != "none":
            from compile.rewrites.certify import certify as run_cert, record
            cert = run_cert(rw, timeout=budget)
            record(cert, path=ledger_path)
            if cert.result == "proved":
                ok.add(name)
        (rules if name in ok else out.rules_missing).append(rw if name in ok else name)
    return rules


def selected(targets, names: list[str]) -> set[str]:
    """The mappings among ``names`` (dotted ``accelerator.operation``) that ``targets`` select: an
    accelerator name selects all of its mappings, unless mapping names of that accelerator are also
    given, which select only themselves. CompileError for an empty or unknown target."""
    accels = {n.split(".")[0] for n in names}
    targets = tuple(targets)
    bad = [t for t in targets if t not in accels and t not in names]
    if bad or not targets:
        raise CompileError(f"unknown target accelerator(s) or mapping(s) {bad or list(targets)}; known accelerators: "
                           f"{', '.join(sorted(accels))}; mappings: python -m verify.mapping --list")
    named = {t for t in targets if t in names}
    pinned = {t.split(".")[0] for t in named}
    return named | {n for n in names if n.split(".")[0] in targets and n.split(".")[0] not in pinned}


def default_targets() -> tuple[str, ...]:
    """Every accelerator that registered mappings name (the registry decides, not the compiler)."""
    from mappings.registry import names
    return tuple(sorted({n.split(".")[0] for n in names()}))


def compile_graph(graph: Graph, targets=None, *, matching: str = "exact",
                  require: str = "any", certify: str = "none", budget: float = 60.0, ledger_path=None,
                  max_iters: int = 20, max_terms: int = 50_000, time_limit: float = 5.0,
                  cost: str = "offloads", rewrites=None) -> Compiled:
    """Offload ``graph`` onto ``targets``: accelerator names (``flexasr``: all its mappings) or
    mapping names (``hlscnn.conv2d_w8``: of that accelerator, only the named mappings; a design
    choice such as HLSCNN's original 8-bit-weight design, :func:`selected`). ``cost``: ``offloads``
    (the paper's: maximise accelerator invocations) or ``data-movement`` (each call also pays
    :data:`compile.egraph.TRANSFER` per store of its operands and load of its result, except a call
    whose one operand's e-class holds a call it can chain with, :mod:`compile.chains`: the data
    stays in the accelerator). Saturation limits: ``max_iters`` egglog iterations, ``time_limit``
    seconds, ``max_terms`` e-nodes. With flexible matching, a certified expansion that applies makes
    a second compilation of the expanded graph; the cheaper program is returned (``seconds`` sums
    both). ``rewrites``: the names of the compiler-IR rewrites flexible matching may use (default:
    every registered one). Raises CompileError for bad options, EGraphError (a CompileError) for a rewrite whose two
    sides disagree on shape or dtype."""
    if cost not in COSTS:
        raise CompileError(f"cost must be one of {COSTS} (got {cost!r})")
    targets = default_targets() if targets is None else targets
    if matching not in MATCHING:
        raise CompileError(f"matching must be one of {MATCHING} (got {matching!r})")
    from compile.patterns import mapping_patterns
    pats = mapping_patterns()
    chosen = selected(targets, list(pats))
    pats = {n: p for n, p in pats.items() if n in chosen}
    out = Compiled(matching)
    t0 = time.perf_counter()
    specs, expansions = (), []
    if matching == "flexible":
        from compile.rewrites.base import rules_for
        rules = _certified_rules(certify, budget, ledger_path, out, graph, rewrites)
        out.seconds["certify-rules"] = time.perf_counter() - t0
        specs = tuple(s for rw in rules if not rw.expands for s in rules_for(rw.rules, graph.outputs))
        expansions = [rw for rw in rules if rw.expands]
    opts = dict(pats=pats, require=require, certify=certify, budget=budget, ledger_path=ledger_path,
                max_iters=max_iters, time_limit=time_limit, max_terms=max_terms, cost=cost)
    _compile_egraph(graph, specs, out, **opts)
    from compile.expand import check_expansion, expand, program_cost
    exp = expand(graph, expansions)
    why = check_expansion(graph, exp) if exp.applied else None
    if why is not None:           # the splice is not the certified rewrite: the expansion is dropped
        out.expansions_refused.append(f"{', '.join(exp.applied)}: {why}")
    elif exp.applied:             # the expanded graph as an alternative program, kept if it costs less
        alt = Compiled(matching, rules_missing=list(out.rules_missing))
        _compile_egraph(exp.graph, specs, alt, **opts)
        alt.rules_used = {**exp.applied, **alt.rules_used}
        keep = alt if program_cost(alt.program, cost, alt.transfers()) < \
            program_cost(out.program, cost, out.transfers()) else out
        keep.seconds = {k: out.seconds.get(k, 0.0) + (alt.seconds.get(k, 0.0) if k != "certify-rules" else 0.0)
                        for k in {**out.seconds, **alt.seconds}}
        out = keep
    return out


def _compile_egraph(graph: Graph, specs: tuple, out: Compiled, *, pats, require, certify, budget, ledger_path,
                    max_iters, time_limit, max_terms, cost) -> Compiled:
    """Steps 1 and 3-4 of the module docstring on ``graph`` with the rules ``specs`` (step 2),
    filling ``out``."""
    from compile.egraph import Session
    t0 = time.perf_counter()
    with Session(specs) as s:
        s.add_graph(graph.outputs)
        sat = s.saturate(max_iters, time_limit, max_terms)
        view = s.view()
        out.stop_reason, out.iterations = sat["stop"], sat["iterations"]
        out.rules_used = dict(view.applied)
        out.terms = len(view.classes)
        out.seconds["rewrite"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        plans = instantiate(match_patterns(view, pats), require=require, certify=certify, budget=budget,
                            ledger_path=ledger_path, out=out, defer=certify != "none")
        ids = s.add_calls([(p.match.eclass, p.match.operands, _call_cost(p, plans, cost)) for p in plans])
        out.egraph_size = view.enodes + len(ids)
        out.seconds["match"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        choice, roots = _extract_certified(s, dict(zip(ids, plans)), require=require, certify=certify,
                                           budget=budget, ledger_path=ledger_path, out=out)
    out.program = _program(view, choice, roots, dict(zip(ids, plans)))
    for st in out.program.calls():
        out.offloads.append(Offload(st.call, st.certificate, st.chain))
    out.host_ops, out.host_moves = _host_counts(out.program)
    out.graph = graph
    from compile.chains import certified_chains
    out.fused, refused = certified_chains(out.program, require=require, certify=certify, budget=budget,
                                          path=ledger_path)
    out.refused.extend(refused)
    out.seconds["extract"] = time.perf_counter() - t2
    return out


# ----------------------------------------------------------------------------- e-matching
def match_patterns(view, pats: dict) -> list[Match]:
    """Every match of the patterns ``pats`` (mapping -> :class:`compile.patterns.Pattern`) in the
    e-graph ``view`` (a :class:`compile.egraph.View`), one per (mapping, e-class, operand
    e-classes)."""
    from compile.patterns import variables
    out, seen = [], set()
    for name, pat in pats.items():
        names = variables(pat)
        for c, enode in view.nodes(pat.op):
            for env, tree, classes in _ematch(view, pat, c, enode):
                operands = tuple(env[v] for v in names)
                key = (name, c, operands)
                if key in seen:
                    continue
                seen.add(key)
                holders = _placeholders(view, operands, names)
                node = _ir_tree(view, tree, dict(zip(names, holders)))
                bindings = {k: v for k, v in env.items() if not isinstance(k, str)}
                bindings.update(zip(names, holders))
                out.append(Match(name, c, operands, node, tuple(holders), bindings, _chain(view, classes)))
    return out


def _ematch(view, pat, c, enode):
    """Matches of operator pattern ``pat`` at e-node ``enode`` of e-class ``c``: (env, tree, matched
    e-classes) with env ?variable -> e-class (and attribute variables), tree = (c, enode,
    [child trees or ?variable names]). Every operator and operand must have the pattern's dtype."""
    from compile.patterns import node_matches
    dtype = pat.dtype

    def go(p, c, e, env):          # depth first over the e-nodes of the operand e-classes
        env = dict(env)
        if not node_matches(p, _shallow(view, c, e), env, dtype):
            return []
        options = [(env, [], [c])]
        for sub, child in zip(p.args, e.children):
            nxt = []
            for env_, kids, classes in options:
                if isinstance(sub, str):
                    if (dtype is not None and view.classes[child].dtype != dtype) or env_.get(sub, child) != child:
                        continue
                    nxt.append(({**env_, sub: child}, kids + [sub], classes))
                    continue
                for e2 in view.classes[child].nodes:
                    if e2.op == sub.op:
                        nxt += [(env2, kids + [tree2], classes + classes2)
                                for env2, tree2, classes2 in go(sub, child, e2, env_)]
            options = nxt
        return [(env_, (c, e, kids), classes) for env_, kids, classes in options]
    return go(pat, c, enode, {}) if enode.op == pat.op else []


def _shallow(view, c, e) -> Node:
    """E-node ``e`` of e-class ``c`` as an IR node over placeholder operands (for the pattern test)."""
    args = tuple(Var(view.classes[o].shape or (), view.classes[o].dtype or "", name=f"%{o}") for o in e.children)
    cls = view.classes[c]
    return Node(cls.shape or (), cls.dtype or "", "", op=e.op, args=args, attrs=e.attr_dict)


def _placeholders(view, operands: tuple, names: list) -> list[Var]:
    out, by_class = [], {}
    for k, (c, v) in enumerate(zip(operands, names)):
        if c not in by_class:
            cls = view.classes[c]
            by_class[c] = Var(tuple(cls.shape), cls.dtype, _source(view, c), name=f"%{len(by_class)}")
        out.append(by_class[c])
    return out


def _ir_tree(view, tree, holders: dict) -> Node:
    """The matched subterm as IR nodes (built directly: shapes and dtypes are the e-classes')."""
    c, e, kids = tree
    args = tuple(holders[k] if isinstance(k, str) else _ir_tree(view, k, holders) for k in kids)
    cls = view.classes[c]
    return Node(tuple(cls.shape), cls.dtype, _source(view, c), op=e.op, args=args, attrs=dict(e.attr_dict))


def _source(view, c) -> str:
    o = view.classes[c].origin
    return getattr(o, "source", "") if o is not None else ""


def _chain(view, classes: list) -> tuple:
    out = []
    for c in reversed(classes):
        for r in view.classes[c].rules:
            if r not in out:
                out.append(r)
    return tuple(out)


# ----------------------------------------------------------------------------- instantiating calls
def instantiate(matches: list[Match], *, require: str, certify: str, budget: float, ledger_path,
                out: Compiled, defer: bool = False) -> list[CallPlan]:
    """The calls to offer extraction: each match instantiated as a call (:func:`compile.call.at_match`:
    the mapping's adapter gives its shape; a match the adapter refuses is dropped) and allowed by the
    verified-only gate (:func:`compile.gate.decide_call`, once per subject) on a certificate whose
    subject is the call's own (checked here again: a certificate about another subject is refused);
    refusals go to ``out.refused``. ``defer``: no certification now; a call refused only for want of
    a certificate is offered as pending (its decision's ``pending`` set), and
    :func:`_extract_certified` certifies the pending calls extraction chooses."""
    from compile.call import at_match
    from compile.patterns import mapping_patterns, variables
    from mappings.registry import get
    decisions: dict = {}
    plans = []
    order = {n: variables(p) for n, p in mapping_patterns(sorted({m.mapping for m in matches})).items()}
    for m in matches:
        call = at_match(get(m.mapping), m.node, m.env, order[m.mapping])
        if call is None:
            continue
        key = call.subject.digest
        if key not in decisions:
            d = decisions[key] = _gated(call, require=require, certify="none" if defer else certify, budget=budget,
                                        ledger_path=ledger_path)
            if not d.allowed and not (defer and d.pending):
                out.refused.append(d)
        d = decisions[key]
        if d.allowed or (defer and d.pending):
            plans.append(CallPlan(m, call, d))        # a match of a decided subject keeps its own call
    return plans


def _gated(call, *, require: str, certify: str, budget: float, ledger_path):
    """The gate's decision on ``call`` (:func:`compile.gate.decide_call`), refused when the
    certificate it offers is about another subject than the call's."""
    from compile import gate
    d = gate.decide_call(call, require=require, certify=certify, budget=budget, path=ledger_path)
    if d.allowed and (d.certificate or {}).get("subject_digest") != call.subject.digest:
        d = gate.CallDecision(call, False, reason=f"the gate offered a certificate about another subject "
                              f"({(d.certificate or {}).get('subject_digest')}); refused")
    return d


FORBIDDEN = 10 ** 8     # the extraction cost of a call whose deferred certification failed (never chosen)


def _extract_certified(s, calls: dict, *, require: str, certify: str, budget: float, ledger_path,
                       out: Compiled) -> tuple:
    """Extraction with deferred certification: extract; certify (:func:`compile.gate.decide_call`,
    once per subject) the pending calls the extraction chose; a call that does not certify is refused
    (``out.refused``) and priced out of the e-graph with every call of its subject, and extraction
    runs again, until every chosen call is allowed. Calls never chosen are not certified
    (``out.deferred`` counts their subjects). Returns egglog's ``(choice, roots)``."""
    while True:
        choice, roots = s.extract()
        chosen = {e.value for e in choice.values() if e.op == "call"}
        todo = {calls[i].call.subject.digest: calls[i] for i in chosen if calls[i].decision.pending}
        if not todo:
            break
        failed = set()
        for key, p in todo.items():
            d = _gated(p.call, require=require, certify=certify, budget=budget, ledger_path=ledger_path)
            for q in calls.values():
                if q.call.subject.digest == key:
                    q.decision = d
            if not d.allowed:
                out.refused.append(d)
                failed.add(key)
        if failed:
            s.price_calls([i for i, q in calls.items() if q.call.subject.digest in failed], FORBIDDEN)
    out.deferred = len({q.call.subject.digest for q in calls.values() if q.decision.pending})
    return choice, roots


def _call_cost(plan: CallPlan, plans: list[CallPlan], cost: str) -> int:
    """A call e-node's extraction cost: CALL, plus with ``data-movement`` a store and a load unless its
    one operand's e-class holds a call it can chain with (that call's load and this store cancel)."""
    from compile.egraph import CALL, TRANSFER
    if cost != "data-movement":
        return CALL
    from compile.chains import chainable
    m = plan.match
    if len(m.operands) == 1 and any(q.match.eclass == m.operands[0] and chainable(q.match.mapping, m.mapping)
                                    for q in plans):
        return CALL
    return CALL + 2 * TRANSFER


# ----------------------------------------------------------------------------- the program
def _program(view, choice: dict, roots: tuple, calls: dict):
    """The extracted program (:mod:`compile.program`) from egglog's choice of one e-node per e-class."""
    from compile.egraph import enode_to_ir
    from compile.program import build
    values: dict[int, Value] = {}
    plan: dict = {}
    order = _post_order(choice, roots, view)
    for c in order:
        e = choice[c]
        if e.op == "call":
            p = calls[e.value]
            m = p.match
            plan[c] = ("call", (p.call, p.decision.certificate, m.chain), list(e.children))
            values[c] = m.node
            continue
        if view.classes[c].const and e.op == "add":     # an add of constants: evaluated now
            v = _fold(view, choice, c)
            plan[c] = ("term", v, [])
            values[c] = v
            continue
        if e in view.own:
            v = view.own[e]
        elif e.op == "leaf":
            v = view.own[e]
        else:
            v = enode_to_ir(e, [values[o] for o in e.children], source=_source(view, c))
        plan[c] = ("term", v, list(e.children) if e.op not in ("leaf", "zeros") else [])
        values[c] = v
    return build(plan, list(roots))


def _post_order(choice: dict, roots: tuple, view) -> list:
    """The e-classes the choice reaches from the roots, operands first (iterative); the operands of a
    folded constant ``add`` are not visited."""
    out, seen, stack = [], set(), [(r, False) for r in reversed(roots)]
    while stack:
        c, done = stack.pop()
        if done:
            out.append(c)
            continue
        if c in seen:
            continue
        seen.add(c)
        stack.append((c, True))
        e = choice[c]
        if not (view.classes[c].const and e.op == "add"):
            stack.extend((o, False) for o in reversed(e.children) if o not in seen)
    return out


def _fold(view, choice: dict, c: int):
    """The constant value of e-class ``c`` (its chosen e-nodes evaluated with the IR's semantics)."""
    from compile.egraph import enode_to_ir
    from compile.ir import ops
    from compile.ir.graph import Const, const
    vals: dict[int, np.ndarray] = {}
    stack = [(c, False)]
    while stack:
        k, done = stack.pop()
        if k in vals:
            continue
        e = choice.get(k)
        if e is None or e.op == "call" or (e.op == "leaf" and e not in view.own) or \
                not all(view.classes[o].const for o in e.children):
            e = _const_enode(view, k)
        if e.op == "leaf":
            vals[k] = np.asarray(view.own[e].value)
            continue
        if e.op == "zeros":
            vals[k] = np.asarray(enode_to_ir(e, []).value)
            continue
        if not done:
            stack.append((k, True))
            stack.extend((o, False) for o in e.children if o not in vals)
            continue
        vals[k] = np.asarray(ops.evaluate(e.op, [vals[o] for o in e.children], e.attr_dict))
    out = const(vals[c], source=_source(view, c))
    assert isinstance(out, Const)
    if tuple(out.shape) != tuple(view.classes[c].shape) or out.dtype != view.classes[c].dtype:
        raise CompileError(f"constant folding gave {out.dtype}{tuple(out.shape)}, the e-class is "
                           f"{view.classes[c].dtype}{tuple(view.classes[c].shape)}")
    return out


def _const_enode(view, c: int):
    """An e-node of constant e-class ``c`` whose operands are all constant (for folding operands the
    extraction did not choose)."""
    for e in view.classes[c].nodes:
        if e.op in ("leaf", "zeros") and (e.op != "leaf" or e in view.own):
            return e
        if e.op not in ("call", "leaf", "zeros") and all(view.classes[o].const for o in e.children):
            return e
    raise CompileError(f"e-class {c} is marked constant but has no constant e-node")


def _host_counts(program) -> tuple[int, int]:
    from compile.rewrites.lower import DATA_MOVEMENT
    host = [s for s in program.steps if s.kind == "host"]
    moves = sum(1 for s in host if s.value.op in DATA_MOVEMENT)
    return len(host) - moves, moves


