"""The mix IR: values, operations, blocks, regions, types, attributes, text format. Never imports numba."""
