"""Numba kernels over plain arrays. They never validate: see fastpu._core.validation."""
