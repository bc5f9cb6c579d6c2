"""MixPert's product paths: fast, small, direct (float32 and float64), wide and the level-IV corner."""
