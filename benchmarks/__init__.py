"""Reproducible benchmarks of asyncsdk against the alternatives: ``python -m benchmarks``.

See ``benchmarks/run.py`` for the options and ``benchmarks/RESULTS.md`` for the figures.
"""
