"""``python -m dygsched ...`` in a process of its own, without paying its imports every time.

Before ``dygsched`` reads its first argument it imports torch, PyTorch Geometric, pandas and Hydra:
about 3.5 s on a 2-core machine, more than the rest of a refused run takes. The suite runs the CLI
about a hundred times, so ``run_dygsched`` forks each run from one process that imported them once
(a zygote). Every run is still a process of its own, entered as ``python -m dygsched`` enters it
(``runpy``, ``console()`` and its ``os._exit``): its own working folder, environment, arguments,
standard streams and exit status. What it shares is what was imported before any argument was read.

A run whose environment differs from the zygote's (a variable read at import time would not take
effect), or that needs input, runs as a plain subprocess instead, as does every run when the zygote
cannot start. Tests that kill the launcher or watch its process tree keep ``subprocess.Popen``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Variables read only while a run runs, never while the preloaded modules import: pytest's note of
# the test now running, the rendezvous variables an in-process run sets, the NCCL setting the worker
# sets, the package's own (read in functions). A run's environment may differ from the zygote's in these.
RUN_TIME_ONLY = {
    "PYTEST_CURRENT_TEST",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
}
# What ``python -m dygsched`` imports before it reads an argument, or soon after.
PRELOAD = ("torch", "torch_geometric", "pandas", "pyarrow.parquet", "hydra", "omegaconf", "dygsched.cli")


class _Zygote:
    """The preloaded process: one JSON request per line on its stdin, one JSON reply on its stdout."""

    def __init__(self) -> None:
        self.env = dict(os.environ)
        self.home = tempfile.mkdtemp(prefix="dygsched-zygote-")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from tests.cli_process import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=self.home,
            env={**self.env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), self.env.get("PYTHONPATH")]))},
        )
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            raise RuntimeError(f"the zygote did not start: {ready!r}")

    def alive(self) -> bool:
        return self.process.poll() is None

    def serves(self, env: dict[str, str] | None) -> bool:
        """Whether a run with ``env`` imports what the zygote imported: the zygote's environment, or
        that with the checkout on ``PYTHONPATH`` (where the package comes from anyway), but for
        variables read only at run time."""
        suite = _as_imported(self.env)
        asked = _as_imported(dict(os.environ) if env is None else env)
        return self.alive() and asked in (suite, {**suite, "PYTHONPATH": str(ROOT)})

    def run(self, args: list[str], cwd: str, env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
        with tempfile.TemporaryDirectory(prefix="dygsched-cli-") as streams:
            out, err = Path(streams) / "stdout", Path(streams) / "stderr"
            request = {"args": args, "cwd": cwd, "env": env, "timeout": timeout, "stdout": str(out), "stderr": str(err)}
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            reply = json.loads(self.process.stdout.readline())
            return reply["returncode"], out.read_text(errors="replace"), err.read_text(errors="replace")

    def close(self) -> None:
        if self.alive():
            self.process.stdin.close()
            self.process.wait(timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


def _as_imported(env: dict[str, str]) -> dict[str, str]:
    """What of ``env`` the preloaded modules could read at import."""
    return {key: value for key, value in env.items() if key not in RUN_TIME_ONLY and not key.startswith("DYGSCHED_")}


_zygote: _Zygote | None = None
forked_runs = 0  # how many runs the zygote served (a test checks the suite's runs do not fall back)


def _the_zygote() -> _Zygote | None:
    """The zygote, started anew when the suite's own environment changed in what an import may read
    (a test that sets a variable for good)."""
    global _zygote
    if _zygote is not None and (not _zygote.alive() or _as_imported(dict(os.environ)) != _as_imported(_zygote.env)):
        _zygote.close()
        _zygote = None
    if _zygote is None:
        try:
            _zygote = _Zygote()
        except (OSError, RuntimeError, ValueError):
            _zygote = None
            return None
        atexit.register(_zygote.close)
    return _zygote


def run_dygsched(
    *args: str, cwd: str | Path | None = None, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([sys.executable, "-m", "dygsched", *args], capture_output=True, text=True, ...)``,
    forked from the zygote."""
    command = [sys.executable, "-m", "dygsched", *args]
    where = str(cwd if cwd is not None else os.getcwd())
    zygote = _the_zygote()
    if zygote is None or not zygote.serves(env):
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=where, env=env)
    global forked_runs
    forked_runs += 1
    returncode, stdout, stderr = zygote.run(list(args), where, env if env is not None else dict(os.environ), timeout)
    if returncode is None:
        raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(command, returncode, stdout, stderr)


# ---- the zygote's side ------------------------------------------------------------------------------
def serve() -> None:
    """Import what the CLI imports, then fork one child per request and report how it ended."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    replies = sys.stdout
    print("ready", file=replies, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        returncode = _run_child(request)
        print(json.dumps({"returncode": returncode}), file=replies, flush=True)


def _run_child(request: dict[str, Any]) -> int | None:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the run: nothing of the zygote's protocol survives into it
        try:
            os.setpgid(0, 0)  # its own group, so a timed-out run is ended with every process it started
            _become_the_cli(request)
        finally:
            os._exit(70)  # only if entering the CLI itself failed
    deadline = time.monotonic() + float(request["timeout"])
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return None
        time.sleep(0.005)


def _become_the_cli(request: dict[str, Any]) -> None:
    import runpy

    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for source, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(source, target)
        os.close(source)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # where ``python -m`` puts the working folder
    sys.argv = ["dygsched", *request["args"]]
    try:
        runpy.run_module("dygsched", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else (0 if code is None else 1))
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
