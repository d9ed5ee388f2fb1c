"""Named random streams of one integer seed (docs/design.md, "Randomness")."""

from __future__ import annotations

import zlib

import numpy as np


def stream(seed: int, name: str) -> np.random.Generator:
    """The numpy Generator of the named sub-stream ``name`` of run seed ``seed``."""
    key = zlib.crc32(name.encode())
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))
