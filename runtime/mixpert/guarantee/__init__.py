"""MixPert's guarantee checks: the error bound, the certified, exact and Ziv recomputations."""
