"""Fonts of produced PDFs. reportlab's built-in fonts (Helvetica, Times, Courier) carry
Latin-1 only: Greek, Cyrillic or a typographic dash would come out as black boxes. DejaVu
(Latin, Greek, Cyrillic and many symbols; no CJK) is embedded instead when its TTF files are
on the machine — Debian's fonts-dejavu-core, or the copy in matplotlib's wheel (a dependency
for charts). Nothing is downloaded; without them the built-in fonts are used, with a
warning."""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

#: family -> (regular, bold) TTF file names
DEJAVU = {
    "sans": ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf"),
    "serif": ("DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf"),
    "mono": ("DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf"),
}
#: family -> (regular, bold) PDF standard fonts (Latin-1 only)
BUILTIN = {
    "sans": ("Helvetica", "Helvetica-Bold"),
    "serif": ("Times-Roman", "Times-Bold"),
    "mono": ("Courier", "Courier-Bold"),
}


def font_dirs() -> list[Path]:
    """Where DejaVu's TTF files are looked for, in order."""
    dirs = [Path("/usr/share/fonts/truetype/dejavu")]
    spec = importlib.util.find_spec("matplotlib")
    for location in (spec.submodule_search_locations or []) if spec else []:
        dirs.append(Path(location) / "mpl-data" / "fonts" / "ttf")
    return dirs


def load_fonts(dirs: Iterable[Path]) -> dict[str, tuple[str, str]]:
    """Family -> (regular, bold) font names: DejaVu's, registered with reportlab, where both
    files of the family are found in ``dirs``; the built-in fonts otherwise."""
    from reportlab.lib.fonts import addMapping
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    dirs = list(dirs)
    out: dict[str, tuple[str, str]] = {}
    for family, files in DEJAVU.items():
        paths = [next((d / f for d in dirs if (d / f).is_file()), None) for f in files]
        if paths[0] is None or paths[1] is None:
            out[family] = BUILTIN[family]
            continue
        names = (f"NylaDejaVu-{family}", f"NylaDejaVu-{family}-Bold")
        for name, path in zip(names, paths, strict=True):
            pdfmetrics.registerFont(TTFont(name, str(path)))
        # <b> inside a paragraph, and the bold of a table's header row, find the bold face
        for bold, italic in ((0, 0), (0, 1), (1, 0), (1, 1)):
            addMapping(names[0], bold, italic, names[bold])
        out[family] = names
    missing = sorted(f for f, names in out.items() if names == BUILTIN[f])
    if missing:
        logger.warning(
            "no DejaVu TTF for %s in %s: PDFs use the built-in Latin-1 fonts, so other "
            "scripts are lost (install fonts-dejavu-core)",
            ", ".join(missing),
            ", ".join(str(d) for d in dirs),
        )
    return out


@functools.cache
def pdf_fonts() -> dict[str, tuple[str, str]]:
    """The fonts of this machine (looked up and registered once per process)."""
    return load_fonts(font_dirs())


def family(name: str) -> str:
    """The family (sans, serif, mono) closest to a style's font name."""
    lowered = name.lower()
    if any(key in lowered for key in ("courier", "mono", "consol")):
        return "mono"
    if any(key in lowered for key in ("times", "serif", "georgia", "garamond")):
        return "sans" if "sans" in lowered else "serif"
    return "sans"


def bold_of(font: str) -> str:
    """The bold face of a regular font of :func:`pdf_fonts` or the built-ins."""
    for regular, bold in (*pdf_fonts().values(), *BUILTIN.values()):
        if font == regular:
            return bold
    return font
