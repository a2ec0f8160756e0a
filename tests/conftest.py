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

from hypothesis import settings

_LEDGER_DIR = tempfile.mkdtemp(prefix="d2a-test-ledger-")
os.environ["D2A_LEDGER"] = os.path.join(_LEDGER_DIR, "ledger.json")
os.environ["D2A_LEDGER_BASE"] = ""
atexit.register(shutil.rmtree, _LEDGER_DIR, True)

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
