"""Numba kernels of the GLNN family (arithmetic only; wrappers validate and allocate).

Every kernel here has a slow, obviously-correct NumPy twin in ``tests/naive.py``
and is tested against it.
"""
