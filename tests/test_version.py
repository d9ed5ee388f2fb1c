"""The version and the package: ``udora`` is a package of its own (``src/udora/``, mapped
beside the source folders in pyproject.toml), ``udora.__version__`` is the installed
distribution's version, ``udora --version`` prints it, and a wheel built from the checkout
holds ``udora`` with every listed subpackage and its package data."""

import importlib.metadata
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

import udora

ROOT = Path(__file__).resolve().parents[1]


def test_udora_is_a_package_with_the_installed_distributions_version():
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    source = ROOT / mapped["package-dir"]["udora"] / "__init__.py"
    # the checkout's file, installed editable (a link to it) or not (a copy of it, as CI does)
    assert Path(udora.__file__).read_bytes() == source.read_bytes()
    assert udora.__version__ == importlib.metadata.version("udora")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert udora.__version__ == config["project"]["version"]


def test_no_folder_at_the_top_of_the_checkout_is_named_udora(tmp_path):
    """Python started in the checkout (``python -c``, ``python -m``) has the checkout
    first on its path: a folder ``udora/`` there would be imported instead of an installed
    (non-editable) udora, and would hold none of its subpackages."""
    assert not (ROOT / "udora").exists()
    proc = subprocess.run(
        [sys.executable, "-c", "import udora.oracle, udora; print(udora.__file__)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == udora.__file__


def test_the_cli_prints_the_version():
    exe = Path(sys.executable).with_name("udora")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert proc.stdout == f"udora {udora.__version__}\n" and not proc.stderr


def _folder(package: str, mapped: dict[str, str]) -> Path:
    """The checkout folder of a listed package: its longest mapped prefix's folder."""
    prefix = max((p for p in mapped if package == p or package.startswith(p + ".")), key=len)
    return ROOT / mapped[prefix] / Path(*package[len(prefix) :].split(".")[1:])


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
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

    # the wheel as installed, imported by Python started in the checkout: the checkout is
    # first on its path and must not hide the installed package (no .pth file is read, so
    # the editable install of this checkout is not there either)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import sys; sys.path += sys.argv[1:]; import udora.experiments.cli.errors, udora; "
        "print(udora.__file__, udora.experiments.__file__, udora.__version__)"
    )
    libraries = sysconfig.get_paths()["purelib"]
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code, str(site), libraries],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    top, experiments, version = proc.stdout.split()
    assert Path(top) == site / "udora" / "__init__.py" and version == udora.__version__
    assert Path(experiments) == site / "udora" / "experiments" / "__init__.py"
