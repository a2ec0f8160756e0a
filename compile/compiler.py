"""Matching and extraction: which IR nodes run on which accelerator, on what certificate.

``compile_graph(graph, targets, matching=...)``:

1. The IR terms are interned structurally (equal operator, attributes and operands: one term).
2. ``matching='flexible'``: the certified compiler-IR rewrites (:mod:`compile.rewrites`, only
   those with a current ``proved`` ledger certificate) are applied to every term, and to the terms
   they create, for up to ``max_iters`` rounds, ``max_terms`` terms or ``time_limit`` seconds;
   each application is an equality ``lhs = rhs``.
3. IR→accelerator: every term where a target mapping's registered IR pattern matches
   (:mod:`compile.patterns`) and the verified-only gate (:mod:`compile.gate`) allows the mapping
   at the match's shape (:mod:`compile.offload`) is equal to an accelerator call.
4. The terms and equalities go into an egglog e-graph (:mod:`compile.egraph`: congruence closure);
   extraction picks, per e-class, the cheapest e-node by tree cost over egglog's serialized e-graph
   (a host operator costs 100, an accelerator call 1, operands and leaves 0), which maximises the
   number of operators offloaded, as the paper's cost does. ``matching='exact'`` skips step 2.

The result lists each offload (mapping, shape, the certificate it rests on, the chain of rewrites
that produced the matched term) and each refused match with the gate's reason.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from compile.errors import CompileError
from compile.ir.graph import Graph, Node, Value, topological

MATCHING = ("exact", "flexible")
COSTS = ("offloads", "data-movement")
TRANSFER = 10          # data-movement cost: one store or one load of a call (a host operator costs 100)


@dataclass
class Offload:
    mapping: str
    shape: str
    node: Node
    certificate: dict
    chain: tuple = ()                 # rewrites that produced the matched term, first to last


@dataclass
class Compiled:
    matching: str
    offloads: list = field(default_factory=list)     # in the extracted program
    refused: list = field(default_factory=list)      # gate decisions that were refusals
    host_ops: int = 0                                # host compute operators left
    host_moves: int = 0                              # host data-movement operators (layout, im2col)
    rules_used: dict = field(default_factory=dict)   # rewrite -> applications
    rules_missing: list = field(default_factory=list)  # rewrites without a current certificate
    terms: int = 0
    egraph_size: int = 0
    seconds: dict = field(default_factory=dict)
    program: object = None                           # compile.program.Program (the extracted program)
    graph: object = None                             # the source IR graph (its inputs name the program's)
    fused: list = field(default_factory=list)        # [(call step indices, gate Decision)]: chains fused
                                                     # on the chain mapping's certificate (compile.chains)

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


class _Interner:
    """Structural hash-consing of IR values; remembers how each new term was produced."""

    def __init__(self):
        self.by_key: dict = {}
        self.terms: list[Value] = []              # topological: operands before users
        self.origin: dict[int, tuple] = {}       # uid -> (rule, source uid)

    @staticmethod
    def _key(v: Value):
        """The structural key of ``v`` whose operands are already canonical."""
        if isinstance(v, Node):
            return (v.op, repr(sorted(v.attrs.items())), tuple(v.shape), v.dtype, tuple(a.uid for a in v.args))
        return ("leaf", v.uid)

    def add(self, root: Value) -> tuple[Value, list[Value]]:
        """The canonical value of ``root`` and the terms that are new (iterative)."""
        new: list[Value] = []
        canon: dict[int, Value] = {}
        for v in topological([root], nodes_only=False):
            w = v
            if isinstance(v, Node):
                args = tuple(canon[a.uid] for a in v.args)
                if any(a is not b for a, b in zip(args, v.args)):
                    w = Node(v.shape, v.dtype, v.source, op=v.op, args=args, attrs=v.attrs)
            k = self._key(w)
            if k not in self.by_key:
                self.by_key[k] = w
                self.terms.append(w)
                new.append(w)
            canon[v.uid] = self.by_key[k]
        return canon[root.uid], new


def _certified_rules(certify: str, budget: float, ledger_path, out: Compiled):
    from compile.rewrites import registry
    from verify import ledger
    entries = ledger.current(ledger.load(ledger_path))
    ok = {e["mapping"][len("rewrite."):] for e in entries if e["mapping"].startswith("rewrite.") and
          e["result"] == "proved"}
    rules = []
    for name, rw in registry().items():
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


def compile_graph(graph: Graph, targets=("flexasr", "hlscnn", "vta"), *, matching: str = "exact",
                  require: str = "any", certify: str = "none", budget: float = 60.0, ledger_path=None,
                  max_iters: int = 6, max_terms: int = 50_000, time_limit: float = 5.0,
                  cost: str = "offloads") -> Compiled:
    """Offload ``graph`` onto ``targets``: accelerator names (``flexasr``: all its mappings) or
    mapping names (``hlscnn.conv2d_w8``: of that accelerator, only the named mappings; a design
    choice such as HLSCNN's original 8-bit-weight design, :func:`selected`). ``cost``: ``offloads`` (the paper's:
    maximise accelerator invocations) or ``data-movement`` (each call also pays for storing its
    operands and loading its result, :data:`TRANSFER` each, except between the calls of a chain
    that keeps its data in the accelerator, :mod:`compile.chains`). Raises CompileError for bad
    options."""
    if cost not in COSTS:
        raise CompileError(f"cost must be one of {COSTS} (got {cost!r})")
    from compile import gate
    from compile.offload import shape_of
    from compile.patterns import mapping_patterns, match, variables
    from mappings.base import format_shape
    if matching not in MATCHING:
        raise CompileError(f"matching must be one of {MATCHING} (got {matching!r})")
    chosen = selected(targets, list(mapping_patterns()))
    out = Compiled(matching)
    t0 = time.perf_counter()
    it = _Interner()
    roots = [it.add(o)[0] for o in graph.outputs]
    unions: list[tuple[Value, object]] = []
    if matching == "flexible":
        rules = _certified_rules(certify, budget, ledger_path, out)
        out.seconds["certify-rules"] = time.perf_counter() - t0
        t0 = time.perf_counter()                   # the limits bound the rewriting itself
        frontier = list(it.terms)
        for _ in range(max_iters):
            nxt = []
            for v in frontier:
                if not isinstance(v, Node):
                    continue
                for rw in rules:
                    rhs = rw.apply(v)
                    if rhs is None:
                        continue
                    canon, new = it.add(rhs)
                    if canon is v:
                        continue
                    unions.append((v, canon))
                    out.rules_used[rw.name] = out.rules_used.get(rw.name, 0) + 1
                    for n in new:
                        it.origin.setdefault(n.uid, (rw.name, v.uid))
                        if not n.source:
                            n.source = v.source          # a rewritten term keeps its origin's location
                    nxt.extend(new)
                if len(it.terms) > max_terms or time.perf_counter() - t0 > time_limit:
                    break
            frontier = nxt
            if not frontier or len(it.terms) > max_terms or time.perf_counter() - t0 > time_limit:
                break
    out.seconds["rewrite"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    pats = {n: p for n, p in mapping_patterns().items() if n in chosen}
    decisions: dict = {}
    calls: dict[int, list] = {}
    for v in list(it.terms):
        if not isinstance(v, Node):
            continue
        for name, pat in pats.items():
            env = match(pat, v)
            if env is None:
                continue
            shape = shape_of(name, v, env)
            if shape is None:
                continue
            key = (name, format_shape(shape))
            if key not in decisions:
                decisions[key] = gate.decide(name, shape, require=require, certify=certify, budget=budget,
                                             path=ledger_path)
                if not decisions[key].allowed:
                    out.refused.append(decisions[key])
            d = decisions[key]
            if d.allowed:
                operands = [env[k] for k in variables(pat)]
                calls.setdefault(v.uid, []).append((name, key[1], operands, d, shape))
    out.seconds["match"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    from compile.egraph import on_big_stack
    chosen = on_big_stack(_extract, it, unions, calls, roots, cost)
    out.terms = len(it.terms)
    out.egraph_size, host, moves, picked, (plan, uid_class, root_classes) = chosen
    out.host_ops, out.host_moves = host, moves
    by_uid = {v.uid: v for v in it.terms}
    for uid, k in picked:
        name, shp, _, d, _ = calls[uid][k]
        out.offloads.append(Offload(name, shp, by_uid[uid], d.certificate, _chain(it, uid)))
    out.program = _program(it, calls, plan, uid_class, root_classes)
    out.graph = graph
    from compile.chains import certified_chains
    out.fused, refused = certified_chains(out.program, require=require, certify=certify, budget=budget,
                                          path=ledger_path)
    out.refused.extend(refused)
    out.seconds["extract"] = time.perf_counter() - t2
    return out


def _chain(it: _Interner, uid: int) -> tuple:
    chain = []
    while uid in it.origin and len(chain) < 64:
        rule, uid = it.origin[uid]
        chain.append(rule)
    return tuple(reversed(chain))


def _extract(it: _Interner, unions, calls, roots, cost: str = "offloads"):
    """Build the e-graph, close it, and extract from egglog's serialized e-graph: returns
    (e-graph size, host compute and data-movement operators in the extracted program,
    [(term uid, call index)])."""
    from compile.egraph import Session, Term, terms
    s = Session()
    term_of: dict[int, object] = {}
    from compile.rewrites.lower import DATA_MOVEMENT
    for v in it.terms:                    # operands first (the interner's order is topological)
        if isinstance(v, Node):
            make = Term.move if v.op in DATA_MOVEMENT else Term.op
            term_of[v.uid] = s.let(make(f"op#{v.uid}", terms(*[term_of[a.uid] for a in v.args])))
        else:
            term_of[v.uid] = Term.leaf(v.uid)
    for a, b in unions:
        s.union(term_of[a.uid], term_of[b.uid])
    for uid, options in calls.items():
        for k, (_, _, operands, _, _) in enumerate(options):
            s.union(term_of[uid], Term.call(f"call#{uid}#{k}", terms(*[term_of[o.uid] for o in operands])))
    s.rebuild()
    data = json.loads(s.eg._serialize().to_json())
    size = s.size()
    term_of.clear()                        # egglog objects must die on this thread
    del s
    import gc
    gc.collect()
    names = {f"call#{uid}#{k}": (o[0], [v.uid for v in o[2]]) for uid, opts in calls.items() for k, o in enumerate(opts)}
    return (size,) + _choose(data, [term_of_key(r) for r in roots], names if cost == "data-movement" else None)


def _program(it: _Interner, calls: dict, plan, uid_class, roots):
    """The extracted program (:mod:`compile.program`) from the chosen e-node of each e-class."""
    from compile.program import build
    by_uid = {v.uid: v for v in it.terms}
    choice = {}
    for c, p in plan.items():
        if p[0] == "call":
            name, _, operands, d, shape = calls[p[1]][p[2]]
            choice[c] = ("call", (name, shape, d.certificate, _chain(it, p[1]), by_uid[p[1]], operands),
                         [uid_class[o.uid] for o in operands])
        else:
            v = by_uid[p[1]]
            choice[c] = ("term", v, [uid_class[a.uid] for a in v.args] if isinstance(v, Node) else [])
    return build(choice, roots)


def term_of_key(v: Value) -> str:
    return f'"op#{v.uid}"' if isinstance(v, Node) else str(v.uid)


def _choose(data: dict, root_keys: list[str], call_names: dict | None = None):
    """Bottom-up tree-cost extraction over the serialized e-graph; walk the chosen DAG from the
    roots (each e-class once): (host compute ops, host data-movement ops, [(term uid, call index)]).
    ``call_names`` (call key -> mapping name): the data-movement cost (see compile_graph)."""
    from compile.chains import chainable
    nodes = data["nodes"]

    def key_of(n):
        return nodes[n["children"][0]]["op"].strip('"') if n["children"] else ""

    def transfer(n) -> float:
        """Data-movement surcharge of call e-node ``n`` given the current choices below it: a store
        and a load, or nothing when its one operand is a call it chains with (that call's load and
        this call's store cancel)."""
        me, operands = call_names[key_of(n)]
        if len(operands) == 1 and operands[0] in uid_class:
            below = best.get(uid_class[operands[0]])
            if below is not None and nodes[below]["op"] == "Term.call" and \
                    chainable(call_names[key_of(nodes[below])][0], me):
                return 0.0
        return 2.0 * TRANSFER
    classes: dict[str, list[str]] = {}
    for nid, n in nodes.items():
        classes.setdefault(n["eclass"], []).append(nid)
    # each term's e-class: the e-class of the Term.op / Term.move / Term.leaf node whose key
    # literal names the term
    lit_class = {n["op"]: n["eclass"] for n in nodes.values() if not n["op"].startswith(("Term.", "TermList."))}
    parent_of_lit = {}
    for nid, n in nodes.items():
        if n["op"] in ("Term.op", "Term.move", "Term.leaf") and n["children"]:
            parent_of_lit[nodes[n["children"][0]]["eclass"]] = n["eclass"]
    uid_class = {}
    for lit, c in lit_class.items():
        if c in parent_of_lit:
            key = lit.strip('"')
            uid_class[int(key.split("#")[1]) if key.startswith("op#") else int(key)] = parent_of_lit[c]
    cost = {c: float("inf") for c in classes}
    best: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for nid, n in nodes.items():
            total = n["cost"] if n["op"].startswith(("Term.", "TermList.")) else 0.0
            if call_names is not None and n["op"] == "Term.call":
                total += transfer(n)
            for ch in n["children"]:
                total += cost[nodes[ch]["eclass"]]
                if total == float("inf"):
                    break
            c = n["eclass"]
            if total < cost[c]:
                cost[c], best[c] = total, nid
                changed = True
    host, moves, picked, seen = 0, 0, [], set()
    stack = [parent_of_lit[lit_class[k]] for k in root_keys if k in lit_class and lit_class[k] in parent_of_lit]
    roots = list(stack)
    plan: dict[str, tuple] = {}                 # e-class -> ("term", uid) | ("call", uid, k)
    while stack:
        c = stack.pop()
        if c in seen or c not in best:
            continue
        seen.add(c)
        n = nodes[best[c]]
        lit = nodes[n["children"][0]]["op"].strip('"') if n["children"] else ""
        if n["op"] == "Term.op":
            host += 1
        elif n["op"] == "Term.move":
            moves += 1
        if n["op"] == "Term.call":
            key = lit.split("#")
            picked.append((int(key[1]), int(key[2])))
            plan[c] = ("call", int(key[1]), int(key[2]))
        elif n["op"] in ("Term.op", "Term.move"):
            plan[c] = ("term", int(lit.split("#")[1]))
        elif n["op"] == "Term.leaf":
            plan[c] = ("term", int(lit))
        stack.extend(nodes[ch]["eclass"] for ch in n["children"])
    return host, moves, picked, (plan, uid_class, roots)
