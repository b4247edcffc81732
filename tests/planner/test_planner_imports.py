"""The planner imports no torch: every module of ``dygsched.planner`` loads without it."""

import subprocess
import sys

from tests.conftest import ROOT


def test_every_planner_module_imports_without_torch():
    probe = (
        "import importlib, pkgutil, sys\nimport dygsched.planner as planner\n"
        "for module in pkgutil.walk_packages(planner.__path__, 'dygsched.planner.'):\n"
        "    importlib.import_module(module.name)\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "False", done.stderr
