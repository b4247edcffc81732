"""`pip install .` (not only editable) ships the configs inside the package."""

import subprocess
import sys
import zipfile
from pathlib import Path


def test_wheel_contains_the_configs(tmp_path):
    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(root)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("dygsched-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "dygsched/conf/config.yaml", "dygsched/conf/dataset/synthetic.yaml", "dygsched/conf/model/tgcn.yaml", "dygsched/conf/sched/psg.yaml",
        "dygsched/conf/smoke/flare.yaml", "dygsched/report/published.csv", "dygsched/report/templates/index.html.j2",
    ):  # fmt: skip
        assert required in names
    for package in sorted({p.parent for p in (root / "dygsched").rglob("*.py")}):
        module = package.relative_to(root).as_posix()
        assert f"{module}/__init__.py" in names, f"{module} is missing from the wheel (list it in pyproject.toml)"
