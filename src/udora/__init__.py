"""udora: uncertainty disentanglement scored against exact Gaussian-process targets.

One distribution, one import name. This package holds what every layer shares: the
version and the user-error type (:mod:`udora.errors`). The layers are subpackages that
``pyproject.toml`` maps from the repository's top-level folders (docs/design.md, "Layout
and layers"): ``udora.oracle``, ``udora.scoring``, ``udora.methods``,
``udora.experiments`` and the data packages ``udora.presets`` and ``udora.release``.
"""

from importlib.metadata import version as _version

__version__: str = _version("udora")
"""The installed distribution's version, as pip reports it (``udora --version``)."""
