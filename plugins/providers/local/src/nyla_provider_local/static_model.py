"""WordLlama ``l2_supercat`` static embeddings: one 256-dimensional vector per token of a
32,000-token vocabulary, averaged over a text and normalised. The weights (16 MB, float16)
and the tokenizer ship inside the ``wordllama`` wheel; they are read here with ``tokenizers``
and ``numpy``. ``wordllama`` itself is never imported: it configures the root logger at import
time and downloads missing files from the network. Texts are tokenized per space-separated
piece with the pieces' ids kept (``TokenCache``): the same ids, ~10x less time."""

from __future__ import annotations

import importlib.util
import re
import threading
from array import array
from pathlib import Path
from typing import Any

MODEL_NAME = "wordllama-l2-256"
DIMENSIONS = 256
WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
#: tokens per text taken into the average; a chunk is far shorter, this bounds a stray giant
MAX_TOKENS = 8192

_lock = threading.Lock()
_model: tuple[TokenCache, RowTable] | None = None


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


def _load() -> tuple[TokenCache, RowTable]:
    global _model
    with _lock:
        if _model is None:
            from tokenizers import Tokenizer

            root = package_dir()
            assert root is not None, "checked by missing_reason()"
            tokenizer = Tokenizer.from_file(str(root / TOKENIZER))
            tokenizer.no_padding()
            tokenizer.enable_truncation(MAX_TOKENS)
            _model = (TokenCache(tokenizer), _read_table(root / WEIGHTS))
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


SPACE = " "
METASPACE = "\u2581"
#: the normalizer under which a text's pieces are split at its spaces (checked when built)
NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": METASPACE},
        {"type": "Replace", "pattern": {"String": SPACE}, "content": METASPACE},
    ],
}
#: pieces kept; the dict is emptied when full (~130 bytes for a word: ~0.5 MiB full)
MAX_PIECES = 4096
#: longer pieces (a URL, a hash, base64) are rarely seen twice; they are tokenized each time
MAX_PIECE_CHARS = 64
#: the first piece's leading spaces belong to it; every other space that follows a character
#: other than a space or a ``▁`` starts the next piece (it becomes that piece's prepended ``▁``)
_PIECE_START = re.compile(r"(?<=[^ \u2581]) ")


def why_not_exact(tokenizer: Any) -> str | None:
    """Why ``tokenizer``'s ids cannot be put together per piece, or ``None`` when they can."""
    import json

    normalizer = tokenizer.normalizer
    if normalizer is None or json.loads(normalizer.__getstate__()) != NORMALIZER:
        return "the normalizer is not Prepend('▁') + Replace(' ', '▁')"
    if tokenizer.pre_tokenizer is not None:
        return "there is a pre-tokenizer"
    if tokenizer.padding is not None:
        return "padding is on"
    truncation = tokenizer.truncation
    if truncation is not None and (truncation["direction"] != "right" or truncation["stride"]):
        return "truncation does not keep the first tokens"
    model = tokenizer.model
    if type(model).__name__ != "BPE" or model.dropout or model.continuing_subword_prefix:
        return "the model is not a deterministic BPE without subword prefixes"
    if model.end_of_word_suffix:
        return "the model has an end-of-word suffix"
    if any(token.normalized for token in tokenizer.get_added_tokens_decoder().values()):
        return "an added token is matched on normalized text"
    # a merge's result is in the vocabulary (the BPE model refuses merges that are not), so a
    # merge across a piece's start would leave a token with a ▁ after another character
    size = tokenizer.get_vocab_size(with_added_tokens=False)
    for token_id in range(size):
        token = model.id_to_token(token_id)
        if token is not None and METASPACE in token.lstrip(METASPACE):
            return f"token {token!r} joins a character to a following ▁"
    return None


class TokenCache:
    """Token ids of texts (``encode``), exactly as ``tokenizer.encode(text,
    add_special_tokens=False)`` gives them, put together from ids kept per piece.

    Llama's tokenizer has no pre-tokenizer: its normalizer prepends ``▁`` and turns each space
    into ``▁``, and BPE then runs over the whole text as one word, ~0.5 µs a character and more
    than linear (a 600-character text 0.2-0.4 ms). When no merge joins a symbol ending in
    another character to one starting with ``▁`` (``why_not_exact`` checks the vocabulary), a
    text's ids are the concatenation of its pieces' ids, a piece being a run of ``▁`` and the
    characters up to the next ``▁`` that follows another character: no merge crosses a
    piece's start, so each piece merges as it would alone, and words repeat. A text holding an
    added token such as ``<s>`` (matched before normalization), or any text of a tokenizer the
    check refuses, gets a plain encode. The kept ids are immutable bytes and the dict is only
    read, set and emptied, each one step under the GIL, so threads may share one cache."""

    def __init__(self, tokenizer: Any, max_pieces: int = MAX_PIECES) -> None:
        self.tokenizer = tokenizer
        self.not_exact = why_not_exact(tokenizer)
        self.max_pieces = max_pieces
        added = [t.content for t in tokenizer.get_added_tokens_decoder().values()]
        self._added = re.compile("|".join(map(re.escape, added))) if added else None
        truncation = tokenizer.truncation
        self._max_bytes = 4 * truncation["max_length"] if truncation else None
        self._tokenize = tokenizer.model.tokenize
        self._pieces: dict[str, bytes] = {}
        if self.not_exact is None:
            # the BPE model's own cache (10,000 words) would keep every piece a second time:
            # ~2.3 MiB more RSS when indexing, for no time saved
            getattr(tokenizer.model, "_resize_cache", lambda capacity: None)(0)

    def encode(self, text: str) -> bytes:
        """The ids of ``text`` as native 32-bit integers (``numpy.frombuffer(..., int32)``)."""
        if self.not_exact is not None or (self._added and self._added.search(text)):
            return array("i", self.tokenizer.encode(text, add_special_tokens=False).ids).tobytes()
        if not text:
            return b""  # the normalizer prepends nothing to an empty text
        if text[0] == SPACE or "  " in text or METASPACE in text:
            parts = _PIECE_START.split(text)
        else:  # the same split here, ~4x faster
            parts = text.split(SPACE)
        pieces = self._pieces
        chunks = []
        for part in parts:
            ids = pieces.get(part)
            if ids is None:
                ids = self._piece(part)
                if len(part) <= MAX_PIECE_CHARS:
                    if len(pieces) >= self.max_pieces:
                        pieces.clear()
                    pieces[part] = ids
            chunks.append(ids)
        return b"".join(chunks)[: self._max_bytes]

    def _piece(self, part: str) -> bytes:
        normalized = METASPACE + part.replace(SPACE, METASPACE)
        return array("i", [token.id for token in self._tokenize(normalized)]).tobytes()


def embed_matrix(texts: list[str]) -> Any:
    """Unit-length mean token embeddings of ``texts`` as one float32 array, a row per text
    (blocking; run a big batch in a thread). A text with no tokens gets the zero vector,
    which is similar to nothing.

    The rows of every text are read from the table in one step, the texts with the same
    number of tokens next to each other; each such group's rows are summed as one block of
    shape (texts, tokens, dimensions) along its tokens, which adds them one after the other
    in order, as ``sum(axis=0)`` of each text alone does (a round's summaries mostly share a
    few token counts: one numpy sum per count instead of per text, ~20k instructions a
    text). A sum over all texts' rows at once, e.g. ``reduceat``, adds them pairwise and
    rounds differently."""
    import numpy as np

    tokens, table = _load()
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    # one text at a time on this (worker) thread: encode_batch hands a batch to the tokenizer's
    # own thread pool, whose threads each get a malloc arena (~3 MiB more peak when indexing
    # 10,000 notes, measured) for the same CPU time
    encoded = [tokens.encode(text) for text in texts]
    by_count: dict[int, list[int]] = {}
    for index, ids in enumerate(encoded):
        if ids:
            by_count.setdefault(len(ids) >> 2, []).append(index)
    if by_count:
        grouped = b"".join(encoded[i] for members in by_count.values() for i in members)
        rows, start = table.take(np.frombuffer(grouped, dtype=np.int32)), 0
        for count, members in by_count.items():
            end = start + count * len(members)
            block = rows[start:end].reshape(len(members), count, table.shape[1])
            out[members] = block.sum(axis=1)
            start = end
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.where(norms == 0, 1.0, norms)
    return out


def embed_texts(texts: list[str]) -> list[list[float]]:
    """:func:`embed_matrix` as lists of floats."""
    return embed_matrix(texts).tolist()  # type: ignore[no-any-return]
