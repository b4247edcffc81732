"""``dygsched run | plan | simulate | advise | runs | datasets | paper | report | predict | embed``: a thin
dispatcher; the work lives in the stages."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from dygsched.errors import DygschedError

USAGE = """usage: dygsched COMMAND [ARGS]

commands:
  run       train a DGNN across worker processes (Hydra overrides, e.g. model=tgcn sched=psg world_size=2)
  plan      plan group times onto GPUs and print the plan, its predicted time, bound and gap
  simulate  plan a simulated dynamic graph for 4 ... 1,024 GPUs and report parallel efficiency
  advise    profile a model here, then predict every strategy's epoch time, memory and traffic on 1 ... 1,024 GPUs
  runs      list the runs of a results folder (filters KEY=VALUE) or compare two (--compare A B)
  datasets  list the real datasets (shipped, downloaded, or to fetch) or download one (fetch NAME)
  paper     list the paper targets, or build them (dygsched paper table-sven-comm) and render results/report/
  report    render every paper table and figure into results/report/ from what a results folder holds
  predict   a finished run's predictions on a phase (or on given pairs), as Parquet (docs/results.md)
  embed     a finished run's node embeddings at chosen snapshots or times, as Parquet

Run 'dygsched COMMAND --help' for a command's options."""


def _run(argv: list[str]) -> int:
    from dygsched.launch.run_command import main as run_main

    return run_main(argv)


def _plan(argv: list[str]) -> int:
    from dygsched.commands.plan import main as plan_main

    return plan_main(argv)


def _simulate(argv: list[str]) -> int:
    from dygsched.commands.simulate import main as simulate_main

    return simulate_main(argv)


def _advise(argv: list[str]) -> int:
    from dygsched.commands.advise import main as advise_main

    return advise_main(argv)


def _runs(argv: list[str]) -> int:
    from dygsched.commands.runs import main as runs_main

    return runs_main(argv)


def _datasets(argv: list[str]) -> int:
    from dygsched.commands.datasets import main as datasets_main

    return datasets_main(argv)


def _render_report(results: Path, smoke: bool) -> Path:
    from dygsched.report.render import render

    return render(results, smoke=smoke)


def _paper(argv: list[str]) -> int:
    from dygsched.paper.cli import main as paper_main

    return paper_main(argv, render=_render_report)  # the paper stage builds; the report, a later stage, renders


def _report(argv: list[str]) -> int:
    from dygsched.report.cli import main as report_main

    return report_main(argv)


def _predict(argv: list[str]) -> int:
    from dygsched.commands.predict import predict_main

    return predict_main(argv)


def _embed(argv: list[str]) -> int:
    from dygsched.commands.predict import embed_main

    return embed_main(argv)


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "run": _run,
    "plan": _plan,
    "simulate": _simulate,
    "advise": _advise,
    "runs": _runs,
    "datasets": _datasets,
    "paper": _paper,
    "report": _report,
    "predict": _predict,
    "embed": _embed,
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv)
    except BrokenPipeError:  # the reader went away (`dygsched --help | head`): nothing more to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes at exit
        return 0


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(USAGE)
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"dygsched: error: unknown command '{argv[0]}' (choose from {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    try:
        return command(argv[1:])
    except SystemExit as exc:  # a command's --help (0) or its usage error (2), its one line already said
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)  # sys.exit("why"): Python would have printed it
        return 1
    except DygschedError as exc:
        print(f"dygsched: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # a run's own says how to continue it
        print(f"dygsched: interrupted: {exc}" if str(exc) else "dygsched: interrupted", file=sys.stderr)
        return 130


def console() -> None:
    """The ``dygsched`` program: ``main``, then the process ends without tearing its modules down.

    Once torch and PyTorch Geometric are loaded, the interpreter's clean-up of their modules at
    exit takes about a second on a small machine (measured: 1.2 s after a run), with nothing left
    to write by then. So the program leaves as Python's own exit does, through every exit hook
    (logging's flush, multiprocessing's finalizers among them), but from the last hook: ``_leave``
    is registered before anything else the program imports, and hooks run last-registered first.
    ``main`` itself returns normally (tests and embedding code call it)."""
    import atexit

    status = [1]  # an exception out of main: the interpreter prints it, then the hooks run

    def _leave() -> None:
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status[0])

    atexit.register(_leave)
    status[0] = main()
    sys.exit(status[0])


if __name__ == "__main__":
    console()
