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


class RowTable:
    """The embedding table of a safetensors file (float16 there), each row read from the file
    the first time a token needs it and widened to float32 (exactly: every float16 is a
    float32), into an anonymous mapping of the table's size: only the pages of rows written
    become resident. Indexing 10,000 notes uses about 550 of the 32,000 tokens; a table read
    whole was 16 MiB of every indexing run's peak, and a table mapped from the file was too
    after a few thousand notes (the kernel maps the file's neighbouring pages with each one
    read). Rows are kept as float32 because numpy sums float16 rows about nine times slower
    than float32 ones (a round summary's ~110 rows: ~0.45 vs 0.05 ms); a row used costs 1 KiB
    instead of 512 bytes, and scattered rows touch one page each either way."""

    def __init__(self, path: Path) -> None:
        import json
        import mmap

        import numpy as np

        with path.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            entry = json.loads(f.read(size))["embedding.weight"]
        if entry["dtype"] != "F16":
            raise ValueError(f"{path.name}: embedding.weight is {entry['dtype']}, not F16")
        begin, end = entry["data_offsets"]
        rows, dims = entry["shape"]
        if end - begin != 2 * rows * dims or path.stat().st_size < 8 + size + end:
            raise ValueError(f"{path.name}: embedding.weight's bytes do not fit {rows}x{dims}")
        self.path = path
        self.shape = (rows, dims)
        self.stored = np.dtype("<f2")  # as the file has it
        self.dtype = np.dtype(np.float32)  # as the rows are kept
        self._start = 8 + size + begin
        # zero pages until a row is written
        self._buffer = mmap.mmap(-1, rows * dims * self.dtype.itemsize)
        self._rows = np.frombuffer(self._buffer, dtype=self.dtype).reshape(self.shape)
        self._read = np.zeros(rows, dtype=bool)
        self._lock = threading.Lock()

    def take(self, ids: Any) -> Any:
        """The rows of token ``ids`` (an int array), read from the file where not yet."""
        missing = ids[~self._read[ids]]
        if missing.size:
            self._fill(missing)
        return self._rows[ids]

    def full(self) -> Any:
        """The whole table (every row read)."""
        import numpy as np

        return self.take(np.arange(self.shape[0]))

    def _fill(self, ids: Any) -> None:
        import numpy as np

        width = self.shape[1] * self.stored.itemsize
        row = bytearray(width)
        with self._lock, self.path.open("rb", buffering=0) as f:
            # dict.fromkeys, not np.unique: that imports numpy.ma (~1 MiB) on first use
            for token in dict.fromkeys(ids.tolist()):
                if self._read[token]:
                    continue  # another thread read it meanwhile
                f.seek(self._start + token * width)
                if f.readinto(row) != width:
                    raise ValueError(f"{self.path.name}: row {token} is cut short")
                self._rows[token] = np.frombuffer(row, dtype=self.stored)
                self._read[token] = True


def _read_table(path: Path) -> RowTable:
    """The embedding table of the safetensors file ``path`` (rows read on first use)."""
    return RowTable(path)


def embed_texts(texts: list[str]) -> list[list[float]]:
    """Unit-length mean token embeddings of ``texts`` (blocking; run it in a thread). A text
    with no tokens gets the zero vector, which is similar to nothing."""
    import numpy as np

    tokenizer, table = _load()
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    # a few texts at a time: the gathered token rows stay small enough for the CPU cache
    for start in range(0, len(texts), BATCH):
        # one text at a time on this (worker) thread: encode_batch hands a batch to the
        # tokenizer's own thread pool, whose threads each get a malloc arena (~3 MiB more
        # peak when indexing 10,000 notes, measured) for the same CPU time
        encodings = [
            tokenizer.encode(text, add_special_tokens=False)
            for text in texts[start : start + BATCH]
        ]
        for row, encoding in enumerate(encodings, start):
            if encoding.ids:
                ids = np.asarray(encoding.ids, dtype=np.intp)
                out[row] = table.take(ids).sum(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.where(norms == 0, 1.0, norms)
    return out.tolist()  # type: ignore[no-any-return]
