"""``python -m benchmarks.models NAME``: import one of the paper's six applications and run one
random input on the host runtime, compared with onnxruntime and torch (``compile.run`` with the
short names of this package). Options as ``python -m compile.run``; exit 2 on a user error."""
import sys

from benchmarks.models import get
from compile.run import main

if __name__ == "__main__":
    sys.exit(main(resolve=lambda name, seed: get(name, seed=seed), prog="python -m benchmarks.models"))
