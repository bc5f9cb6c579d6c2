"""MixPert: labels, operand splitting and packing, the driver, and its paths (paths/) and guarantee checks (guarantee/)."""
