"""`pip install .` (not only editable) ships the configs, the small datasets and the papers'
numbers inside the package, and the installed program trains and builds a paper table from any folder."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (built,) = out.glob("dygsched-*.whl")
    return built


def test_wheel_contains_the_configs_and_the_shipped_datasets(wheel):
    from dygsched.data.catalog import CATALOG

    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "dygsched/conf/config.yaml", "dygsched/conf/dataset/synthetic.yaml", "dygsched/conf/model/tgcn.yaml", "dygsched/conf/sched/psg.yaml",
        "dygsched/conf/smoke/flare.yaml", "dygsched/paper/published/sven.csv", "dygsched/report/templates/index.html.j2",
        *(f"dygsched/data/shipped/{item.file}" for item in CATALOG if item.shipped),
    ):  # fmt: skip
        assert required in names
    for package in sorted({p.parent for p in (ROOT / "dygsched").rglob("*.py")}):
        module = package.relative_to(ROOT).as_posix()
        assert f"{module}/__init__.py" in names, f"{module} is missing from the wheel (list it in pyproject.toml)"


def test_the_installed_wheel_trains_on_a_shipped_dataset_from_any_folder(wheel, tmp_path):
    """The wheel installed into its own folder (its dependencies from this environment), run from
    an empty folder with no checkout and no data folder around it."""
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "DYGSCHED_CACHE": str(tmp_path / "cache")}
    env.pop("DYGSCHED_DATA", None)

    def dygsched(*args):
        return subprocess.run([sys.executable, "-m", "dygsched", *args], capture_output=True, text=True, timeout=300, cwd=work, env=env)

    where = subprocess.run([sys.executable, "-c", "import dygsched; print(dygsched.__file__)"], capture_output=True, text=True, cwd=work, env=env)
    assert where.stdout.strip().startswith(str(site)), "the test must run the installed copy, not the checkout"
    listed = dygsched("datasets")
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:14]}["england_covid"] == "shipped"
    done = dygsched("run", "dataset=england_covid", "epochs=1", "world_size=1", "model.hidden_channels=8", "progress=false", f"results_dir={work / 'results'}")
    assert done.returncode == 0, done.stderr
    assert "status                    ok" in done.stdout and (work / "results").is_dir()
    paper = dygsched("paper", "table-sven-comm", "--smoke")  # a paper table from the installed package alone
    assert paper.returncode == 0, paper.stderr
    assert (work / "results" / "smoke" / "sven" / "sven_comm.csv").is_file()
    readme = (work / "results" / "smoke" / "report" / "README.md").read_text()
    section = readme.split("### ")[1:]
    assert any(part.startswith("Bytes per epoch") and "[built]" in part.splitlines()[0] for part in section)
    assert "(installed, not a git checkout)" in (work / "results" / "smoke" / "provenance" / "table-sven-comm.json").read_text()
