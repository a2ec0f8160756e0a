"""The proofs benchmark as a Dask campaign (benchmarks.proofs): tasks are importable functions of
plain data, a rerun resumes from the results file, the report and exit code come from the records,
campaign errors exit 2. The full plan is `python -m benchmarks.proofs --quick` (CI smoke)."""
import json
import pickle

import pytest

pytest.importorskip("distributed")

from benchmarks import campaign, proofs  # noqa: E402
from verify import ledger  # noqa: E402


def _plan(tmp_path, mutations=False):
    return proofs.tasks(True, mutations, 900.0, str(tmp_path / "ledger.json"))


def _fake(t, kind="proved"):
    res = {"kind": kind, "seconds": 0.5, "what": "fake"} if t.fn is proofs.prove_task else \
        {"kind": "counterexample", "seconds": 0.5, "killed": True}
    return {"key": t.key, "ok": True, "result": res, "seconds": 0.5, "worker": 0}


def test_tasks_are_importable_functions_of_plain_data(tmp_path):
    from mappings.registry import get, names
    todo, plain = _plan(tmp_path, mutations=True)
    assert todo and len({t.key for t in todo}) == len(todo)
    assert set(plain) == {n for n in names() if get(n).proof is None}      # listed as validated by simulation only
    assert {t.fn for t in todo} == {proofs.prove_task, proofs.mutation_task}
    for t in todo:
        assert t.fn.__module__ == "benchmarks.proofs"                  # pickled by reference, not by value
        assert all(isinstance(a, (str, float, int)) for a in t.args)
    pickle.dumps(todo)
    assert all(t.fresh for t in todo)                                   # each in a fresh process by default
    assert not any(t.fresh for t in proofs.tasks(True, True, 900.0, str(tmp_path / "ledger.json"), fresh=False)[0])
    # the key names what the verdict depends on: the ledger file (and the mapping's source digest)
    assert all(str(tmp_path / "ledger.json") in t.key for t in todo if t.fn is proofs.prove_task)


def test_a_proof_task_records_in_the_ledger(tmp_path):
    res = proofs.prove_task("vta.add", "bmc", "32", "exact", 120.0, str(tmp_path / "ledger.json"))
    assert res["kind"] == "proved" and res["seconds"] >= 0 and isinstance(res["what"], str)
    json.dumps(res)
    assert any(e["mapping"] == "vta.add" for e in ledger.load(tmp_path / "ledger.json"))


def test_report_from_a_resumed_campaign(tmp_path, capsys):
    """Every result already in the results file: no cluster, nothing proved again, same report."""
    todo, plain = _plan(tmp_path)
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(_fake(t)) + "\n" for t in todo))
    out = tmp_path / "p.md"
    assert proofs.main(["--quick", "--no-mutations", "--no-progress", "--out", str(out), "--results",
                        str(results)]) == 0
    text = out.read_text()
    assert text.count("| proved | 0.50 | fake |") == len(todo) and all(f"`{p}`" in text for p in plain)
    assert not (tmp_path / "ledger.json").exists()                      # no task ran
    # a failed proof task: reported, exit 1
    results.write_text("".join(json.dumps(_fake(t)) + "\n" for t in todo[1:]) +
                       json.dumps({"key": todo[0].key, "ok": False, "error": "KilledWorker: x"}) + "\n")
    assert proofs.main(["--quick", "--no-mutations", "--no-progress", "--out", str(out), "--results",
                        str(results), "--scheduler", "nonsense:::"]) == 2    # the failed one is re-run: no cluster
    assert "nonsense:::" in capsys.readouterr().err


def test_same_process_option(tmp_path, monkeypatch):
    """--same-process: the tasks run in the worker processes (Task.fresh off); by default each in a fresh one."""
    seen = []

    def fake_run(args, todo, path, desc="campaign", on_result=None):
        seen.append(todo)
        return [_fake(t) for t in todo]

    monkeypatch.setattr(campaign, "run_from_args", fake_run)
    argv = ["--quick", "--no-mutations", "--no-progress", "--out", str(tmp_path / "p.md"), "--results",
            str(tmp_path / "r.jsonl")]
    assert proofs.main(argv) == 0 and proofs.main(argv + ["--same-process"]) == 0
    assert seen[0] and all(t.fresh for t in seen[0]) and not any(t.fresh for t in seen[1])
    assert [t.key for t in seen[0]] == [t.key for t in seen[1]]         # the same keys: a rerun resumes either way
    assert "--same-process" in (tmp_path / "p.md").read_text()


def test_campaign_errors_exit_2(tmp_path, capsys):
    results = tmp_path / "r.jsonl"
    results.write_text("{oops\n{}\n")
    assert proofs.main(["--quick", "--no-mutations", "--out", str(tmp_path / "p.md"), "--results",
                        str(results)]) == 2
    assert f"{results}: line 1" in capsys.readouterr().err
    assert proofs.main(["--quick", "--workers", "0", "--out", str(tmp_path / "p.md")]) == 2
    assert "--workers" in capsys.readouterr().err


def test_the_last_proofs_run_on_a_local_cluster(tmp_path):
    """All but the fixed-shape VTA proofs already recorded: the six quick VTA proofs at a shape (add,
    gemm, relu, vta.dense by BMC and by its composite phase proof, vta.dense_bias by its composite)
    run on a LocalCluster and land in the results file, the ledger and the report (vta.add's
    all-sizes proof, minutes long, is among the recorded ones)."""
    todo, _ = _plan(tmp_path)
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(_fake(t)) + "\n" for t in todo
                               if not t.args[0].startswith("vta.") or "/symbolic/" in t.key))
    out = tmp_path / "p.md"
    assert proofs.main(["--quick", "--no-mutations", "--no-progress", "--workers", "1", "--out", str(out),
                        "--results", str(results)]) == 0
    recs = campaign.load(results)
    assert len(recs) == len(todo) and {r["key"] for r in recs} == {t.key for t in todo}
    vta = [r for r in recs if "/vta." in r["key"] and "/symbolic/" not in r["key"]]
    assert len(vta) == 6 and all(r["ok"] and r["result"]["kind"] == "proved" for r in vta)
    assert {e["mapping"] for e in ledger.load(tmp_path / "ledger.json")} == {"vta.add", "vta.gemm", "vta.relu",
                                                                                "vta.dense", "vta.dense_bias"}
    assert "| `vta.gemm` | bmc | 1x16x16 | exact | proved |" in out.read_text()


def test_application_shapes_come_from_the_call_certificates(tmp_path):
    """--application-shapes: vta.dense is proved at every shape it has a call certificate at (the
    applications' offloads), smallest first, besides the plan's own shapes."""
    path = tmp_path / "ledger.json"
    def entry(name, scope):
        return {"mapping": name, "method": "call", "scope": scope, "digest": "0" * 16, "checker": "compile.certify",
                "result": "passed", "seconds": 1.0, "covers": [], "date": "2026-11-26 00:00:00"}
    entries = [entry("vta.dense", s) for s in ("64x576x64", "4x32x16", "4x32x16")] + [entry("flexasr.linear", "1x16x64")]
    path.write_text(json.dumps(entries))
    assert proofs.application_shapes("vta.dense", str(path)) == ["4x32x16", "64x576x64"]
    todo, _ = proofs.tasks(True, False, 900.0, str(path), app_shapes=True)
    dense = [t.args[1:4] for t in todo if t.fn is proofs.prove_task and t.args[0] == "vta.dense"]
    assert ("chc", "4x32x16", "exact") in dense and ("chc", "64x576x64", "exact") in dense
    assert len(dense) == len(set(dense))
    plain, _ = proofs.tasks(True, False, 900.0, str(path))
    # vta.dense at its two shapes, flexasr.linear's timestep induction at 1x16x64 (the plan has it by BMC)
    assert len(todo) == len(plain) + 3


def test_application_shapes_from_the_offload_list(tmp_path):
    """With the six applications' offload list (benchmarks.offloads), vta.dense is proved at the listed
    shapes only: a shape only another model's call certificate names (64x576x64) is left to
    --all-call-shapes; the list's comment lines are skipped."""
    path = tmp_path / "ledger.json"
    def entry(name, scope):
        return {"mapping": name, "method": "call", "scope": scope, "digest": "0" * 16, "checker": "compile.certify",
                "result": "passed", "seconds": 1.0, "covers": [], "date": "2026-11-26 00:00:00"}
    path.write_text(json.dumps([entry("vta.dense", s) for s in ("64x576x64", "4x32x16")]))
    listed = tmp_path / "offloads.txt"
    listed.write_text("# written by python -m benchmarks.offloads\nvta.dense 4x32x16\nvta.dense 8x32x16\n")
    pairs = proofs.read_pairs(str(listed))
    assert proofs.application_shapes("vta.dense", str(path), offloads=pairs) == ["4x32x16", "8x32x16"]
    todo, _ = proofs.tasks(True, False, 900.0, str(path), app_shapes=True, offloads=pairs)
    dense = {t.args[1:4] for t in todo if t.fn is proofs.prove_task and t.args[0] == "vta.dense"}
    assert ("chc", "8x32x16", "exact") in dense and ("chc", "64x576x64", "exact") not in dense
    # a listed offload above the size limit is planned all the same (main passes the list to planned_for)
    small, _ = proofs.tasks(True, False, 900.0, str(path), app_shapes=True, app_limit=1000, offloads=pairs)
    extra = proofs.planned_for(pairs, small, 900.0, str(path))
    assert {t.args[2] for t in extra if t.args[0] == "vta.dense"} == {"4x32x16", "8x32x16"}
    assert proofs.main(["--application-shapes", "--offloads", str(tmp_path / "missing.txt"),
                        "--out", str(tmp_path / "proofs.md")]) == 2


def test_the_offloads_cli_refuses_unknown_names(capsys):
    from benchmarks import offloads
    assert offloads.main(["--tables", "2"]) == 2 and "--tables" in capsys.readouterr().err
    assert offloads.main(["--apps", "nonsense"]) == 2 and "nonsense" in capsys.readouterr().err


def test_flexasr_linear_application_shapes_get_the_timestep_induction(tmp_path):
    """flexasr.linear and linear_pad are proved at every application shape by the timestep
    induction (chc, mappings.flexasr.linear_chc), keyed by that method's digest, also beyond the
    per-output BMC's reach (LSTM-WLM's 35x650x1300); a shape the plan proves by BMC gets both."""
    from mappings.registry import get
    from verify.ledger import digest
    path = tmp_path / "ledger.json"
    def entry(name, scope):
        return {"mapping": name, "method": "call", "scope": scope, "digest": "0" * 16, "checker": "compile.certify",
                "result": "passed", "seconds": 1.0, "covers": [], "date": "2026-11-26 00:00:00"}
    path.write_text(json.dumps([entry("flexasr.linear", s) for s in ("1x16x64", "1x672x192")]
                               + [entry("flexasr.linear_pad", s) for s in ("1x1280x10", "35x650x1300")]))
    todo, _ = proofs.tasks(True, False, 900.0, str(path), app_shapes=True)
    got = {}
    for t in todo:
        if t.fn is proofs.prove_task and t.args[0].startswith("flexasr.linear"):
            got.setdefault((t.args[0], t.args[2]), []).append((t.args[1], t.key))
    for k in (("flexasr.linear", "1x672x192"), ("flexasr.linear_pad", "1x1280x10"), ("flexasr.linear_pad", "35x650x1300")):
        assert [m for m, _ in got[k]] == ["chc"], k
    assert sorted(m for m, _ in got[("flexasr.linear", "1x16x64")]) == ["bmc", "chc"]
    assert digest(get("flexasr.linear"), "chc") in got[("flexasr.linear", "1x672x192")][0][1]
    assert proofs.application_shapes("flexasr.linear_pad", str(path), 100_000) == ["1x1280x10"]   # by Ip Op + T (Ip + Op)


def test_conv2d_nchw_application_shapes_get_the_phase_proof(tmp_path):
    """hlscnn.conv2d_nchw's application shapes are measured by H*W*C*O*K*K (P = 0 makes the plain
    product 0); every one gets the loop-nest phase proof (chc); its seeded bugs run at C = 1 and again at C = 9, the
    channel-order bug at C = 9 only, and every one also by the phase proof."""
    path = tmp_path / "ledger.json"
    def entry(scope):
        return {"mapping": "hlscnn.conv2d_nchw", "method": "call", "scope": scope, "digest": "0" * 16,
                "checker": "compile.certify", "result": "passed", "seconds": 1.0, "covers": [],
                "date": "2026-11-26 00:00:00"}
    shapes = ("1x1x10x240x1x1x0", "32x32x16x16x3x1x1", "1x1x8x32x1x1x0", "8x8x8x8x3x1x1")
    path.write_text(json.dumps([entry(s) for s in shapes]))
    assert proofs.application_shapes("hlscnn.conv2d_nchw", str(path)) == [
        "1x1x8x32x1x1x0", "1x1x10x240x1x1x0", "8x8x8x8x3x1x1", "32x32x16x16x3x1x1"]
    assert proofs.application_shapes("hlscnn.conv2d_nchw", str(path), 1000) == ["1x1x8x32x1x1x0"]
    todo, _ = proofs.tasks(True, True, 900.0, str(path), app_shapes=True)
    planned = {t.args[2]: t.args[1] for t in todo if t.fn is proofs.prove_task and t.args[0] == "hlscnn.conv2d_nchw"}
    assert {planned.get(s) for s in shapes} == {"chc"}
    muts = [t.args[1:3] + (t.args[4],) for t in todo if t.fn is proofs.mutation_task and t.args[0] == "hlscnn.conv2d_nchw"]
    assert {("3x3x1x2x2x1x1", "padding_wrong_side", "bmc"), ("3x3x9x2x2x1x1", "padding_wrong_side", "bmc"),
            ("2x2x9x2x2x1x1", "padding_wrong_side", "chc")} <= set(muts)
    assert sorted((s, m) for s, b, m in muts if b == "weight_channels_reversed") == [
        ("2x2x9x2x2x1x1", "chc"), ("3x3x9x2x2x1x1", "bmc")]


def test_first_mappings_are_submitted_first_and_the_rest_keep_their_order():
    from benchmarks import campaign
    from benchmarks.proofs import submission_order
    keys = ["proof/a/bmc/1", "proof/b/bmc/1", "mutation/c/x", "proof/c/chc/2", "proof/a/bmc/2"]
    tasks = [campaign.Task(k, print) for k in keys]
    got = [t.key for t in submission_order(tasks, ["c", "b"])]
    assert got == ["mutation/c/x", "proof/c/chc/2", "proof/b/bmc/1", "proof/a/bmc/1", "proof/a/bmc/2"]
    assert submission_order(tasks, []) == tasks


def test_preferred_shapes_go_before_everything(tmp_path):
    """--prefer: the proofs of the listed (mapping, shape) pairs first (as compile --explain prints
    them), then the --first groups; a line that names no registered mapping is refused."""
    from benchmarks import campaign
    from benchmarks.proofs import prove_task, read_pairs, submission_order
    f = tmp_path / "p.txt"
    f.write_text("flexasr.linear at 4x16x64\n\nflexasr.linear_pad 1x10x10\n")
    prefer = read_pairs(str(f))
    assert prefer == {("flexasr.linear", "4x16x64"), ("flexasr.linear_pad", "1x10x10")}
    tasks = [campaign.Task("proof/vta.add/bmc/32", prove_task, ("vta.add", "bmc", "32")),
             campaign.Task("proof/flexasr.linear/chc/2x16x64", prove_task, ("flexasr.linear", "chc", "2x16x64")),
             campaign.Task("proof/flexasr.linear/chc/4x16x64", prove_task, ("flexasr.linear", "chc", "4x16x64")),
             campaign.Task("mutation/flexasr.linear_pad/1x10x10", print, ("flexasr.linear_pad", "1x10x10", "x"))]
    got = [t.key for t in submission_order(tasks, ["vta.add"], {}, prefer)]
    assert got[0] == "proof/flexasr.linear/chc/4x16x64" and got[1] == "proof/vta.add/bmc/32"

    def prove_task(*a):           # run as __main__, the script's own function is another object
        return None
    other = [campaign.Task(t.key, prove_task if t.fn.__name__ == "prove_task" else t.fn, t.args) for t in tasks]
    assert submission_order(other, ["vta.add"], {}, prefer)[0].key == "proof/flexasr.linear/chc/4x16x64"
    f.write_text("flexasr.nope 1x2x3\n")
    with pytest.raises(campaign.CampaignError, match="line 1"):
        read_pairs(str(f))


def test_preferred_shapes_beyond_the_caps_are_planned(tmp_path):
    """--prefer with --application-shapes: a listed offload above the size caps gets its
    APPLICATION_METHOD proof; one already planned, one the mapping refuses, one of a mapping
    without an application method do not."""
    from benchmarks.proofs import planned_for
    path = tmp_path / "ledger.json"
    path.write_text("[]")
    todo, _ = proofs.tasks(True, False, 900.0, str(path), app_shapes=True)
    pairs = {("vta.dense_bias", "35x650x2600"), ("vta.dense", "16x64x32"), ("vta.dense", "0x1x1"),
             ("vta.add", "64")}
    got = planned_for(pairs, todo, 900.0, str(path))
    assert [(t.args[0], t.args[1], t.args[2]) for t in got] == [("vta.dense_bias", "chc", "35x650x2600")]
    assert got[0].fn is proofs.prove_task


def test_with_estimates_the_longest_tasks_go_first_and_unknown_ones_before_all():
    """Longest-processing-time order from an earlier campaign's times, matched across source edits
    (the key's digest left out); a task never timed goes first; --first still ranks groups."""
    from benchmarks import campaign
    from benchmarks.proofs import estimates, stable_key, submission_order
    d1, d2 = "0123456789abcdef", "fedcba9876543210"
    old = [{"key": f"proof/a/chc/1/uf/900/{d1}/l.json", "ok": True, "seconds": 5.0},
           {"key": f"proof/a/chc/2/uf/900/{d1}/l.json", "ok": True, "seconds": 50.0},
           {"key": f"mutation/b/x/bug/900/{d1}", "ok": True, "seconds": 20.0},
           {"key": f"proof/a/chc/3/uf/900/{d1}/l.json", "ok": False, "error": "boom"}]
    assert stable_key(old[0]["key"]) == "proof/a/chc/1/uf/900/l.json"
    est = estimates(old)
    assert est == {"proof/a/chc/1/uf/900/l.json": 5.0, "proof/a/chc/2/uf/900/l.json": 50.0,
                   "mutation/b/x/bug/900": 20.0}
    keys = [f"proof/a/chc/1/uf/900/{d2}/l.json", f"proof/a/chc/2/uf/900/{d2}/l.json",
            f"mutation/b/x/bug/900/{d2}", f"proof/a/chc/3/uf/900/{d2}/l.json"]
    tasks = [campaign.Task(k, print) for k in keys]
    got = [t.key.split("/")[3] if t.key.startswith("proof") else "bug" for t in submission_order(tasks, [], est)]
    assert got == ["3", "2", "bug", "1"]
    got = [t.key.split("/")[1] for t in submission_order(tasks, ["b"], est)]
    assert got == ["b", "a", "a", "a"]


def test_makespan_schedules_longest_first_on_the_workers():
    from benchmarks.proofs import makespan
    assert makespan([], 2) == 0
    assert makespan([10.0], 2) == 10.0
    assert makespan([3.0, 3.0, 2.0, 2.0, 2.0], 2) == 7.0       # 3+2+2 | 3+2 (LPT; optimum 6)
    assert makespan([5.0, 4.0, 3.0], 1) == 12.0
    assert makespan([8.0, 1.0, 1.0, 1.0, 1.0], 2) == 8.0
