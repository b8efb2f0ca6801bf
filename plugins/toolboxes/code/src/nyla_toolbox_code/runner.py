"""Runs inside the sandbox (bound read-only at /code/runner.py, never imported by nyla): runs
the model's code in a child process, then hands the files it left in /work/out to the host
through the results pipe, whose descriptor the child does not inherit.

Usage: ``python -I -B /code/runner.py <results fd> <max files> <max bytes>``.
"""

import base64
import json
import os
import subprocess
import sys


def main() -> int:
    results_fd, max_files, max_bytes = (int(a) for a in sys.argv[1:4])
    done = subprocess.run([sys.executable, "-I", "-B", "/code/main.py"], cwd="/work")
    files, total = 0, 0
    with open(results_fd, "w", encoding="ascii") as results:
        for root, _dirs, names in os.walk("/work/out"):
            for name in sorted(names):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, "/work/out")
                size = os.path.getsize(path) if os.path.isfile(path) else -1
                if size < 0 or files >= max_files or total + size > max_bytes:
                    results.write(json.dumps({"name": rel, "dropped": True, "size": size}) + "\n")
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(size + 1)[:size]
                files, total = files + 1, total + len(data)
                line = {"name": rel, "data": base64.b64encode(data).decode("ascii")}
                results.write(json.dumps(line) + "\n")
    # as a shell reports it: 128 + the signal that ended the program
    return 128 - done.returncode if done.returncode < 0 else done.returncode


if __name__ == "__main__":
    sys.exit(main())
