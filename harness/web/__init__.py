"""``kraft-chaos serve``: a read-only results browser for a store."""
