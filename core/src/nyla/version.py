"""The version of the ``nyla`` distribution, in a module of its own so that code which stamps
it (recordings, reports) needs no import of the top-level package and all it re-exports."""

__version__ = "0.1.0"
