"""benchmarks.regenerate: the step list, the README it writes, and its argument errors."""
import importlib.util

from benchmarks import regenerate as R


def test_every_step_runs_an_importable_module_and_its_results_are_committed():
    for s in R.STEPS:
        assert importlib.util.find_spec(s.argv[0]) is not None, s.argv[0]
        for out in s.outputs:
            assert (R.RESULTS / out).exists(), f"{s.name}: paper_results/{out} is missing"


def test_readme_copies_the_measured_table_and_names_missing_files(tmp_path):
    (tmp_path / "table1.md").write_text("# T\n\nMeasured by `python -m benchmarks.table1` on vm.\n\n"
                                        "| a | b |\n|---|---|\n| 1 | 2.5 |\n\ntext after\n")
    text = R.readme(tmp_path)
    assert "| 1 | 2.5 |" in text and "Measured by `python -m benchmarks.table1` on vm." in text
    assert "text after" not in text
    assert "_table2.md: not generated yet._" in text
    assert "`python -m benchmarks.proofs --quick`" in text


def test_an_unknown_step_is_refused_with_exit_2(capsys):
    assert R.main(["--only", "table9", "--readme-only"]) == 2
    assert "table9" in capsys.readouterr().err
