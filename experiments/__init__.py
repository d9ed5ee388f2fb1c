"""Command line, runner, results, reports and sweeps.

``udora`` itself is a namespace package (``pyproject.toml`` maps ``udora.oracle``,
``udora.methods``, ... from separate folders, and no folder is ``udora``), so it can hold
no ``__version__``; the version lives here, beside the ``udora`` command that prints it
(``udora --version``).
"""

from importlib.metadata import version as _version

__version__: str = _version("udora")  # the installed distribution's, as pip reports it
