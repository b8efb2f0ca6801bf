"""The fixtures come from nyla's pytest plugin (nyla.testing, installed with nyla[testing])."""
