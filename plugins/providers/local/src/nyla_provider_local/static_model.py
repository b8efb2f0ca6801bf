"""WordLlama ``l2_supercat`` static embeddings: one 256-dimensional vector per token of a
32,000-token vocabulary, averaged over a text and normalised. The weights (16 MB, float16)
and the tokenizer ship inside the ``wordllama`` wheel; they are read here with ``tokenizers``
and ``numpy``. ``wordllama`` itself is never imported: it configures the root logger at import
time and downloads missing files from the network."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

MODEL_NAME = "wordllama-l2-256"
DIMENSIONS = 256
WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
#: tokens per text taken into the average; a chunk is far shorter, this bounds a stray giant
MAX_TOKENS = 8192
BATCH = 64

_lock = threading.Lock()
_model: tuple[Any, Any] | None = None


def package_dir() -> Path | None:
    """Where the ``wordllama`` package is installed (found without importing it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def loaded() -> bool:
    """Whether the weights are in memory (embedding then needs no file and no import)."""
    return _model is not None


def missing_reason() -> str | None:
    """Why the model cannot run here, or ``None`` when its files and libraries are present
    (or already loaded: the look-up walks the import path, which costs more than embedding a
    short text, and every embedding call asks)."""
    if _model is not None:
        return None
    root = package_dir()
    if root is None:
        return "the wordllama package (which carries the weights) is not installed"
    for part in (WEIGHTS, TOKENIZER):
        if not (root / part).is_file():
            return f"wordllama is installed without {part.as_posix()}"
    for module in ("numpy", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return None


def _load() -> tuple[Any, Any]:
    global _model
    with _lock:
        if _model is None:
            from tokenizers import Tokenizer

            root = package_dir()
            assert root is not None, "checked by missing_reason()"
            tokenizer = Tokenizer.from_file(str(root / TOKENIZER))
            tokenizer.no_padding()
            tokenizer.enable_truncation(MAX_TOKENS)
            _model = (tokenizer, _read_table(root / WEIGHTS))
        return _model


def _read_table(path: Path) -> Any:
    """The embedding table of a safetensors file, mapped read-only from the file and kept as
    shipped, float16 (:func:`embed_texts` sums in float32, which gives the same bits as
    summing a float32 copy). Mapped, not read: only the pages of tokens a process embeds
    become resident (indexing 10,000 notes touches a fraction of the 32,000 rows; a read
    table was 16 MiB of every indexing run's peak), and they are the page cache's, shared
    by every nyla process on the machine. The format: an 8-byte little-endian header size,
    a JSON header naming each tensor's dtype, shape and byte range, then the data."""
    import json

    import numpy as np

    with path.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        entry = json.loads(f.read(size))["embedding.weight"]
    if entry["dtype"] != "F16":
        raise ValueError(f"{path.name}: embedding.weight is {entry['dtype']}, not F16")
    begin, end = entry["data_offsets"]
    shape = tuple(entry["shape"])
    if (end - begin) != 2 * shape[0] * shape[1]:
        raise ValueError(f"{path.name}: embedding.weight's bytes do not fit its shape {shape}")
    return np.memmap(path, dtype="<f2", mode="r", offset=8 + size + begin, shape=shape)


def embed_texts(texts: list[str]) -> list[list[float]]:
    """Unit-length mean token embeddings of ``texts`` (blocking; run it in a thread). A text
    with no tokens gets the zero vector, which is similar to nothing."""
    import numpy as np

    tokenizer, table = _load()
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    # a few texts at a time: the gathered token rows stay small enough for the CPU cache
    for start in range(0, len(texts), BATCH):
        encodings = tokenizer.encode_batch(texts[start : start + BATCH], add_special_tokens=False)
        for row, encoding in enumerate(encodings, start):
            if encoding.ids:
                out[row] = table[encoding.ids].sum(axis=0, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.where(norms == 0, 1.0, norms)
    return out.tolist()  # type: ignore[no-any-return]
