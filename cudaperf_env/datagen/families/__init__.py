"""Family generators: each a pure function ``(rng, variant) -> task mapping``."""
