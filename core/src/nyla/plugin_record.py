"""What the plugin host records about one plugin, and where its distribution comes from."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("nyla.plugins")

#: the group of the kernel's own default plugins
BUILTIN_GROUP = "builtin"


@dataclass
class PluginRecord:
    """What the host knows about one plugin: where it came from, whether it loaded, what it
    contributes, and why it failed if it did."""

    name: str
    group: str
    entry_point: str
    status: str = "ok"  # ok | failed | disabled
    error: str | None = None
    #: problems that did not leave the plugin out (errors under ``NYLA_STRICT_PLUGINS=1``)
    warnings: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    contributes: dict[str, list[str]] = field(default_factory=dict)
    _distribution: tuple[str | None, str | None] | None = None
    plugin: Any = None

    @property
    def distribution(self) -> str | None:
        return self._dist()[0]

    @property
    def version(self) -> str | None:
        return self._dist()[1]

    def _dist(self) -> tuple[str | None, str | None]:
        if self._distribution is None:
            self._distribution = distribution_of(self.group, self.name, self.entry_point)
        return self._distribution

    def warn(self, message: str) -> None:
        """Record a problem that leaves the plugin in (logged; an error in strict mode)."""
        log.warning("plugin %s: %s", self.name, message)
        self.warnings.append(message)

    def fail(self, reason: str) -> None:
        """Mark the plugin left out, with the reason."""
        self.status = "failed"
        self.error = reason
        self.contributes = {}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by ``nyla plugins list --json``."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "group": self.group,
            "entryPoint": self.entry_point,
            "status": self.status,
            "error": self.error,
            "warnings": list(self.warnings),
            "hooks": list(self.hooks),
            "contributes": {k: list(v) for k, v in self.contributes.items()},
        }


_DIST_INDEX: dict[tuple[str, str], tuple[str, str]] | None = None


def distribution_of(group: str, name: str, entry_point: str) -> tuple[str | None, str | None]:
    """Distribution name and version of a plugin, found through importlib.metadata (stevedore's
    cached entry points carry no distribution)."""
    from importlib import metadata

    if group == BUILTIN_GROUP:
        try:
            return "nyla", metadata.version("nyla")
        except metadata.PackageNotFoundError:
            return "nyla", None
    global _DIST_INDEX
    if _DIST_INDEX is None:
        index: dict[tuple[str, str], tuple[str, str]] = {}
        for dist in metadata.distributions():
            for ep in dist.entry_points:
                if ep.group.startswith("nyla."):
                    index[(ep.group, ep.name)] = (dist.metadata["Name"], dist.version)
        _DIST_INDEX = index
    if (group, name) in _DIST_INDEX:
        return _DIST_INDEX[(group, name)]
    top = entry_point.split(":")[0].split(".")[0]
    dists = metadata.packages_distributions().get(top)
    if dists:
        return dists[0], metadata.version(dists[0])
    return None, None
