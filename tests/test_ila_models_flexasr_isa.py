"""FlexASR program fragments (3LA JSON): every malformed entry is a FragmentError naming the entry
and the field (none of these was caught before: data over 32 digits was shifted, data without
'0x' lost its top byte, the rest raised bare KeyError/ValueError); a fragment that starts an
unconfigured unit says so; the file loader and ``python -m ila.models.flexasr.run``."""
import json
import subprocess
import sys

import numpy as np
import pytest

from ila.errors import D2AError
from ila.models.flexasr import driver, isa
from ila.models.flexasr.isa import FragmentError, fragment_to_mmio
from ila.models.flexasr.run import main as run_main, run_fragment
from ila.numerics import adaptivfloat as af

W = {"instr_No.": 0, "addr": "0x33500000", "data": "0x" + "01" * 16, "mode": "W"}


def _frag(*entries):
    return {"program fragment": list(entries)}


@pytest.mark.parametrize("entry, says", [
    ({**W, "data": "0x" + "1" * 33}, "field 'data' = '0x1111"),                 # > 32 digits: was shifted
    ({**W, "data": "01" * 16}, "must be a string of hex digits starting with '0x'"),  # no 0x: lost its top byte
    ({**W, "data": "0xZZ"}, "field 'data' = '0xZZ'"),
    ({**W, "data": "0x"}, "field 'data' = '0x'"),
    ({**W, "addr": "0x1234567890"}, "field 'addr'"),
    ({k: v for k, v in W.items() if k != "addr"}, "missing field 'addr'"),
    ({k: v for k, v in W.items() if k != "data"}, "missing field 'data'"),
    ({k: v for k, v in W.items() if k != "mode"}, "missing field 'mode'"),
    ({**W, "mode": "X"}, "field 'mode' = 'X'"),
    ({**W, "data": 12}, "field 'data' = 12"),
])
def test_malformed_entries_name_the_entry_and_the_field(entry, says):
    with pytest.raises(FragmentError, match="program fragment entry 1") as e:
        fragment_to_mmio(_frag(W, {**entry, "instr_No.": 1}))
    assert says in str(e.value)
    assert isinstance(e.value, D2AError)


@pytest.mark.parametrize("frag, says", [({}, "\"program fragment\" list"), ({"fragment": []}, "\"program fragment\" list"),
                                        ({"program fragment": {}}, "must be a list"), ([], "program fragment"),
                                        ({"program fragment": [3]}, "entry 0: an entry is an object")])
def test_malformed_fragments(frag, says):
    with pytest.raises(FragmentError, match=says):
        fragment_to_mmio(frag)


def test_short_data_is_left_padded_and_32_digits_are_exact():
    a = fragment_to_mmio(_frag({**W, "data": "0x1"}))[0]
    assert a["data_in_0"] == 1 and all(a[f"data_in_{j}"] == 0 for j in range(1, 16))
    b = fragment_to_mmio(_frag({**W, "data": "0x" + "AB" + "00" * 15}))[0]
    assert b["data_in_15"] == 0xAB and b["data_in_0"] == 0


def _pool_fragment(tmp_path):
    codes, _ = af.quantize(np.arange(32, dtype=np.float32).reshape(2, 16) / 4)
    frag, _ = isa.assemble(driver.pool_program(2, 1, "max"), {"x": codes})
    path = tmp_path / "pool.json"
    path.write_text(isa.fragment_json(frag))
    return path, codes


def test_run_cli_prints_reads_and_memory(tmp_path, capsys):
    path, codes = _pool_fragment(tmp_path)
    res = run_fragment(isa.load_fragment(path))
    want = np.maximum(codes[0], codes[1])               # positive codes: max of codes is max of values
    assert res["reads"] == ["0x" + bytes(want.astype(np.uint8)[::-1]).hex().upper()]
    assert run_main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 read(s)" in out and res["reads"][0] in out
    assert run_main([str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reads"] == res["reads"]


def test_run_cli_refuses_bad_fragments_with_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_frag({**W, "data": "0x" + "1" * 40})))
    out = subprocess.run([sys.executable, "-m", "ila.models.flexasr.run", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2 and "entry 0" in out.stderr and "'data'" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "trunc.json").write_text('{"program fragment": [')
    assert run_main([str(tmp_path / "trunc.json")]) == 2
    assert run_main([str(tmp_path / "missing.json")]) == 2


def test_starting_an_unconfigured_unit_says_so(tmp_path, capsys):
    frag = isa.ila_to_fragment([{"name": "start", "op": 2}])
    path = tmp_path / "start.json"
    path.write_text(isa.fragment_json(frag))
    assert run_main([str(path)]) == 2
    err = capsys.readouterr().err
    assert "not configured" in err and "LayerReduce" in err and "unmapped" not in err
