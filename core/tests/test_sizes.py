"""The make lint size check (.ci/sizes.py): which files it reads, plugin sources among them,
and what it reports of a long function."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "sizes.py"


def _script():
    spec = importlib.util.spec_from_file_location("sizes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kernel_the_hosts_and_every_plugin_source_are_checked():
    names = {p.relative_to(ROOT).as_posix() for p in _script().checked_files()}
    assert "core/src/nyla/kernel.py" in names
    assert "plugins/features/trustee/src/nyla_feature_trustee/generator.py" in names
    assert any(n.startswith("plugins/providers/local/src/") for n in names)
    assert any(n.startswith("hosts/web/") for n in names)
    # plugin tests are not held to the limits (sample data lives there)
    assert not any(n.startswith("plugins/") and "/tests/" in n for n in names)
    assert not any(".venv" in n for n in names)


def test_a_function_over_the_limit_is_reported_with_its_line(tmp_path, monkeypatch):
    sizes = _script()
    monkeypatch.setattr(sizes, "ROOT", tmp_path)
    body = "\n".join(f"    x{i} = {i}" for i in range(sizes.MAX_FUNCTION_LINES))
    module = tmp_path / "long.py"
    module.write_text(f'"""A module."""\n\n\ndef short():\n    pass\n\n\ndef long():\n{body}\n')
    assert sizes.excesses(module) == [
        f"long.py:8: long() has {sizes.MAX_FUNCTION_LINES + 1} lines "
        f"(limit {sizes.MAX_FUNCTION_LINES})"
    ]
