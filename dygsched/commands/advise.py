"""``dygsched advise``: which strategy trains this model on this data fastest on the GPUs to rent, and which fit.

It composes one run per strategy from the command line's overrides (``dataset=... model=...
[task=...]``, any other setting too), keeps those that can train this model on this data (each
strategy's own check), profiles them on the device at hand for a bounded time (or reads a profile
measured elsewhere, ``--profile``), and prints their predicted epoch time, peak memory per GPU and
traffic per epoch on every GPU count asked for, ranked, with one recommendation; the tidy table
(``advice.parquet``), its CSV and a figure go to ``--out``. ``--profile-only`` writes the profile
(measured on the GPU to rent, it replaces the published ratios). This module is the one place the
advisor reads the configuration.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from dygsched.arguments import CommandParser
from dygsched.errors import ConfigError, DygschedError

# The report's order of the strategies; any other conf/sched file follows.
ORDER = (
    "psg",
    "esdg",
    "blad",
    "dygnex_g",
    "dygnex_l",
    "real_g_paper",
    "greedy",
    "ilp",
    "real",
    "flare",
    "distdy",
    "single",
    "depcache",
    "depcomm",
    "sven",
)
PROFILE_JSON = "profile.json"


def known_strategies() -> list[str]:
    found = sorted(
        entry.name.removesuffix(".yaml")
        for entry in files("dygsched.conf").joinpath("sched").iterdir()
        if entry.name.endswith(".yaml")
    )
    return [name for name in ORDER if name in found] + [name for name in found if name not in ORDER]


def gpu_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ConfigError(f"--gpus takes comma-separated GPU counts such as 1,2,4,8, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise ConfigError(f"--gpus takes GPU counts of 1 or more, got {text!r}")
    return tuple(dict.fromkeys(counts))


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="dygsched advise",
        description="Profile a model on this device, then predict every strategy's epoch time, memory and traffic "
        "on the GPUs to rent.",
    )
    parser.add_argument("overrides", nargs="*", help="the run's settings, e.g. dataset=twitter_tennis model=tgcn task=node")
    parser.add_argument("--gpus", default="1,2,4,8", help="comma-separated GPU counts (default 1,2,4,8)")
    parser.add_argument("--nodes", type=int, default=1, help="machines the GPUs are spread over (default 1)")
    parser.add_argument("--gpu", default="here", help="the GPU to rent, from the hardware table (default here: this device)")
    parser.add_argument("--gpu-memory", default=None, help="memory per GPU, e.g. 80GB (default: the GPU's own)")
    parser.add_argument(
        "--link",
        default=None,
        help="nvlink | pcie | infiniband | ethernet | ... | local | a bandwidth in GB/s (default: local between CPU ranks of "
        "one machine, nvlink within a GPU node, infiniband across nodes)",
    )
    parser.add_argument("--sched", default=None, help="only these strategies (comma-separated; default every one that can train)")
    parser.add_argument(
        "--profile", default=None, help="a profile written by --profile-only (on the GPU to rent) instead of profiling here"
    )
    parser.add_argument("--profile-only", action="store_true", help=f"profile, write {PROFILE_JSON} to --out and stop")
    parser.add_argument("--out", default=None, help="where the advice goes (default <results_dir>/advise/<dataset>-<model>)")
    parser.add_argument("--steps", type=int, default=8, help="profiled steps per family and thread count (default 8)")
    parser.add_argument("--budget", type=float, default=8.0, help="seconds of profiling per family and thread count (default 8)")
    parser.add_argument("--plan-time-limit", type=float, default=1.0, help="seconds for each ILP plan (default 1)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")
    return parser


@dataclass(frozen=True)
class Composed:
    """What the configuration gives the advisor: the strategies that can train (as cases), why the
    others cannot, the data each reads, and the settings the output is named by."""

    cases: tuple[Any, ...]  # StrategyCase
    refused: dict[str, str]
    data: dict[str, Any]  # sched name -> its data (as its data kind and task read it)
    results_dir: str
    dataset: str
    model: str
    task: str


def compose_cases(overrides: Sequence[str], names: Sequence[str] | None) -> Composed:
    """The one place the advisor reads the configuration: each strategy's run composed from
    ``overrides`` (and ``sched=<name>``) into its typed ``RunConfig`` (``compose_run``) and checked
    as ``dygsched run`` checks it (the files, the components, the strategy's own check of the data,
    its model and optimizer on the data). A strategy named in ``names`` that cannot train this model
    or task is one error line; unnamed ones are left out with their reason."""
    from dygsched.advise.cases import StrategyCase
    from dygsched.data.loading import for_task, load_data
    from dygsched.launch.checks import check_data, check_run, precheck
    from dygsched.launch.compose import compose_run

    for override in overrides:
        key = override.lstrip("+~").split("=", 1)[0]
        if key in ("sched", "world_size") or key.startswith("sched."):
            raise ConfigError(
                f"'{override}': the advisor composes every strategy itself (name some with --sched) on every --gpus count"
            )
    known = known_strategies()
    chosen = list(names) if names else known
    for name in chosen:
        if name not in known:
            raise ConfigError(f"unknown strategy '{name}' for --sched (choose from {', '.join(known)})")
    loaded: Any = None
    cases, refused, data = [], {}, {}
    for name in chosen:
        run = compose_run([*overrides, f"sched={name}", "world_size=1", "progress=false"])
        precheck(run)
        checked = check_run(run)
        strategy = checked.strategy
        try:
            if loaded is None:
                loaded = load_data(run.dataset)
            mine = for_task(loaded, strategy.data_kind, run)
            check_data(checked, mine, 1)
            case = StrategyCase.of(run, strategy)
        except DygschedError as exc:
            if names:
                raise ConfigError(f"sched={name} cannot train this: {exc}") from None
            refused[name] = str(exc)
            continue
        except TypeError as exc:  # a strategy no family of the advisor prices
            refused[name] = str(exc)
            continue
        cases.append(case)
        data[name] = mine
    if not cases:
        reasons = "; ".join(f"{name}: {why}" for name, why in refused.items())
        raise ConfigError(f"no strategy can train this model on this data ({reasons})")
    first = cases[0].run
    return Composed(
        tuple(cases),
        refused,
        data,
        str(first.results_dir),
        str(first.dataset.name),
        str(first.model.name),
        str(first.task or ""),
    )


class Progress:
    """One line per stage on standard error (a bar where it is a terminal), with the time spent."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started = time.perf_counter()

    def __call__(self, what: str) -> None:
        if self.enabled:
            print(f"advise [{time.perf_counter() - self.started:5.1f} s] {what}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from dygsched.advise.advisor import Request
    from dygsched.advise.hardware import parse_memory

    request = Request(
        gpus=gpu_counts(args.gpus),
        nodes=args.nodes,
        link=args.link,
        gpu=args.gpu,
        gpu_memory=parse_memory(args.gpu_memory) if args.gpu_memory else None,
        plan_time_limit=args.plan_time_limit,
    )
    if args.steps < 3 or args.budget <= 0:
        raise ConfigError("--steps must be at least 3 (one is a warm-up) and --budget more than 0 seconds")
    if args.profile and args.profile_only:
        raise ConfigError("--profile reads a profile and --profile-only writes one: give one of them")
    profile_in = None
    if args.profile:
        from dygsched.advise.profile import Profile

        profile_in = Profile.load(args.profile)  # a malformed file: one line, before anything is composed
    names = [n.strip() for n in args.sched.split(",") if n.strip()] if args.sched else None
    say = Progress(not args.no_progress)
    say("composing every strategy's configuration")
    composed = compose_cases(args.overrides, names)
    out = (
        Path(args.out)
        if args.out
        else Path(composed.results_dir)
        / "advise"
        / "-".join(part for part in (composed.dataset, composed.model, composed.task) if part)
    )
    return advise(composed, request, profile_in, out, args, say)


def advise(composed: Composed, request: Any, profile_in: Any, out: Path, args: argparse.Namespace, say: Progress) -> int:
    import torch

    from dygsched.advise.advice import Advice
    from dygsched.advise.advisor import check_profile, families_needed, predict, profile_cases, targets

    cases = list(composed.cases)
    device = torch.device("cuda" if torch.cuda.is_available() and cases[0].run.device != "cpu" else "cpu")
    if profile_in is not None:
        check_profile(profile_in, cases[0], families_needed(cases), [])
        profile = profile_in
    else:
        from dygsched.launch.fork_server import serves, start_fork_server

        # a CPU rank is a fork of the launcher's fork server (its untouched library pages are not in its
        # resident set): where it starts is measured in a rank started the same way
        rank_start = start_fork_server() if device.type == "cpu" and serves("cpu") else "spawn"
        profile = profile_cases(
            cases,
            lambda case: composed.data[case.name],
            device,
            request,
            args.steps,
            args.budget,
            progress=say,
            rank_start=rank_start,
        )
        if args.profile_only:
            path = out / PROFILE_JSON
            profile.save(path)
            print(f"profile of model={profile.model} on dataset={profile.dataset} ({profile.device.name}) written to {path}")
            return 0
    predictions = predict(cases, lambda case: composed.data[case.name], profile, request, progress=say)
    context = {
        "dataset": composed.dataset,
        "model": composed.model,
        "task": composed.task or "default",
        "device": profile.device.name,
        "device_kind": profile.device.kind,
        "profile_s": profile.seconds,
    }
    advice = Advice(tuple(predictions), tuple(targets(profile, request)), context)
    print(advice.text())
    for name, reason in composed.refused.items():
        print(f"  (sched={name} cannot train this: {reason})")
    scale = advice.targets[0].scale
    print(f"compute: {scale.source}" + (f" ({scale.assumption})" if scale.assumption else ""))
    if max(request.gpus) > 1:
        link = advice.targets[-1].link
        print(
            f"link: {link.name}, {link.bandwidth_bytes_s / 1e9:.3g} GB/s, {link.latency_s * 1e6:.3g} us per message "
            f"({link.source}" + (f"; {link.assumption}" if link.assumption else "") + ")"
        )
    print(f"recommendation: {advice.recommendation()}")
    written = advice.write(out)
    profile.save(out / PROFILE_JSON)
    say(
        f"done; the profile read took {profile.seconds:.1f} s to measure"
        if profile_in is not None
        else f"done; profiling took {profile.seconds:.1f} s"
    )
    others = ", ".join(path.name for name, path in written.items() if name != "advice.parquet")
    print(f"advice written to {written['advice.parquet']} (and {others}, {PROFILE_JSON})")
    return 0
