"""Test configuration.

* On CI, hypothesis runs derandomized (same examples every run, no example database), so a landing
  is judged on reproducible examples; locally it explores new ones.
* The proof ledger is isolated for the whole session, subprocesses included (they inherit the
  environment): ``D2A_LEDGER`` names a fresh temporary file, so no test writes (or reads) the
  user's own ledger, and ``D2A_LEDGER_BASE`` is empty, so no test sees the committed
  ``paper_results/ledger.json`` under it unless it asks for it (``monkeypatch.setenv`` or an
  explicit ``path=``/``--path``). Tests that need a ledger of their own still pass ``path=`` or
  set ``D2A_LEDGER`` to a file under ``tmp_path``.
"""
import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import settings

_LEDGER_DIR = tempfile.mkdtemp(prefix="d2a-test-ledger-")
os.environ["D2A_LEDGER"] = os.path.join(_LEDGER_DIR, "ledger.json")
os.environ["D2A_LEDGER_BASE"] = ""
atexit.register(shutil.rmtree, _LEDGER_DIR, True)

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def no_leaked_processes():
    """Every worker, nanny, helper and task process a test's campaign starts is gone when it returns
    (multiprocessing's one resource tracker lives as long as this process, by design)."""
    import time
    import psutil
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    deadline = time.monotonic() + 10
    while True:
        left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
                and p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(p.cmdline())]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"processes left behind: {[(p.pid, p.name()) for p in left]}"
