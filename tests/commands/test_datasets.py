"""`dygsched datasets` and how a run treats a dataset that must be downloaded first."""

import json
import os
import subprocess
import sys

import pytest

from dygsched.data.catalog import CATALOG
from tests.conftest import ROOT


def cli(tmp_path, *args, timeout=120):
    env = {**os.environ, "DYGSCHED_CACHE": str(tmp_path / "cache")}
    env.pop("DYGSCHED_DATA", None)
    return subprocess.run(
        [sys.executable, "-m", "dygsched", *args], capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env
    )


def test_the_list_names_every_dataset_and_where_it_is(tmp_path):
    done = cli(tmp_path, "datasets")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:] if line.strip()}
    for item in CATALOG:
        expected = "shipped" if item.shipped else ("fetch" if item.verifiable else "fetch --unverified")
        assert lines[item.name].split()[1] == expected.split()[0]
    assert f"cache: {tmp_path / 'cache'} (DYGSCHED_CACHE)" in done.stdout


@pytest.mark.parametrize(
    "args, message",
    [(["fetch", "nope"], "unknown dataset 'nope' (known: twitter_tennis"), (["fetch", "events"], "ships inside the package")],
)
def test_fetching_what_cannot_be_fetched_is_one_line(tmp_path, args, message):
    done = cli(tmp_path, "datasets", *args)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
    assert not (tmp_path / "cache").exists()


def test_a_run_on_a_dataset_not_downloaded_says_how_to_fetch_it_before_torch(tmp_path):
    probe = (
        "import sys\nfrom dygsched.cli import main\n"
        f"code = main(['run', 'dataset=chickenpox', 'results_dir={tmp_path / 'results'}'])\n"
        "print('torch imported' if 'torch' in sys.modules else 'no torch', code)"
    )
    env = {**os.environ, "DYGSCHED_CACHE": str(tmp_path / "cache")}
    env.pop("DYGSCHED_DATA", None)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert done.stdout.strip() == "no torch 1", (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1
    assert "dataset 'chickenpox' is not downloaded: run `dygsched datasets fetch chickenpox`" in done.stderr
    assert not (tmp_path / "results").exists()


def test_a_run_refuses_a_cached_file_whose_bytes_changed(tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "pedalme_london.json").write_text(json.dumps({"edges": [[0, 1]], "weights": [1.0], "X": [[1, 2]] * 9}))
    done = cli(tmp_path, "run", "dataset=pedalme", f"results_dir={tmp_path / 'results'}")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "pedalme_london.json has SHA-256" in done.stderr and "moved aside" in done.stderr
    assert list((tmp_path / "cache").iterdir())[0].name.startswith("pedalme_london.json.mismatch-")


@pytest.mark.slow  # a full run of a fetched series
def test_a_series_dataset_trains_from_a_users_copy(tmp_path):
    """The PedalMe config on a file of the same layout the user points at (no download involved)."""
    steps, nodes = 14, 6
    data = {
        "edges": [[i, (i + 1) % nodes] for i in range(nodes)],
        "weights": [1.0 + i for i in range(nodes)],
        "X": [[float((t * 3 + n) % 5) for n in range(nodes)] for t in range(steps)],
    }
    (tmp_path / "mine.json").write_text(json.dumps(data))
    done = cli(
        tmp_path,
        "run",
        "dataset=pedalme",
        f"dataset.path={tmp_path / 'mine.json'}",
        "epochs=1",
        "world_size=1",
        "window=3",
        "model.hidden_channels=8",
        "progress=false",
        f"results_dir={tmp_path / 'results'}",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "status                    ok" in done.stdout


def test_without_tgbs_package_its_streams_say_how_to_get_them(tmp_path, monkeypatch, capsys):
    from dygsched.commands.datasets import main
    from dygsched.data.tgb_streams import TGBStreamSource
    from dygsched.errors import DataError

    for module in ("tgb", "tgb.utils", "tgb.utils.info", "tgb.linkproppred", "tgb.linkproppred.dataset"):
        monkeypatch.setitem(sys.modules, module, None)  # any import of it now fails, as when it is not installed
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path / "cache"))
    assert main([]) == 0
    out = capsys.readouterr().out
    assert not any(line.startswith("tgbl-") for line in out.splitlines()) and "pip install 'dygsched[tgb]'" in out
    with pytest.raises(DataError, match=r"need its package: pip install 'dygsched\[tgb\]'"):
        TGBStreamSource(stream="tgbl-wiki").load()
    with pytest.raises(DataError, match="need its package"):
        main(["fetch", "tgbl-wiki"])
