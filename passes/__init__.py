"""Pass infrastructure and passes over mix IR."""
