pytest_plugins = ["nyla.testing.fixtures"]
