"""The package installs offline into a venv with Debian's setuptools (no build isolation)."""

import os
import shutil
import subprocess

from conftest import PYTHON, SOURCE_DIR, require


def test_installs_offline_into_a_venv_and_imports(tmp_path):
    require(PYTHON, "tool")
    source = tmp_path / "src"  # a copy: pip leaves build/ and *.egg-info beside the sources
    shutil.copytree(os.path.join(SOURCE_DIR, "client", "python"), str(source),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "V"
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index",
                              str(source)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    check = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import fleetprof; print(fleetprof.__file__); fleetprof.Client('http://x:1')"],
                           capture_output=True, text=True, cwd=str(tmp_path), timeout=60)
    assert check.returncode == 0, check.stderr
    assert str(venv) in check.stdout
