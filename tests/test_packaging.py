"""`pip install .` (not only editable) ships the configs, the small datasets and the papers'
numbers inside the package, and the installed program trains and builds a paper table from any folder.
pyproject.toml finds the packages (none is listed by hand) and the configs through the symlink
dygsched/conf -> ../conf."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_SUFFIXES = (".py", ".yaml", ".csv", ".json", ".j2")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel built from a copy of the checkout's files as a clone would have them (symlinks as
    symlinks), so that no build folder left in the checkout can supply a file the configuration forgets."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
    )
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        if (ROOT / name).is_symlink() or (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name, follow_symlinks=False)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("dygsched-*.whl")
    return built


def test_wheel_contains_the_configs_and_the_shipped_datasets(wheel):
    from dygsched.data.catalog import CATALOG

    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "dygsched/conf/config.yaml",
        "dygsched/conf/dataset/synthetic.yaml",
        "dygsched/conf/model/tgcn.yaml",
        "dygsched/conf/sched/psg.yaml",
        "dygsched/conf/smoke/flare.yaml",
        "dygsched/paper/published/sven.csv",
        "dygsched/report/templates/index.html.j2",
        *(f"dygsched/data/shipped/{item.file}" for item in CATALOG if item.shipped),
    ):
        assert required in names
    missing = sorted(package_files() - names)
    assert not missing, f"{missing} are missing from the wheel (a package without __init__.py, or data not in package-data)"


def package_files() -> set[str]:
    """Every module and data file git tracks in the package, by its path in the wheel: ``conf/`` ships
    as ``dygsched/conf/`` (``dygsched/conf`` is a symlink to it)."""
    tracked = subprocess.run(
        ["git", "ls-files", "dygsched", "conf"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    shipped = [name for name in tracked if name.endswith(SHIPPED_SUFFIXES) and not (ROOT / name).is_symlink()]
    assert "conf/config.yaml" in shipped and "dygsched/cli.py" in shipped, shipped
    return {f"dygsched/{name}" if name.startswith("conf/") else name for name in shipped}


@pytest.mark.slow  # installs the wheel into a fresh environment; the wheel's contents are checked in the default selection
def test_the_installed_wheel_trains_on_a_shipped_dataset_from_any_folder(wheel, tmp_path):
    """The wheel installed into its own folder (its dependencies from this environment), run from
    an empty folder with no checkout and no data folder around it."""
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "DYGSCHED_CACHE": str(tmp_path / "cache")}
    env.pop("DYGSCHED_DATA", None)

    def dygsched(*args):
        return subprocess.run(
            [sys.executable, "-m", "dygsched", *args], capture_output=True, text=True, timeout=300, cwd=work, env=env
        )

    where = subprocess.run(
        [sys.executable, "-c", "import dygsched; print(dygsched.__file__)"], capture_output=True, text=True, cwd=work, env=env
    )
    assert where.stdout.strip().startswith(str(site)), "the test must run the installed copy, not the checkout"
    listed = dygsched("datasets")
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:14]}["england_covid"] == "shipped"
    done = dygsched(
        "run",
        "dataset=england_covid",
        "epochs=1",
        "world_size=1",
        "model.hidden_channels=8",
        "progress=false",
        f"results_dir={work / 'results'}",
    )
    assert done.returncode == 0, done.stderr
    assert "status                    ok" in done.stdout and (work / "results").is_dir()
    paper = dygsched("paper", "table-sven-comm", "--smoke")  # a paper table from the installed package alone
    assert paper.returncode == 0, paper.stderr
    assert (work / "results" / "smoke" / "sven" / "sven_comm.csv").is_file()
    readme = (work / "results" / "smoke" / "report" / "README.md").read_text()
    section = readme.split("### ")[1:]
    assert any(part.startswith("Bytes per epoch") and "[built]" in part.splitlines()[0] for part in section)
    assert "(installed, not a git checkout)" in (work / "results" / "smoke" / "provenance" / "table-sven-comm.json").read_text()
