"""The kernel's own default toolboxes, registered through ``nyla_toolboxes`` like any plugin
(``nyla.tools.core`` = ``core``, ``nyla.tools.ai`` = ``ai``)."""
