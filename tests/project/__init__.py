"""The repository itself (README, layers, compose, ignores) and self-tests of the kits."""
