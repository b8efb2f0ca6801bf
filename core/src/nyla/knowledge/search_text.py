"""The full-text half of hybrid search: the user's query read as a web search box reads it,
matched in each chunk's own language, ranked so that rare words count more than common ones.

Reading the query (:func:`parse_query`): ``"a phrase"`` must occur as written, ``-word`` and
``-"a phrase"`` must not occur, ``OR`` is accepted; every other word *may* occur (a
full-sentence question rarely has all its words in one chunk: a chunk matching more of them,
and rarer ones, ranks higher). Words that are stop words in the query's language (detected,
or in any of the four languages when it cannot be told) are left out: ``where is the team
offsite`` searches ``team`` and ``offsite``. A query of stop words only has nothing left to
search for, which :func:`parse_query` tells the caller instead of matching noise.

Matching: each word becomes one ``tsquery`` per text search configuration (see
:mod:`nyla.knowledge.text_search`), and a chunk is matched with the one of its language, so
``Rechnungen`` finds a German chunk's ``Rechnung`` (stemmed alike) and ``Zurich`` finds
``Zürich`` (accents folded).

Ranking (BM25, :func:`_bm25_sql`): each word weighs its inverse document frequency in the
caller's scope (``ln(1 + (N - df + 0.5) / (df + 0.5))``, ``df`` counted up to
:data:`DF_CAP` chunks) times its saturating term frequency in the chunk,
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` with :data:`K1` and :data:`B`,
``dl`` the chunk's tokens and ``avgdl`` the scope's mean (from the file index); ``tf``
counts the word's occurrences in the chunk (read back from ``ts_rank``, see
:func:`_occurrences`), an occurrence in the file's name or path :data:`TITLE_WEIGHT` times.
PostgreSQL's ``ts_rank`` alone knows no document frequency and barely counts repetitions (a
second occurrence adds a quarter, a third a ninth). The candidates are first ranked by the
cheaper ``idf * ts_rank`` (the earlier ranking, still ``text_rank = "ts_rank"``,
:func:`_rank_sql`) and the best :data:`PRERANK` of them by BM25. Words found in more than
:data:`DF_CAP` chunks still rank but do not select candidates on their own: that keeps a
common word from making every chunk a candidate to rank.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any

from nyla.knowledge.language import LANGUAGES, detect, fold, is_stop_word
from nyla.knowledge.search_driver import Executor
from nyla.knowledge.search_driver import rows as _rows
from nyla.knowledge.text_search import CONFIGS

#: a query token: an optionally negated quoted phrase (the closing quote may be missing), or
#: a run of non-space characters
_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
#: a word inside a token (letters and digits)
_WORD = re.compile(r"[^\W_]+")

#: at most this many words of a query are searched (the first ones)
MAX_TERMS = 12
#: documents counted per word at most (beyond, the word is common: see the module doc)
DF_CAP = 2000
#: ``ts_rank``'s weights of labels D, C, B, A: body text is D, the file's name and path A
TITLE_WEIGHT = 2.5
RANK_WEIGHTS = f"{{0.4, 0.4, 0.4, {0.4 * TITLE_WEIGHT}}}"
#: ``ts_rank`` normalization: divide by 1 + the logarithm of the chunk's length
RANK_NORMALIZATION = 1
#: BM25's term-frequency saturation and length normalization (the usual defaults)
K1 = 1.2
B = 0.75
#: candidates ranked by ``idf * ts_rank`` whose best so many BM25 ranks again
PRERANK = 200


@dataclass
class TextQuery:
    """A query as the full-text search reads it (see :func:`parse_query`)."""

    words: list[str] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    stop_words: list[str] = field(default_factory=list)
    language: str = ""

    @property
    def searchable(self) -> bool:
        """True when something is left to look for (a word or a phrase)."""
        return bool(self.words or self.phrases)

    @property
    def terms(self) -> list[tuple[str, bool]]:
        """(text, is a phrase) of what is ranked: the words, then the phrases."""
        return [(w, False) for w in self.words] + [(p, True) for p in self.phrases]


def parse_query(query: str) -> TextQuery:
    """``query`` read as a search box reads it (phrases, ``-exclusions``, ``OR``, words),
    its stop words left out."""
    parsed = TextQuery(language=detect(query))
    stop_languages = (parsed.language,) if parsed.language else LANGUAGES
    seen: set[str] = set()
    for negated, phrase, bare in _TOKEN.findall(query):
        if bare:
            if bare == "OR" or bare == "|":
                continue
            negated, phrase = ("-", bare[1:]) if bare.startswith("-") else ("", bare)
            if not negated:
                for word in _WORD.findall(phrase):
                    folded = fold(word)
                    if is_stop_word(word, stop_languages):
                        parsed.stop_words.append(word)
                    elif folded not in seen and len(parsed.words) < MAX_TERMS:
                        seen.add(folded)
                        parsed.words.append(word)
                continue
        text = " ".join(_WORD.findall(phrase))
        if not text:
            continue
        if negated:
            parsed.excluded.append(text)
        elif any(not is_stop_word(w, stop_languages) for w in text.split()):
            parsed.phrases.append(text)
        else:
            parsed.stop_words.extend(text.split())
    return parsed


def _language_filter(code: str) -> str:
    """SQL condition: lookup row ``t`` is of language ``code`` (``""``: unknown or built
    by an older nyla)."""
    if code:
        return f"t.language = '{code}'"
    known = ", ".join(f"'{c}'" for c in CONFIGS if c)
    return f"coalesce(t.language, '') NOT IN ({known})"


def _tsquery(config: str, param: str, phrase: bool) -> str:
    function = "phraseto_tsquery" if phrase else "plainto_tsquery"
    return f"{function}('{config}', :{param})"


@functools.lru_cache(maxsize=64)
def _df_sql(phrases: tuple[bool, ...]) -> str:
    """One statement counting, per ranked term, the readable chunks it matches (up to
    :data:`DF_CAP`)."""
    counts = []
    for i, phrase in enumerate(phrases):
        match = " OR ".join(
            f"({_language_filter(code)} AND t.tsv @@ {_tsquery(config, f't{i}', phrase)})"
            for code, (config, _) in CONFIGS.items()
        )
        counts.append(
            "(SELECT count(*) FROM (SELECT 1 FROM knowledge_chunk_lookup t "
            f"WHERE t.owner_key = ANY(:keys) AND ({match}) LIMIT {DF_CAP}) x)"
        )
    return "SELECT " + ", ".join(counts)


def idf(df: int, total: int) -> float:
    """BM25's inverse document frequency of a term in ``df`` of ``total`` chunks; a count
    that reached :data:`DF_CAP` is taken as the geometric mean of the cap and the total."""
    if df >= DF_CAP:
        df = max(DF_CAP, int(math.sqrt(DF_CAP * max(total, DF_CAP))))
    total = max(total, df)
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def _query_parts(
    phrases: tuple[bool, ...], selecting: tuple[int, ...], excluded: int
) -> tuple[list[str], list[str], list[str]]:
    """(tsquery columns ``t{i}_{lang}``, the candidate condition ``m_{lang}`` of each
    language, the match of a lookup row ``t`` in its language)."""
    columns, combined, matches = [], [], []
    for code, (config, _) in CONFIGS.items():
        name = code or "simple"
        for i, phrase in enumerate(phrases):
            columns.append(f"{_tsquery(config, f't{i}', phrase)} AS t{i}_{name}")
        required = [f"t{i}_{name}" for i, phrase in enumerate(phrases) if phrase]
        chosen = [f"t{i}_{name}" for i in selecting]
        parts = required or ["(" + " || ".join(chosen) + ")"]
        parts += [f"!! phraseto_tsquery('{config}', :x{j})" for j in range(excluded)]
        combined.append(f"{' && '.join(parts)} AS m_{name}")
        matches.append(f"({_language_filter(code)} AND t.tsv @@ q.m_{name})")
    return columns, combined, matches


#: pi^2 / 6: the sum of 1 / n^2, towards which ``ts_rank`` adds up a lexeme's occurrences
_ZETA2 = math.pi**2 / 6


def _occurrences(rank: str) -> str:
    """SQL: how often a lexeme occurs in a chunk, from ``rank``, its ``ts_rank`` with every
    weight 1 and no normalization. ``ts_rank`` adds ``1 / n^2`` for the n-th occurrence and
    divides by pi^2 / 6, so the part missing to 1 is about ``1 / (n + 1/2)``: inverted, it
    counts the occurrences (exact to a tenth up to dozens) with one binary search in the
    chunk's terms, where reading them out (``unnest``) cost ten times the whole ranking."""
    return f"CASE WHEN {rank} > 0 THEN 1 / greatest({_ZETA2} * (1 - {rank}), 1e-4) - 0.5 ELSE 0 END"


@functools.lru_cache(maxsize=256)
def _bm25_sql(
    where: str, phrases: tuple[bool, ...], selecting: tuple[int, ...], excluded: int, limit: int
) -> str:
    """The BM25 ranking statement of one query shape (see the module doc), in two steps:
    the candidates ranked by ``idf * ts_rank`` (one ``ts_rank`` per word), the best
    :data:`PRERANK` of them ranked again by BM25 (two per word: counting occurrences costs
    more, measured +39 % on 18k chunks of common words when every candidate paid it). Each
    term is also made an OR of its lexemes (``o{i}_{lang}``: a term of several lexemes,
    ``half-fare``, counts their mean) for counting its occurrences."""
    columns, combined, matches = _query_parts(phrases, selecting, excluded)
    for code, (config, _) in CONFIGS.items():
        for i, phrase in enumerate(phrases):
            columns.append(
                f"CAST(replace(replace(CAST({_tsquery(config, f't{i}', phrase)} AS text), "
                f"' & ', ' | '), ' <-> ', ' | ') AS tsquery) AS o{i}_{code or 'simple'}"
            )
    ranks, counts, score = [], [], []
    for i in range(len(phrases)):
        for kind, weights in (("r", "{1,1,1,1}"), ("a", "{0,0,0,1}")):
            cases = " ".join(
                f"WHEN {_language_filter(code)} THEN ts_rank('{weights}', t.tsv, q.o{i}_{code})"
                for code in CONFIGS
                if code
            )
            ranks.append(
                f"CASE {cases} ELSE ts_rank('{weights}', t.tsv, q.o{i}_simple) END AS {kind}{i}"
            )
        # the name and path (weight A) count TITLE_WEIGHT times
        counts.append(f"{_occurrences(f'r.r{i}')} + {TITLE_WEIGHT - 1} * sign(r.a{i}) AS f{i}")
        score.append(
            f":w{i} * s.f{i} * {K1 + 1} / (s.f{i} + {K1} * ({1 - B} + {B} * t.tokens "
            "/ coalesce(CAST(:avgdl AS float8), nullif(t.tokens, 0), 1)))"
        )
    prerank = max(PRERANK, int(limit))
    return (
        f"WITH p AS MATERIALIZED (SELECT {', '.join(columns)}), "
        f"q AS MATERIALIZED (SELECT p.*, {', '.join(combined)} FROM p), "
        "found AS MATERIALIZED (SELECT c.id, c.token_count AS tokens, t.tsv, t.language "
        "FROM q, knowledge_chunk_lookup t JOIN knowledge_chunk c ON c.id = t.chunk_id "
        f"WHERE t.owner_key = ANY(:keys) AND {where} AND ({' OR '.join(matches)}) "
        f"ORDER BY {_ts_rank_score(len(phrases))} DESC, c.id LIMIT {prerank}) "
        "SELECT t.id FROM q, found t "
        f"CROSS JOIN LATERAL (SELECT {', '.join(ranks)}) r "
        f"CROSS JOIN LATERAL (SELECT {', '.join(counts)}) s "
        f"ORDER BY ({' + '.join(score)}) DESC, t.id LIMIT {int(limit)}"
    )


def _ts_rank_score(terms: int) -> str:
    """SQL: ``idf * ts_rank`` summed over the terms, in lookup row ``t``'s language."""
    scores = []
    for code in CONFIGS:
        name = code or "simple"
        score = " + ".join(
            f":w{i} * ts_rank('{RANK_WEIGHTS}', t.tsv, q.t{i}_{name}, {RANK_NORMALIZATION})"
            for i in range(terms)
        )
        scores.append(f"WHEN {_language_filter(code)} THEN {score}" if code else f"ELSE {score}")
    return f"(CASE {' '.join(scores)} END)"


@functools.lru_cache(maxsize=256)
def _rank_sql(
    where: str, phrases: tuple[bool, ...], selecting: tuple[int, ...], excluded: int, limit: int
) -> str:
    """The ranking statement of one query shape: ``phrases`` says which ranked terms are
    phrases, ``selecting`` which words select candidates, ``excluded`` how many excluded
    terms there are."""
    columns, combined, matches = _query_parts(phrases, selecting, excluded)
    return (
        f"WITH p AS MATERIALIZED (SELECT {', '.join(columns)}), "
        f"q AS MATERIALIZED (SELECT p.*, {', '.join(combined)} FROM p) "
        "SELECT c.id FROM q, knowledge_chunk_lookup t "
        "JOIN knowledge_chunk c ON c.id = t.chunk_id "
        f"WHERE t.owner_key = ANY(:keys) AND {where} AND ({' OR '.join(matches)}) "
        f"ORDER BY {_ts_rank_score(len(phrases))} DESC, c.id LIMIT {int(limit)}"
    )


async def text_ranks(
    session: Executor,
    *,
    where: str,
    params: dict[str, Any],
    query: str | TextQuery,
    limit: int,
    total: int | None = None,
    avg_tokens: float | None = None,
    method: str = "bm25",
) -> list[int]:
    """Chunk ids matching ``query`` in full text, best first (``where`` and ``params``: the
    search's scope filter; ``total``: readable chunks, for the word weights; ``avg_tokens``:
    their mean length in tokens; ``method``: ``bm25`` or ``ts_rank``, see the module doc).
    The text search configurations must exist
    (:func:`~nyla.knowledge.text_search.ensure_configs`, which the service's searches and
    writes see to)."""
    parsed = parse_query(query) if isinstance(query, str) else query
    terms = parsed.terms
    if not terms:
        return []
    bound = {**params, **{f"t{i}": text for i, (text, _) in enumerate(terms)}}
    bound |= {f"x{j}": text for j, text in enumerate(parsed.excluded)}
    phrases = tuple(phrase for _, phrase in terms)
    counts = [int(n) for n in (await _rows(session, _df_sql(phrases), bound))[0]]
    if total is None:
        total = max(counts)
    weights = [idf(df, total) for df in counts]
    words = [i for i, (_, phrase) in enumerate(terms) if not phrase and counts[i] > 0]
    selecting = tuple(i for i in words if counts[i] < DF_CAP) or tuple(words)
    if not selecting and not parsed.phrases:
        return []
    bound |= {f"w{i}": w for i, w in enumerate(weights)}
    if method == "bm25":
        # unknown: every chunk taken as long as the mean (no length normalization)
        bound["avgdl"] = None if avg_tokens is None else max(float(avg_tokens), 1.0)
        sql = _bm25_sql(where, phrases, selecting, len(parsed.excluded), limit)
    else:
        sql = _rank_sql(where, phrases, selecting, len(parsed.excluded), limit)
    return [int(r[0]) for r in await _rows(session, sql, bound)]
