"""The FlexASR assembler in the four levels of the 3LA drivers (reference §4):

1. **Tensor assembly**: ``[{"name": "store_act", ...}, {"name": "maxp", ...}, {"name": "load_act", ...}]``
   over a *data library* (tensor name -> numpy array of AdaptivFloat codes).
2. **ILA assembly**: ``write_v`` / ``read_v`` (128-bit data) and ``cfg_*`` / ``start`` /
   ``wait_irq`` instructions with named fields (:func:`tensor_to_ila`).
3. **Program fragment**: ``{"program fragment": [{"instr_No.", "addr", "data", "mode"}]}``
   with 32-hex-digit data, mode "W" (write), "R" (read) or "Q" (wait for the interrupt)
   (:func:`ila_to_fragment`).
4. **MMIO commands**: the simulator's input dictionaries (``if_axi_wr``, ``addr_in``,
   ``data_in_0..15``) (:func:`fragment_to_mmio`); data byte k = hex digits [30-2k : 32-2k].

The byte-level steps (packing 16 element codes into a 128-bit data word, the word into 32 hex
digits, hex digits back into MMIO data bytes) are written with :mod:`ila.generic`, so the same
code runs on concrete codes (the driver) and on symbolic ones (proofs: a tensor of bit-vector
symbols flows through the real packer and parser, and the emitted MMIO bytes are the terms the
proof reads). A malformed program fragment (hand-written JSON) raises :class:`FragmentError`
naming the entry and the field; :func:`load_fragment` reads one from a file.

The drivers run concrete programs through :func:`mmio_table`, which goes from tensor assembly to
the MMIO commands as columns without building the fragment's strings (a weight matrix is tens of
thousands of 16-byte writes); the tests check it command for command against levels 2-4.

Shape checks happen in the tensor level (:class:`ShapeError`, a ``ValueError``): hidden sizes must
be multiples of 16, pooling needs an even number of timesteps, output vector counts of the linear
layer and the LSTM hidden size must split over the four PEs, and every tensor must fit its buffer.
"""
from __future__ import annotations

import json

import numpy as np

from ila import generic
from ila.expr import Expr, bv_const
from ila.ops import Op
from ila.sorts import BvSort
from ila.simplify import Rewriter
from ila.commands import CommandTable
from ila.errors import D2AError
from ila.memo import register as register_memo
from ila.models.flexasr import constants as C


class ShapeError(D2AError, ValueError):
    """A tensor shape or size the FlexASR hardware does not support."""


from ila.models.port import FragmentError  # noqa: E402,F401  (one error for malformed fragments of any machine)


# ----------------------------------------------------------------------------- layout helpers
def tiled_offsets(num_ts: int, num_v: int) -> np.ndarray:
    """Byte offsets [t, v, i] of the GB large-buffer tiling (relative to the memory base):
    16*((t mod 16) + floor(t/16)*num_v*16) + 256*v + i."""
    t = np.arange(num_ts)[:, None, None]
    v = np.arange(num_v)[None, :, None]
    i = np.arange(16)[None, None, :]
    return 16 * ((t % 16) + (t // 16) * num_v * 16) + 256 * v + i


def tiled_bytes(num_ts: int, num_v: int) -> int:
    """Bytes a [num_ts, 16*num_v] tensor occupies in the tiled layout (whole 16-timestep groups)."""
    return -(-num_ts // 16) * 16 * num_v * 16


def pack_word(codes):
    """The 128-bit data word of 16 element codes (8 bits each), little-endian: code k is bits
    [8k+7 : 8k] (FlexASR's vector layout, reference §2.1). Codes are ints or 8-bit terms."""
    vals = list(codes)
    if len(vals) != 16:
        raise ShapeError(f"a FlexASR data word holds 16 bytes, got {len(vals)}")
    return generic.bytes_le(vals)


def _word(bs):
    arr = np.asarray(bs)
    if arr.dtype != object and arr.size == 16:     # numeric codes: the same little-endian word
        return int.from_bytes(arr.astype(np.uint8).tobytes(), "little")
    return pack_word(_codes(bs))


def _codes(x):
    """Element codes as a flat list: ints from a numeric array, terms from an object array."""
    arr = np.asarray(x)
    if arr.dtype == object:
        return [v if generic.is_symbolic(v) else int(v) for v in arr.ravel()]
    return [int(v) for v in arr.astype(np.uint8).ravel()]


def word_digits(word) -> list:
    """The 32 hex digits (4-bit values) of a 128-bit word, most significant first. For a term, the
    digits are ``generic.field``'s (each extract simplified), by one simplifier whose memo the 32
    extracts share (the word is simplified once, not 32 times; node for node the same terms:
    ``tests/test_flexasr_isa_symbolic.py``)."""
    if isinstance(word, Expr):
        rw = Rewriter()
        top, nib = rw.one(word), BvSort(4)
        leaves = _concat_leaves(top)
        out = []
        for j in range(32):
            hi, lo = 127 - 4 * j, 124 - 4 * j
            leaf = leaves.get(lo >> 2)
            if leaf is not None and leaf[1] + leaf[0].sort.width > hi:
                # the simplifier's extract-of-concat descent ends at this leaf with these bounds
                out.append(rw.build(Op.EXTRACT, nib, (leaf[0],), (hi - leaf[1], lo - leaf[1])))
            else:
                out.append(rw.build(Op.EXTRACT, nib, (top,), (hi, lo)))
        return out
    return [generic.field(word, 124 - 4 * j, 4) for j in range(32)]


def _concat_leaves(top: Expr) -> dict:
    """The leaves (nodes that are not concatenations) of ``top``'s concatenation tree by the 4-bit
    digits they hold whole: {digit d: (leaf, the leaf's lowest bit)} for every digit (bits 4d + 3
    down to 4d) inside one leaf.
    A digit inside one leaf is what ``Rewriter``'s extract-of-concat descent reduces to an extract
    of that leaf (no concatenation on the way matches the digit's bounds: each is wider than the
    leaf), so :func:`word_digits` builds that extract directly instead of descending per digit."""
    out, stack = {}, [(top, 0)]
    while stack:
        node, lo = stack.pop()
        if node.op is Op.CONCAT:
            hi_part, lo_part = node.args
            stack.append((lo_part, lo))
            stack.append((hi_part, lo + lo_part.sort.width))
        else:
            for d in range(-(-lo // 4), (lo + node.sort.width) // 4):
                out[d] = (node, lo)
    return out


class SymbolicHex:
    """The ``data`` field of a fragment entry whose word is a term (symbolic proofs): its 32 hex
    digits are 4-bit terms, most significant first. Not JSON; :func:`fragment_json` refuses it."""

    def __init__(self, digits: list):
        self.digits = digits

    def __repr__(self) -> str:
        return "0x<symbolic 128-bit word>"


def _hex(word):
    if type(word) is int and 0 <= word < 1 << 128:
        return f"0x{word:032X}"
    digits = word_digits(word)
    if generic.is_symbolic(*digits):
        return SymbolicHex(digits)
    return "0x" + "".join("0123456789ABCDEF"[d] for d in digits)


def _entry_where(k: int, e) -> str:
    no = e.get("instr_No.") if isinstance(e, dict) else None
    return f"program fragment entry {k}" + (f" (instr_No. {no})" if no is not None and no != k else "")


def _hex_field(e: dict, key: str, k: int, max_digits: int) -> str:
    if key not in e:
        raise FragmentError(f"{_entry_where(k, e)}: missing field {key!r}")
    text = e[key]
    if not isinstance(text, str) or not text[:2] in ("0x", "0X"):
        raise FragmentError(f"{_entry_where(k, e)}: field {key!r} = {text!r} must be a string of hex digits "
                            f"starting with '0x'")
    digits = text[2:]
    if not digits or len(digits) > max_digits or any(ch not in "0123456789abcdefABCDEF" for ch in digits):
        raise FragmentError(f"{_entry_where(k, e)}: field {key!r} = {text!r} must have 1 to {max_digits} hex digits")
    return digits


def data_digits(e: dict, k: int = 0) -> list:
    """The 32 hex digits of entry ``e``'s ``data`` (at most 32 digits, left-padded with zeros)."""
    if isinstance(e.get("data"), SymbolicHex):
        return e["data"].digits
    digits = _hex_field(e, "data", k, 32).rjust(32, "0")
    return [int(ch, 16) for ch in digits]


def word_bytes(digits: list) -> list:
    """The 16 data bytes of a word's 32 hex digits: byte k is digits [30-2k] (high nibble) and
    [31-2k] (low nibble). With term digits, ``generic.join``'s bytes by one shared simplifier (as
    :func:`word_digits`)."""
    if not generic.is_symbolic(*digits):
        return [generic.join([(digits[30 - 2 * k], 4), (digits[31 - 2 * k], 4)]) for k in range(16)]
    rw = Rewriter()

    def nibble(d):
        if isinstance(d, Expr):
            return d if d.sort.width == 4 else generic.const(d, 4)
        return bv_const(generic.const(d, 4), 4)

    def byte(hi, lo):
        if not generic.is_symbolic(hi, lo):
            return (generic.const(hi, 4) << 4) | generic.const(lo, 4)
        return rw.build(Op.CONCAT, BvSort(8), (rw.one(nibble(hi)), rw.one(nibble(lo))), None)
    return [byte(digits[30 - 2 * k], digits[31 - 2 * k]) for k in range(16)]


def _tensor(lib: dict, name: str) -> np.ndarray:
    """Tensor ``name`` of the data library: uint8 codes, or an object array of 8-bit terms."""
    if name not in lib:
        raise ShapeError(f"tensor {name!r} is not in the data library (has {sorted(lib)})")
    x = np.asarray(lib[name])
    return x if x.dtype == object else x.astype(np.uint8)


def _check_hidden(h: int, what: str):
    if generic.is_symbolic(h):       # symbolic sizes (proofs): the side conditions are the proof's precondition
        return
    if h <= 0 or h % 16:
        raise ShapeError(f"{what} = {h}: FlexASR vectors hold 16 values, so it must be a positive multiple of 16")
    if h // 16 > 255:
        raise ShapeError(f"{what} = {h}: at most 255 vectors (8-bit num_vector register)")


def _check_ts(t: int, what: str = "timesteps"):
    if generic.is_symbolic(t):
        return
    if not 1 <= t <= 0xFFFF:
        raise ShapeError(f"{what} = {t}: must be in 1..65535 (16-bit register)")


class _Alloc:
    """GB large-buffer allocation of memory indices (base registers in 16-byte units)."""

    def __init__(self):
        self.next = 0
        self.bases: list[int] = []

    def add(self, nbytes: int, what: str) -> int:
        if len(self.bases) == 4:
            raise ShapeError("the GB memory manager has only 4 large-buffer memory indices")
        if self.next + nbytes > C.GB_LARGE_SIZE:
            raise ShapeError(f"{what} needs {nbytes} bytes at offset {self.next:#x}: the 1 MiB GB large buffer overflows")
        self.bases.append(self.next // 16)
        self.next += nbytes
        return len(self.bases) - 1


# ----------------------------------------------------------------------------- level 1 -> 2
def _cfg(unit: str, **fields) -> dict:
    return {"name": unit, **fields}


def _expand_pool(ins: dict) -> list[dict]:
    """maxp / meanp [num_ts, num_v, mem_idx base]: LayerReduce in place (mode 0 max, 1 mean)."""
    T, nv = ins["num_ts"], ins["num_v"]
    _check_ts(T)
    if not generic.is_symbolic(T) and T % 2:
        raise ShapeError(f"temporal {ins['name']} needs an even number of timesteps, got {T}")
    if not generic.is_symbolic(nv) and not 1 <= nv <= 255:
        raise ShapeError(f"num_v = {nv}: must be in 1..255")
    mode = {"maxp": C.LR_MAX, "meanp": C.LR_MEAN, "addp": C.LR_ADD}[ins["name"]]
    return [_cfg("cfg_mmngr_gb_large", base_large_0=ins.get("base", 0), num_vector_0=nv),
            _cfg("cfg_ly_reduce", is_valid=1, mode=mode, mem_idx=0, num_vector=nv, num_timestep=T),
            {"name": "start", "op": 2}, {"name": "wait_irq"}]


EXPANDERS = {"maxp": _expand_pool, "meanp": _expand_pool, "addp": _expand_pool}


def _store_rows(ins: dict, lib: dict) -> tuple[np.ndarray, np.ndarray]:
    """(addresses [n], data rows [n, 16]) of the 16-byte writes of store instruction ``ins``
    (store_act, store_small, store_pe) in emitted order; rows are uint8 codes, or 8-bit terms
    (object array). ShapeError when the tensor does not fit its buffer or is not whole vectors."""
    name = ins["name"]
    x = _tensor(lib, ins["tensor"])
    if name == "store_act":                        # [T, 16 num_v] -> GB large, tiled
        if x.ndim != 2 or x.shape[1] % 16:
            raise ShapeError(f"store_act of tensor {ins['tensor']!r}: needs a [timesteps, 16 * vectors] "
                             f"tensor, got shape {x.shape}")
        T, H = x.shape
        nv = H // 16
        base = ins["base"] * 16
        if base + tiled_bytes(T, nv) > C.GB_LARGE_SIZE:
            raise ShapeError(f"tensor {ins['tensor']!r} of shape {x.shape} does not fit the GB large buffer")
        return C.GB_LARGE_BASE + base + tiled_offsets(T, nv)[:, :, 0].ravel(), x.reshape(T * nv, 16)
    x = x.ravel()
    if name == "store_small":                      # flat bytes -> GB small buffer
        base = ins["base"] * 16
        if base + x.size > C.GB_SMALL_SIZE:
            raise ShapeError(f"tensor {ins['tensor']!r} ({x.size} bytes) overflows the 16 KiB GB small buffer")
        first = C.GB_SMALL_BASE + base
    else:                                          # flat bytes -> PE weight buffer
        if x.size > C.PE_WEIGHT_SIZE:
            raise ShapeError(f"PE {ins['pe']} weights ({x.size} bytes) overflow its {C.PE_WEIGHT_SIZE}-byte weight buffer")
        first = C.pe_base(ins["pe"]) + C.PE_WEIGHT_OFFSET
    if x.size % 16:
        raise ShapeError(f"a FlexASR data word holds 16 bytes; tensor {ins['tensor']!r} has {x.size} bytes, "
                         f"not whole words")
    return first + 16 * np.arange(x.size // 16), x.reshape(-1, 16)


def _load_addrs(ins: dict) -> np.ndarray:
    """Addresses of the 16-byte reads of load instruction ``ins`` (load_act, load_small) in order."""
    if ins["name"] == "load_act":
        T, nv, base = ins["num_ts"], ins["num_v"], ins["base"] * 16
        return C.GB_LARGE_BASE + base + tiled_offsets(T, nv)[:, :, 0].ravel()
    base, n = ins["base"] * 16, ins["num_bytes"]   # flat bytes <- GB small buffer
    if n % 16 or base + n > C.GB_SMALL_SIZE:
        raise ShapeError(f"load_small of {n} bytes at {base:#x}: needs whole 16-byte vectors inside "
                         f"the 16 KiB GB small buffer")
    return C.GB_SMALL_BASE + base + 16 * np.arange(n // 16)


_STORES = ("store_act", "store_small", "store_pe")
_LOADS = ("load_act", "load_small")


def tensor_to_ila(prog: list[dict], lib: dict) -> list[dict]:
    """Lower tensor assembly to ILA assembly. ``lib`` maps tensor names to uint8 code arrays
    (or object arrays of 8-bit terms, for proofs)."""
    out: list[dict] = []
    for ins in prog:
        name = ins["name"]
        if name in _STORES:
            addrs, rows = _store_rows(ins, lib)
            out += [{"name": "write_v", "addr": int(a), "data": _word(r)} for a, r in zip(addrs, rows)]
        elif name in _LOADS:
            out += [{"name": "read_v", "addr": int(a)} for a in _load_addrs(ins)]
        elif name == "cfg":                        # already ILA level
            out.append({k: v for k, v in ins.items() if k != "name"} | {"name": ins["unit"]})
        elif name in ("start", "wait_irq"):
            out.append(dict(ins))
        elif name in EXPANDERS:
            out.extend(EXPANDERS[name](ins))
        else:
            raise ShapeError(f"unknown tensor-assembly instruction {name!r}")
    return out


# ----------------------------------------------------------------------------- level 2 -> 3
_CFG = {
    "cfg_mmngr_gb_large": (C.CFG_MEM_MNGR_LARGE, C.GB_FIELDS["mem_mngr_large"]),
    "cfg_mmngr_gb_small": (C.CFG_MEM_MNGR_SMALL, C.GB_FIELDS["mem_mngr_small"]),
    "cfg_ly_reduce": (C.CFG_LAYER_REDUCE, C.GB_FIELDS["layer_reduce"]),
    "cfg_gb_ctrl": (C.CFG_GB_CONTROL, C.GB_FIELDS["gb_control"]),
    "cfg_ly_norm": (C.CFG_LAYER_NORM, C.GB_FIELDS["layer_norm"]),
    "cfg_zeropadding": (C.CFG_ZERO_PADDING, C.GB_FIELDS["zero_padding"]),
    "cfg_attention": (C.CFG_ATTENTION, C.GB_FIELDS["attention"]),
}
_PE_CFG = {
    "pe_cfg_rnn_layer_sizing": (C.PE_CFG_RNN_LAYER_SIZING, C.PE_FIELDS["rnn_layer_sizing"]),
    "pe_cfg_mngr": (None, C.PE_FIELDS["mem_mngr"]),
    "pe_cfg_act_mngr": (C.PE_CFG_ACT_MNGR, C.PE_FIELDS["act_mngr"]),
}
START_ADDR = {1: C.START_GB_CONTROL, 2: C.START_LAYER_REDUCE, 3: C.START_LAYER_NORM,
              4: C.START_ZERO_PADDING, 5: C.START_ATTENTION}


def ila_to_fragment(asm: list[dict]) -> dict:
    """Lower ILA assembly to the program-fragment JSON object."""
    frag = []
    for ins in asm:
        name = ins["name"]
        fields = {k: v for k, v in ins.items() if k not in ("name", "pe", "mngr", "idx")}
        if name == "write_v":
            addr, data, mode = ins["addr"], ins["data"], "W"
        elif name == "read_v":
            addr, data, mode = ins["addr"], 0, "R"
        elif name in _CFG:
            addr, layout = _CFG[name]
            data, mode = C.pack_fields(layout, fields), "W"
        elif name in _PE_CFG:
            off, layout = _PE_CFG[name]
            off = C.PE_CFG_MEM_MNGR[ins["mngr"]] if off is None else off
            addr, data, mode = C.pe_base(ins["pe"]) + off, C.pack_fields(layout, fields), "W"
        elif name == "pe_cfg_act_v":
            ops = list(ins["ops"]) + [0] * (16 - len(ins["ops"]))
            addr, data, mode = C.pe_base(ins["pe"]) + C.PE_CFG_ACT_VECTOR[ins["idx"]], _word(ops), "W"
        elif name == "start":
            addr, data, mode = START_ADDR[ins["op"]], 1, "W"
        elif name == "wait_irq":
            addr, data, mode = 0, 0, "Q"
        else:
            raise ValueError(f"unknown ILA-assembly instruction {name!r}")
        frag.append({"instr_No.": len(frag), "addr": f"0x{addr:08X}", "data": _hex(data), "mode": mode})
    return {"program fragment": frag}


def fragment_json(frag: dict) -> str:
    """The fragment as JSON text (refused for fragments with symbolic data)."""
    if any(isinstance(e.get("data"), SymbolicHex) for e in frag["program fragment"]):
        raise FragmentError("a fragment with symbolic data words has no JSON form")
    return json.dumps(frag, indent=1)


MODES = ("W", "R", "Q")


def fragment_to_mmio(frag: dict) -> list[dict]:
    """Program fragment -> simulator commands. "Q" entries become ``{"wait_irq": True}``.

    Every entry needs ``addr`` (``0x`` and 1-8 hex digits), ``mode`` (W, R or Q) and, for W,
    ``data`` (``0x`` and 1-32 hex digits, left-padded with zeros). Raises :class:`FragmentError`
    naming the entry and the field for anything else (a missing ``"program fragment"`` key too)."""
    if not isinstance(frag, dict) or "program fragment" not in frag:
        keys = sorted(frag) if isinstance(frag, dict) else type(frag).__name__
        raise FragmentError(f"a program fragment is an object with a \"program fragment\" list; got {keys}")
    entries = frag["program fragment"]
    if not isinstance(entries, list):
        raise FragmentError(f"\"program fragment\" must be a list of entries, got {type(entries).__name__}")
    cmds = []
    for k, e in enumerate(entries):
        if not isinstance(e, dict):
            raise FragmentError(f"program fragment entry {k}: an entry is an object, got {e!r}")
        mode = e.get("mode")
        if mode not in MODES:
            raise FragmentError(f"{_entry_where(k, e)}: field 'mode' = {mode!r} must be one of {', '.join(MODES)}"
                                if "mode" in e else f"{_entry_where(k, e)}: missing field 'mode'")
        if mode == "Q":
            cmds.append({"wait_irq": True})
            continue
        addr = int(_hex_field(e, "addr", k, 8), 16)
        cmd = {"if_axi_wr": int(mode == "W"), "if_axi_rd": int(mode == "R"), "addr_in": addr}
        if mode == "W":
            for j, b in enumerate(word_bytes(data_digits(e, k))):
                cmd[f"data_in_{j}"] = b
        cmds.append(cmd)
    return cmds


def load_fragment(path) -> dict:
    """Read a program-fragment JSON file; FragmentError naming the file for unreadable or
    malformed JSON (the entries are checked by :func:`fragment_to_mmio`)."""
    try:
        with open(path) as fh:
            frag = json.load(fh)
    except OSError as exc:
        raise FragmentError(f"cannot read program fragment {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise FragmentError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    fragment_to_mmio(frag)          # validate every entry now, naming the file
    return frag


_CONFIG_ROWS: dict = {}          # frozen configuration instruction -> (addresses, data, modes), read-only
CONFIG_MEMO_SIZE = 4096
CONFIG_MEMO_BUGS = ("key_without_fields",)     # seeded, for the memo's differential test
_config_bug: str | None = None


def _frozen(v):
    """A hashable, type-tagged copy of a tensor-assembly field value (ints, bools, strings and
    sequences of them), so that equal keys mean equal instructions; None for anything else (a
    term of a proof: not memoised)."""
    if isinstance(v, (bool, np.bool_)):
        return ("b", bool(v))
    if isinstance(v, (int, np.integer)):
        return ("i", int(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, (list, tuple)):
        items = tuple(_frozen(x) for x in v)
        return None if any(x is None for x in items) else ("l", items)
    return None


def _clear_config_rows() -> None:
    _CONFIG_ROWS.clear()


register_memo(_clear_config_rows)       # emptied around every seeded bug (ila.memo.clear_all)


def _config_rows(ins: dict, lib: dict) -> tuple:
    """The MMIO rows of one configuration / start / wait instruction (neither a store nor a load:
    a function of the instruction alone, :func:`tensor_to_ila` does not read ``lib`` for it),
    through the fragment path, memoised by the instruction's fields (every call of a layer repeats
    its configuration words; the fragment path costs ~10 us per word). The memo is emptied
    whenever a seeded bug changes the path's code (:func:`ila.memo.clear_all`)."""
    items = [(k, _frozen(v)) for k, v in sorted(ins.items())]
    key = None if any(f is None for _, f in items) else tuple(items)
    if _config_bug == "key_without_fields" and key is not None:
        key = ins["name"]
    hit = _CONFIG_ROWS.get(key) if key is not None else None
    if hit is not None:
        return hit
    cmds = fragment_to_mmio(ila_to_fragment(tensor_to_ila([ins], lib)))
    out = (np.array([c.get("addr_in", 0) for c in cmds], np.int64),
           np.array([[c.get(f"data_in_{j}", 0) for j in range(16)] for c in cmds], np.uint8).reshape(-1, 16),
           np.array(["Q" if c.get("wait_irq") else "R" if c["if_axi_rd"] else "W" for c in cmds] or [],
                    dtype="<U1"))
    if key is not None:
        for a in out:
            a.flags.writeable = False
        if len(_CONFIG_ROWS) >= CONFIG_MEMO_SIZE:
            _CONFIG_ROWS.clear()
        _CONFIG_ROWS[key] = out
    return out


def mmio_table(prog: list[dict], lib: dict) -> tuple[CommandTable, np.ndarray]:
    """Tensor assembly over numeric tensors (uint8 codes) -> (commands, modes), without building
    the program fragment: the commands of ``fragment_to_mmio(ila_to_fragment(tensor_to_ila(prog,
    lib)))`` as a :class:`~ila.commands.CommandTable` (inputs ``if_axi_wr``, ``if_axi_rd``,
    ``addr_in``, ``data_in_0..15``; a "Q" entry is an all-zero row) and each row's fragment mode
    ("W", "R" or "Q"). The driver's fast path for long transfers (a weight matrix is tens of
    thousands of writes); the rows of the other instructions come from the fragment path, memoised
    per instruction (:func:`_config_rows`); tests check it equal to the fragment path. Raises the
    same errors as :func:`tensor_to_ila`."""
    addrs, datas, modes = [], [], []
    for ins in prog:
        if ins["name"] in _STORES:
            a, rows = _store_rows(ins, lib)
            if rows.dtype == object:
                raise ShapeError(f"mmio_table needs numeric tensors; {ins['tensor']!r} holds terms")
            addrs.append(np.asarray(a, np.int64))
            datas.append(rows.astype(np.uint8))
            modes.append(np.full(len(a), "W"))
        elif ins["name"] in _LOADS:
            a = _load_addrs(ins)
            addrs.append(np.asarray(a, np.int64))
            datas.append(np.zeros((len(a), 16), np.uint8))
            modes.append(np.full(len(a), "R"))
        else:
            a, d, m = _config_rows(ins, lib)
            addrs.append(a)
            datas.append(d)
            modes.append(m)
    mode = np.concatenate(modes) if modes else np.zeros(0, "<U1")
    data = np.concatenate(datas) if datas else np.zeros((0, 16), np.uint8)
    cols = {"if_axi_wr": (mode == "W").astype(np.uint8), "if_axi_rd": (mode == "R").astype(np.uint8),
            "addr_in": np.concatenate(addrs) if addrs else np.zeros(0, np.int64)}
    cols["addr_in"] = np.where(mode == "Q", 0, cols["addr_in"])
    cols |= {f"data_in_{j}": data[:, j] for j in range(16)}
    return CommandTable(cols), mode


def assemble(prog: list[dict], lib: dict) -> tuple[dict, list[dict]]:
    """Tensor assembly -> (program fragment, MMIO commands)."""
    frag = ila_to_fragment(tensor_to_ila(prog, lib))
    return frag, fragment_to_mmio(frag)
