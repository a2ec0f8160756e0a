"""Code generation: every accelerator call of a compiled program as its program fragment, one JSON
file per call (per fused chain).

A fragment is exactly the stream the co-simulation executed for that call (:class:`compile.call.Call`:
the mapping's code generator on the call's operands, written by its machine port's fragment
writer, :meth:`ila.models.port.MachinePort.entries`), with its metadata: mapping, shape, machine,
the call's subject (the matched IR subterm with every attribute, dtype and shape) and its digest,
the step, the source location, the certificate the call ran on, the rewrites that produced the
term, the fused steps of a chain. Each accelerator's fragment runner replays it
(``python -m ila.models.<machine>.run FILE``): the reads it prints are the reads the co-simulation
observed. The writer is inside every call certificate (its round trip is checked,
:func:`compile.certify.stream_checks`).

Entry forms are the machines' (FlexASR: ``{"mode": "W"|"R"|"Q", "addr", "data"}``; HLSCNN: W/R;
VTA: ``M`` virtual-memory writes, ``I`` instructions, ``A`` accumulator reads, ``X`` resets).
"""
from __future__ import annotations

import json
from pathlib import Path

from compile.errors import CompileError


def fragment(record) -> dict:
    """The fragment object of one executed call (:class:`compile.runtime.cosim.Record`)."""
    step = record.step
    extra = {"chain": list(getattr(step, "chain", ()) or ()), "fused_steps": [s.index for s in record.fused]}
    return record.call.fragment(record.program, step=step.index, certificate=record.certificate, extra=extra)


def write(path: Path, frag: dict) -> None:
    """``frag`` as readable JSON text: the metadata, then one entry per line."""
    head = {k: v for k, v in frag.items() if k != "program fragment"}
    body = frag["program fragment"]
    text = json.dumps(head, indent=1)[:-2] + ',\n "program fragment": [\n' + \
        ",\n".join("  " + json.dumps(e) for e in body) + "\n ]\n}\n"
    path.write_text(text)


def emit(compiled, inputs: dict, directory, *, result=None) -> list[Path]:
    """Write one fragment file per call (per fused chain) of ``compiled`` executed on ``inputs``:
    ``DIR/NNNN_<mapping>.json``. ``result``: a :class:`compile.runtime.cosim.CosimResult` recorded
    on these inputs (``record=True``), whose records are written; without it the program is
    co-simulated once with recording. Returns the files written. CompileError for a directory
    that cannot be created."""
    from compile.runtime.cosim import cosimulate
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CompileError(f"--emit {directory}: cannot create the directory ({e.strerror})") from None
    if result is None or not result.records and compiled.program.calls():
        result = cosimulate(compiled, inputs, record=True)
    files = []
    for rec in result.records:
        path = d / f"{rec.step.index:04d}_{rec.call.mapping.name}.json"
        try:
            write(path, fragment(rec))
        except OSError as e:
            raise CompileError(f"--emit {directory}: cannot write {path.name} ({e.strerror})") from None
        files.append(path)
    return files


__all__ = ["emit", "fragment", "write"]
