"""``dygsched predict`` and ``dygsched embed``: a finished run's predictions and node embeddings, as Parquet.

``predict RUN [--phase test] [--pairs FILE] [--out FILE]`` writes the model's predictions on a phase
(node targets, or link scores of the phase's pairs and the negatives its evaluation drew), or the
link scores of the pairs a CSV or Parquet file gives (``src,dst[,time]``; a memory model scores
each at its time); ``embed RUN [--at ...]``
writes every node's embedding after chosen snapshots (snapshot models) or its memory at chosen
times (memory models). Node ids are the user's file's. What each table holds and how to load it:
docs/results.md. The run is rebuilt from its folder alone (``finished_run``), checked first; every
file is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.arguments import CommandParser
from dygsched.errors import ConfigError, DataError

PHASES = ("train", "val", "test")


def _parser(command: str) -> argparse.ArgumentParser:
    parser = CommandParser(
        prog=f"dygsched {command}",
        description="A finished run's predictions on a phase, as Parquet (docs/results.md)."
        if command == "predict"
        else "A finished run's node embeddings at chosen snapshots or times, as Parquet (docs/results.md).",
    )
    parser.add_argument("run", metavar="RUN", help="the run's folder (results/<run id>)")
    if command == "predict":
        parser.add_argument("--phase", default="test", help="train, val or test (default: test)")
        parser.add_argument(
            "--pairs", default=None, help="a CSV or Parquet file of pairs to score: columns src, dst and optionally time"
        )
        parser.add_argument("--out", default=None, help="the Parquet file to write (default: RUN/predictions-<phase>.parquet)")
    else:
        parser.add_argument(
            "--at",
            default=None,
            help="comma-separated snapshots (snapshot models) or times (memory models); "
            "default: the last snapshot, or the stream's end",
        )
        parser.add_argument("--out", default=None, help="the Parquet file to write (default: RUN/embeddings.parquet)")
    return parser


def predict_main(argv: list[str]) -> int:
    args = _parser("predict").parse_args(argv)
    if args.phase not in PHASES:
        raise ConfigError(f"unknown phase '{args.phase}' (choose from {', '.join(PHASES)})")
    from dygsched.commands.finished_run import load_run, open_run

    files = open_run(args.run)
    pairs = read_pairs(Path(args.pairs)) if args.pairs else None
    loaded = load_run(files)
    if pairs is not None:
        frame = score_pairs(loaded, pairs)
        out = Path(args.out) if args.out else files.path / "predictions-pairs.parquet"
    else:
        frame = predictions(loaded, args.phase)
        out = Path(args.out) if args.out else files.path / f"predictions-{args.phase}.parquet"
    return _write(frame, out, f"epoch {files.epoch} (counted from 0)")


def embed_main(argv: list[str]) -> int:
    args = _parser("embed").parse_args(argv)
    from dygsched.commands.finished_run import load_run, open_run

    files = open_run(args.run)
    at = _numbers(args.at)
    loaded = load_run(files)
    if isinstance(loaded.data, _event_stream()):
        from dygsched.commands.stream_outputs import stream_memory

        frame = stream_memory(loaded, at)
    else:
        from dygsched.commands.distdy_outputs import distdy_embeddings
        from dygsched.commands.snapshot_outputs import snapshot_embeddings

        if at is not None and any(value != int(value) for value in at):
            raise ConfigError(f"--at names snapshots of a snapshot model: whole numbers, got {args.at}")
        embeddings = distdy_embeddings if _distdy(loaded) else snapshot_embeddings
        frame = embeddings(loaded, None if at is None else [int(value) for value in at])
    out = Path(args.out) if args.out else files.path / "embeddings.parquet"
    return _write(frame, out, f"epoch {files.epoch} (counted from 0)")


def predictions(loaded: object, phase: str) -> pd.DataFrame:
    """The run's predictions on ``phase``, for its model family."""
    from dygsched.commands.finished_run import LoadedRun

    assert isinstance(loaded, LoadedRun)
    if isinstance(loaded.data, _event_stream()):
        from dygsched.commands.stream_outputs import stream_predictions

        return stream_predictions(loaded, phase)
    from dygsched.commands.distdy_outputs import distdy_predictions
    from dygsched.commands.snapshot_outputs import snapshot_predictions

    return (distdy_predictions if _distdy(loaded) else snapshot_predictions)(loaded, phase)


def score_pairs(loaded: object, pairs: pd.DataFrame) -> pd.DataFrame:
    """The logits of the pairs of a user's file, ids as in the file: a snapshot link model's after
    the snapshot at each time, a memory model's from its memory at each time."""
    from dygsched.commands.finished_run import LoadedRun

    assert isinstance(loaded, LoadedRun)
    stream = isinstance(loaded.data, _event_stream())
    if stream and "time" not in pairs.columns:
        raise ConfigError("--pairs: a memory model scores a pair at a time: give the file a column 'time' (the stream's units)")
    ids = loaded.node_ids.numpy()
    rows = {int(node): row for row, node in enumerate(ids)}
    unknown = sorted({int(v) for v in np.concatenate([pairs["src"].to_numpy(), pairs["dst"].to_numpy()])} - set(rows))
    if unknown:
        shown = ", ".join(map(str, unknown[:5])) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise ConfigError(f"--pairs: node id(s) {shown} are not in the run's data ({len(ids)} nodes)")
    src = np.array([rows[int(v)] for v in pairs["src"]], dtype=np.int64)
    dst = np.array([rows[int(v)] for v in pairs["dst"]], dtype=np.int64)
    times = pairs["time"].to_numpy(float) if "time" in pairs.columns else None
    out = pairs.copy()
    if stream:
        from dygsched.commands.stream_outputs import stream_pair_scores

        assert times is not None
        out["score"] = stream_pair_scores(loaded, src, dst, times)
    else:
        from dygsched.commands.distdy_outputs import score_distdy_pairs
        from dygsched.commands.snapshot_outputs import score_snapshot_pairs

        out["score"] = (score_distdy_pairs if _distdy(loaded) else score_snapshot_pairs)(loaded, src, dst, times)
    return out


def read_pairs(path: Path) -> pd.DataFrame:
    """A pairs file (CSV, or Parquet by its suffix): integer ``src`` and ``dst``, an optional numeric ``time``."""
    if not path.is_file():
        raise ConfigError(f"--pairs: no file {path}")
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except Exception as exc:  # not CSV, not Parquet, unreadable
        raise DataError(f"--pairs: cannot read {path} ({str(exc).strip().splitlines()[0]})") from None
    if frame.empty:
        raise DataError(f"--pairs: {path} holds no pairs")
    missing = [column for column in ("src", "dst") if column not in frame.columns]
    if missing:
        raise DataError(f"--pairs: {path} has no column(s) {', '.join(missing)} (it has: {', '.join(map(str, frame.columns))})")
    for column in [c for c in ("src", "dst", "time") if c in frame.columns]:
        values = frame[column]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values) or values.isna().any():
            raise DataError(f"--pairs: column '{column}' of {path} must be numbers without gaps")
    for column in ("src", "dst"):
        if not np.all(np.equal(np.mod(frame[column].to_numpy(), 1), 0)):
            raise DataError(f"--pairs: node ids in column '{column}' of {path} must be integers")
    return frame


def _numbers(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise ConfigError(f"--at takes comma-separated numbers, got {text!r}") from None


def _distdy(loaded: object) -> bool:
    """Whether ``loaded`` is a DistDy run (its sampled model's outputs: ``distdy_outputs``)."""
    from dygsched.commands.finished_run import LoadedRun
    from dygsched.engine.distdy import DistDyStrategy

    return isinstance(loaded, LoadedRun) and isinstance(loaded.strategy, DistDyStrategy)


def _event_stream() -> type:
    from dygsched.data.events import EventStream

    return EventStream


def _write(frame: pd.DataFrame, out: Path, what: str) -> int:
    from dygsched.metrics.atomic import write_parquet

    if not out.parent.is_dir():
        raise ConfigError(f"--out: no folder {out.parent}")
    write_parquet(out, frame)
    print(f"wrote {out} ({len(frame)} rows; the checkpoint's weights, {what})")
    return 0
