"""The reference release as package data: ``results.parquet`` (one row per run) and the
tuned configs under ``tuned/`` (README.md here says how they were made). Read through
:func:`udora.experiments.rankings.baseline.load_baseline` (``udora report --baseline
release``)."""
