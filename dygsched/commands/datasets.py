"""``dygsched datasets``: the real datasets the project knows, where each is, and fetching one.

``dygsched datasets`` lists them (shipped in the package, downloaded into the cache, or not yet);
``dygsched datasets fetch NAME...`` downloads into the cache (``DYGSCHED_CACHE``) and checks the
bytes against the catalogue. Nothing else in the project downloads.
"""

from __future__ import annotations

from dygsched.arguments import CommandParser
from dygsched.data.catalog import CATALOG, CatalogEntry, cache_dir, entry, locate, user_dir


def main(argv: list[str]) -> int:
    parser = CommandParser(
        prog="dygsched datasets",
        description="List the real datasets (dataset=NAME in a run) and where each is read from, or download one into the cache.",
    )
    commands = parser.add_subparsers(dest="command")
    fetch = commands.add_parser("fetch", help="download datasets into the cache, checking size and SHA-256")
    fetch.add_argument("names", nargs="+", metavar="NAME")
    fetch.add_argument(
        "--unverified", action="store_true", help="also fetch a dataset whose checksum the catalogue does not record"
    )
    fetch.add_argument("--timeout", type=float, default=60.0, help="seconds without an answer before giving up (default 60)")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        from dygsched.data.download import fetch as download
        from dygsched.data.tgb_streams import fetch_tgb

        tgb = [name for name in args.names if name.startswith(("tgbl-", "tgbn-"))]
        entries = [entry(name) for name in args.names if name not in tgb]  # every name checked before the first download
        for item in entries:
            path = download(item, unverified=args.unverified, timeout=args.timeout)
            print(f"{item.name}: {path}")
        for name in tgb:
            print(f"{name}: {fetch_tgb(name)}")
        return 0
    print_catalog()
    return 0


def print_catalog() -> None:
    from dygsched.data.tgb_streams import is_downloaded, tgb_link_datasets, tgb_node_datasets

    rows = [(item.name, _where(item), _size(item), item.description) for item in CATALOG]
    rows += [
        (name, "downloaded" if is_downloaded(name) else "fetch (py-tgb)", "?", f"TGB stream: dataset=tgb dataset.stream={name}")
        for name in tgb_link_datasets()
    ]
    rows += [
        (
            name,
            "downloaded" if is_downloaded(name) else "fetch (py-tgb)",
            "?",
            f"TGB node labels (task=node): dataset=tgbn dataset.stream={name}",
        )
        for name in tgb_node_datasets()
    ]
    widths = [max(len(row[i]) for row in [("dataset", "where", "size", ""), *rows]) for i in range(3)]
    print(f"{'dataset':<{widths[0]}}  {'where':<{widths[1]}}  {'size':>{widths[2]}}  what")
    for name, where, size, what in rows:
        print(f"{name:<{widths[0]}}  {where:<{widths[1]}}  {size:>{widths[2]}}  {what}")
    print(f"\ncache: {cache_dir()} (DYGSCHED_CACHE)" + (f"; your copies: {user_dir()} (DYGSCHED_DATA)" if user_dir() else ""))
    print("fetch one with: dygsched datasets fetch NAME; train on it with: dygsched run dataset=NAME model=...")
    if not tgb_link_datasets():
        print("TGB's streams (tgbl-wiki, ...) are listed once its package is installed: pip install 'dygsched[tgb]'")


def _where(item: CatalogEntry) -> str:
    path = locate(item.file)
    if user_dir() is not None and path.parent == user_dir():
        return "DYGSCHED_DATA"
    if item.shipped:
        return "shipped"
    if path.is_file():
        return "downloaded"
    return "fetch" if item.verifiable else "fetch --unverified"


def _size(item: CatalogEntry) -> str:
    if item.size is None:
        return "?"
    value, unit = float(item.size), "B"
    for bigger in ("KB", "MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
