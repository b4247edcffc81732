import hashlib
from pathlib import Path

import pytest

from dygsched.data.catalog import CATALOG, SHIPPED_DIR, cache_dir, entry, entry_for_file, locate
from dygsched.errors import ConfigError

SHIPPED = [item for item in CATALOG if item.shipped]


@pytest.mark.parametrize("item", SHIPPED, ids=lambda item: item.name)
def test_shipped_files_are_the_catalogued_bytes(item):
    data = (SHIPPED_DIR / item.file).read_bytes()
    assert len(data) == item.size and hashlib.sha256(data).hexdigest() == item.sha256


@pytest.mark.parametrize("item", SHIPPED, ids=lambda item: item.name)
def test_shipped_files_are_the_projects_shared_copies(item):
    """Where the folder of real datasets beside the repository exists, the package ships the same bytes."""
    shared = Path(__file__).resolve().parents[3] / "shared" / "data" / item.file
    if not shared.is_file():
        pytest.skip("no shared data folder beside the repository")
    assert shared.read_bytes() == (SHIPPED_DIR / item.file).read_bytes()


def test_every_file_the_package_ships_is_catalogued():
    shipped = {path.name for path in SHIPPED_DIR.iterdir()}
    assert shipped == {item.file for item in SHIPPED}


@pytest.mark.parametrize("item", CATALOG, ids=lambda item: item.name)
def test_every_catalogued_dataset_has_a_config_reading_its_file(compose, item):
    cfg = compose(f"dataset={item.name}")
    assert Path(cfg.dataset.path).name == item.file


def test_catalogued_downloads_name_their_address_and_pinned_or_recorded_bytes():
    for item in CATALOG:
        if not item.shipped:
            assert item.url and item.url.startswith(("http://", "https://"))
        if item.sha256 is not None:
            assert len(item.sha256) == 64 and int(item.sha256, 16) >= 0 and item.size > 0


def test_files_are_found_in_the_users_folder_then_the_package_then_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DYGSCHED_DATA", raising=False)
    assert locate("collegemsg.csv") == SHIPPED_DIR / "collegemsg.csv"
    assert locate("chickenpox.json") == tmp_path / "cache" / "chickenpox.json"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "collegemsg.csv").write_text("src,dst,t\n0,1,0\n")
    monkeypatch.setenv("DYGSCHED_DATA", str(mine))
    assert locate("collegemsg.csv") == mine / "collegemsg.csv"
    assert locate("england_covid.json") == SHIPPED_DIR / "england_covid.json"  # not in the user's folder


def test_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("DYGSCHED_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "dygsched"
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown dataset 'nope' \(known: twitter_tennis, .*lastfm\)"):
        entry("nope")
    assert entry_for_file("wikipedia.csv").name == "wikipedia" and entry_for_file("other.csv") is None
