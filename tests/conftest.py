"""Test configuration: on CI, hypothesis runs derandomized (same examples every run, no example
database), so a landing is judged on reproducible examples; locally it explores new ones."""
import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
