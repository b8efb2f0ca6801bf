"""`make demo` works on a plain install: none of its steps imports pytest (the scripted model
lives in nyla.ai.scripted, not in the pytest-dependent nyla.testing)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
sys.modules["pytest"] = None          # as on an install without the testing extra
sys.modules["pytest_asyncio"] = None
from nyla.demo import DEMO_STEPS, _load_step
for _title, target in DEMO_STEPS:
    assert _load_step(target) is not None, target
print("ok")
"""


def test_demo_steps_import_without_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
