"""Paths and URLs a connector builds from item ids and names, confined to where they belong.

Ids, paths and file names reach a connector from a model's tool call, so each may be hostile:
``../../etc/passwd``, ``%2e%2e%2f``, ``..\\``, a NUL, a full-width ``．．／`` that a server
folds to ``../``, a ``?`` or ``#`` that would turn the rest of an id into a query. Every
helper here refuses such a value with :class:`~nyla.connections.errors.UnsafePathError` (a
typed connector error the tool layer answers as ``UNSAFE_PATH``) before any request is made:

- :func:`safe_segment`: one file name or id, checked (no separator, no ``..``, no control
  character, no encoded or look-alike form of them, not too long);
- :func:`confine_path`: a path below a root from any number of parts, normalised
  (``a//./b`` is ``a/b``; a leading ``/`` means the root), never above the root;
- :func:`url_segment` / :func:`url_path`: a vendor id as exactly one URL path segment, a
  confined path as URL segments (percent-encoded, so ``?``, ``#`` and ``%`` stay data);
- :func:`confine_url`: a link a vendor handed out (a next-page URL, a CalDAV href) resolved
  against a base URL, refused unless it stays on that host and below that path;
- :func:`check_request_url`: the last check of the vendor HTTP layer on every request.

A value is checked in the form it has and in every form a server might decode it to
(percent-decoded up to three times, NFKC-folded), so a name that is harmless only because
nobody decodes it is refused too.
"""

from __future__ import annotations

import posixpath
import unicodedata
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit

from nyla.connections.errors import UnsafePathError

#: the longest file name (UTF-8 bytes) most file systems and WebDAV servers keep
MAX_NAME_BYTES = 255
#: the longest vendor id (characters); Outlook's message ids are ~150, attachment ids ~300
MAX_ID_CHARS = 1024
#: the longest path (UTF-8 bytes) built below a root
MAX_PATH_BYTES = 4096
#: characters that are no separator to Python but that servers and file systems may fold
#: into one (NFKC maps the full-width and small forms itself)
SEPARATOR_LOOKALIKES = frozenset("\u2215\u2044\u29f8\u29f9\u2216\u29f5\u20e5")
#: characters that are no full stop but fold or display as one
DOT_LOOKALIKES = frozenset("\u3002\uff61\u2024\u2025\u2026\ufe52\u0701\u2e33")
_DECODE_ROUNDS = 3


def _fail(message: str, service: str | None) -> UnsafePathError:
    prefix = f"{service}: " if service else ""
    return UnsafePathError(prefix + message, service=service)


def _decodings(value: str) -> list[str]:
    """``value`` and what percent-decoding makes of it, once to :data:`_DECODE_ROUNDS`."""
    forms = [value]
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote(forms[-1], errors="surrogateescape")
        if decoded == forms[-1]:
            break
        forms.append(decoded)
    return forms


def _only_dots(text: str) -> bool:
    """Whether ``text`` is a dot segment in some server's eyes: dots and blanks only
    (Windows drops trailing dots and blanks), or that before a ``;`` parameter (``..;``)."""
    head = text.split(";", 1)[0]
    folded = "".join("." if ch in DOT_LOOKALIKES else ch for ch in head)
    return bool(folded) and "." in folded and not folded.strip(". \t")


def _problem(segment: str) -> str | None:
    """Why ``segment`` cannot be one path segment, or ``None`` when it can."""
    forms = _decodings(segment)
    for form in forms[:-1]:
        try:  # %c0%af and friends: servers that decode leniently have read them as "/"
            unquote(form, errors="strict")
        except UnicodeDecodeError:
            return "holds a percent-encoding that is not UTF-8"
    for form in forms:
        folded = unicodedata.normalize("NFKC", form)
        for text in (form, folded):
            if any(unicodedata.category(ch) == "Cc" for ch in text):
                return "holds a control character"
            if "/" in text or "\\" in text:
                return "holds a path separator (or an encoded one)"
            if any(ch in SEPARATOR_LOOKALIKES for ch in text):
                return "holds a character that looks like a path separator"
            if _only_dots(text):
                return "is a dot segment (`..`)"
    return None


def safe_segment(
    value: str,
    *,
    what: str = "name",
    service: str | None = None,
    max_bytes: int = MAX_NAME_BYTES,
) -> str:
    """``value`` unchanged when it is a safe single path segment (a file name, a folder
    name); :class:`UnsafePathError` when it is empty, a dot segment, holds a separator,
    a control character or an encoded or look-alike form of them, or is longer than
    ``max_bytes`` in UTF-8."""
    if not isinstance(value, str) or not value:
        raise _fail(f"an empty {what}", service)
    size = len(value.encode("utf-8", "surrogateescape"))
    if size > max_bytes:
        raise _fail(f"the {what} is {size} bytes long; at most {max_bytes} are allowed", service)
    problem = _problem(value)
    if problem:
        raise _fail(f"the {what} {value[:80]!r} {problem}", service)
    return value


def url_segment(value: str, *, what: str = "id", service: str | None = None) -> str:
    """A vendor id as exactly one URL path segment: checked (:func:`safe_segment`, up to
    :data:`MAX_ID_CHARS` characters) and percent-encoded, so ``?``, ``#``, ``&`` or ``%``
    in it stay part of the id."""
    safe_segment(value, what=what, service=service, max_bytes=MAX_ID_CHARS * 4)
    if len(value) > MAX_ID_CHARS:
        raise _fail(f"the {what} has {len(value)} characters; at most {MAX_ID_CHARS}", service)
    return quote(value, safe="")


def confine_path(root: str, *parts: str, service: str | None = None) -> str:
    """The normalised path of ``parts`` below ``root`` (``root/a/b``; just ``a/b`` for an
    empty root). Each part may hold several ``/``-separated segments; empty and ``.``
    segments are dropped and a leading ``/`` means the root, so the result never leaves it.
    A ``..`` segment, a backslash, a control character, or an encoded or look-alike form of
    them raises :class:`UnsafePathError`."""
    segments: list[str] = []
    for part in parts:
        if not isinstance(part, str):
            raise _fail(f"a path must be text, not {type(part).__name__}", service)
        for segment in part.split("/"):
            if segment in ("", "."):
                continue
            segments.append(safe_segment(segment, what="path segment", service=service))
    joined = "/".join(segments)
    size = len(joined.encode("utf-8", "surrogateescape"))
    if size > MAX_PATH_BYTES:
        raise _fail(f"the path is {size} bytes long; at most {MAX_PATH_BYTES}", service)
    if not root:
        return joined
    base = root.rstrip("/")
    return f"{base}/{joined}" if joined else (base or "/")


def url_path(path: str) -> str:
    """A path from :func:`confine_path` as URL path segments, each percent-encoded (the
    ``/`` between them kept)."""
    return "/".join(quote(segment, safe="") for segment in path.split("/"))


def _dir(path: str) -> str:
    return path if path.endswith("/") else path + "/"


def _under(path: str, base_path: str) -> bool:
    """Whether the URL path ``path`` (decoded, folded, dot segments resolved) is
    ``base_path`` or below it."""
    folded = unicodedata.normalize("NFKC", _decodings(path)[-1]).replace("\\", "/")
    resolved = posixpath.normpath("/" + folded.lstrip("/"))
    base = posixpath.normpath("/" + unquote(base_path).lstrip("/"))
    return resolved == base or resolved.startswith(_dir(base))


def _dot_segments(path: str) -> bool:
    """Whether a raw URL path holds a dot segment in any decoded form (``%2e%2e``)."""
    return any(
        _only_dots(unicodedata.normalize("NFKC", segment))
        for form in _decodings(path)
        for segment in form.replace("\\", "/").split("/")
    )


def confine_url(base: str, ref: str, *, service: str | None = None, query: bool = True) -> str:
    """``ref`` (an absolute URL, an absolute path or a relative reference a vendor handed
    out) resolved against ``base``, without its fragment. :class:`UnsafePathError` unless
    it is on ``base``'s scheme, host and port, carries no credentials, its path is
    ``base``'s path or below it and every segment of that path passes
    :func:`safe_segment`'s checks; with ``query=False`` a ``?`` or ``#`` is refused too
    (for links that name a resource, such as a CalDAV href)."""
    if not isinstance(ref, str) or not ref:
        raise _fail("an empty link", service)
    if any(unicodedata.category(ch) == "Cc" for ch in ref) or "\\" in ref:
        raise _fail(f"the link {ref[:80]!r} holds a control character or a backslash", service)
    if not query and ("?" in ref or "#" in ref):
        raise _fail(f"the link {ref[:80]!r} carries a query or fragment", service)
    target = urlsplit(urljoin(base, ref))
    home = urlsplit(base)
    same_origin = (target.scheme, target.hostname, target.port) == (
        home.scheme,
        home.hostname,
        home.port,
    )
    if not same_origin or target.username or target.password:
        raise _fail(f"the link {ref[:80]!r} leads off {home.scheme}://{home.netloc}", service)
    if _dot_segments(urlsplit(ref).path) or not _under(target.path, home.path or "/"):
        raise _fail(f"the link {ref[:80]!r} leads outside {home.path or '/'}", service)
    if len(target.path) > MAX_PATH_BYTES:
        raise _fail(f"the link is {len(target.path)} characters long", service)
    for segment in target.path.split("/"):
        problem = _problem(segment) if segment else None
        if problem or len(segment) > MAX_ID_CHARS:
            raise _fail(f"the link {ref[:80]!r} {problem or 'is too long'}", service)
    return urlunsplit((target.scheme, target.netloc, target.path, target.query, ""))


def check_request_url(
    base_url: str, given: str, sent_path: str, *, service: str | None = None
) -> None:
    """The vendor HTTP layer's last check of a request: the path sent (``sent_path``, raw)
    holds no dot segment in any decoded form, and a ``given`` URL relative to ``base_url``
    stayed below ``base_url``'s path. Raises :class:`UnsafePathError`."""
    if _dot_segments(sent_path):
        raise _fail(f"the request path {sent_path[:120]!r} holds a dot segment", service)
    relative = not urlsplit(given).scheme
    base_path = urlsplit(base_url).path if base_url else ""
    if relative and base_path not in ("", "/") and not _under(sent_path, base_path):
        raise _fail(f"the request path {given[:120]!r} leads outside {base_path}", service)
