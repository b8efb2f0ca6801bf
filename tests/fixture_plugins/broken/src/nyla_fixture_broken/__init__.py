"""A fixture plugin that fails at import."""

import nyla_this_module_does_not_exist  # noqa: F401
