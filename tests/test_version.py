"""The version and the package: ``udora`` is a package of its own (``udora/``, mapped
beside the source folders in pyproject.toml), ``udora.__version__`` is the installed
distribution's version, ``udora --version`` prints it, and a wheel built from the checkout
holds ``udora`` with every listed subpackage and its package data."""

import importlib.metadata
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import udora

ROOT = Path(__file__).resolve().parents[1]


def test_udora_is_a_package_with_the_installed_distributions_version():
    assert Path(udora.__file__) == ROOT / "udora" / "__init__.py"
    assert udora.__version__ == importlib.metadata.version("udora")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert udora.__version__ == config["project"]["version"]


def test_the_cli_prints_the_version():
    exe = Path(sys.executable).with_name("udora")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert proc.stdout == f"udora {udora.__version__}\n" and not proc.stderr


def _folder(package: str, mapped: dict[str, str]) -> Path:
    """The checkout folder of a listed package: its longest mapped prefix's folder."""
    prefix = max((p for p in mapped if package == p or package.startswith(p + ".")), key=len)
    return ROOT / mapped[prefix] / Path(*package[len(prefix) :].split(".")[1:])


def test_a_wheel_ships_every_package_and_its_data(tmp_path):
    """``pip wheel`` (not editable) of a copy of the checkout's packaged files: every .py
    of the mapped folders lands under ``udora/``, and so does the package data that
    pyproject.toml names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = config["package-dir"]
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in mapped.values():
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / folder, source / folder, ignore=skip)
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "-w", str(tmp_path / "dist"), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("udora-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "udora/__init__.py" in names and "udora/oracle/task.py" in names

    def shipped(package: str, path: Path) -> str:
        rel = path.relative_to(_folder(package, mapped)).as_posix()
        return f"{package.replace('.', '/')}/{rel}"

    for package in config["packages"]:
        modules = sorted(_folder(package, mapped).glob("*.py"))
        assert modules, f"{package}: no module in the checkout"
        missing = [shipped(package, m) for m in modules if shipped(package, m) not in names]
        assert not missing, f"not in the wheel: {missing}"
    for package, patterns in config["package-data"].items():
        for pattern in patterns:
            files = sorted(_folder(package, mapped).glob(pattern))
            assert files, f"{package}: {pattern} matches nothing in the checkout"
            missing = [shipped(package, f) for f in files if shipped(package, f) not in names]
            assert not missing, f"not in the wheel: {missing}"
