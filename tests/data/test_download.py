"""Downloads against a local HTTP server the test starts: good bytes, a truncated body, wrong bytes,
an error status and no server at all; the cache must never keep a half-written or wrong file."""

import hashlib
import http.server
import socket
import threading

import pytest

from dygsched.data.catalog import CatalogEntry
from dygsched.data.download import ensure_cached, ensure_readable, fetch
from dygsched.errors import DataError

PAYLOAD = b"src,dst,t\n" + b"".join(f"{i % 7},{i % 5},{i}\n".encode() for i in range(5000))
SHA = hashlib.sha256(PAYLOAD).hexdigest()
SIZE = len(PAYLOAD)


class Handler(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self):  # noqa: N802 (the standard library's name)
        Handler.requests.append(self.path)
        if self.path == "/good.csv":
            self._send(PAYLOAD, len(PAYLOAD))
        elif self.path == "/truncated.csv":
            self._send(PAYLOAD[:1000], len(PAYLOAD))  # announces everything, sends a part, hangs up
        elif self.path == "/wrong.csv":
            self._send(PAYLOAD.replace(b"src", b"SRC"), len(PAYLOAD))
        else:
            self.send_error(404, "Not Found")

    def _send(self, body, length):
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def catalogued(url, size=SIZE, sha256=SHA):
    return CatalogEntry("toy", "toy.csv", False, "a toy stream", "this test", url, size, sha256)


def test_a_download_lands_checked_and_is_not_fetched_twice(server, cache):
    Handler.requests.clear()
    path = fetch(catalogued(f"{server}/good.csv"), show_progress=False)
    assert path == cache / "toy.csv" and path.read_bytes() == PAYLOAD
    assert sorted(p.name for p in cache.iterdir()) == ["toy.csv", "toy.csv.sha256"]
    assert fetch(catalogued(f"{server}/good.csv"), show_progress=False) == path
    assert Handler.requests == ["/good.csv"]


@pytest.mark.parametrize(
    "url, message",
    [
        ("/truncated.csv", rf"stopped (at 1,000 of {len(PAYLOAD):,} bytes|early)"),
        ("/wrong.csv", "gave bytes with SHA-256 .*, the catalogue records"),
        ("/missing.csv", "answered HTTP 404"),
    ],
)
def test_a_failed_download_keeps_nothing(server, cache, url, message):
    with pytest.raises(DataError, match=message) as failure:
        fetch(catalogued(f"{server}{url}"), show_progress=False)
    assert "\n" not in str(failure.value)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_wrong_size_keeps_nothing(server, cache):
    with pytest.raises(DataError, match=f"gave {len(PAYLOAD):,} bytes, the catalogue records 10"):
        fetch(catalogued(f"{server}/good.csv", size=10), show_progress=False)
    assert list(cache.iterdir()) == []


def test_without_a_server_the_error_says_what_to_put_where(cache):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DataError) as failure:
        fetch(catalogued(f"http://127.0.0.1:{port}/toy.csv"), timeout=5, show_progress=False)
    text = str(failure.value)
    assert f"could not download http://127.0.0.1:{port}/toy.csv" in text
    assert f"put the file at {cache / 'toy.csv'} by hand ({len(PAYLOAD):,} bytes, SHA-256 {SHA})" in text


def test_an_unrecorded_checksum_needs_consent_and_then_guards_later_reads(server, cache):
    item = catalogued(f"{server}/good.csv", size=None, sha256=None)
    with pytest.raises(DataError, match="records no checksum .* add --unverified"):
        fetch(item, show_progress=False)
    path = fetch(item, unverified=True, show_progress=False)
    assert '"checked_against": "first download"' in (cache / "toy.csv.sha256").read_text()
    path.write_bytes(PAYLOAD + b"0,0,0\n")  # changed after the first download
    with pytest.raises(DataError, match="moved aside"):
        ensure_cached(item, path)


def test_a_corrupted_cache_file_is_moved_aside_and_never_read(server, cache):
    item = catalogued(f"{server}/good.csv")
    path = fetch(item, show_progress=False)
    path.write_bytes(PAYLOAD[:-1] + b"9")
    with pytest.raises(DataError) as failure:
        ensure_cached(item, path)
    assert "has SHA-256" in str(failure.value) and "dygsched datasets fetch toy" in str(failure.value)
    assert not path.exists() and len(list(cache.glob("toy.csv.mismatch-*"))) == 1
    assert fetch(item, show_progress=False).read_bytes() == PAYLOAD  # fetched again, whole


def test_a_file_put_in_the_cache_by_hand_is_checked_once(cache):
    from dygsched.data import catalog

    cache.mkdir()
    (cache / "chickenpox.json").write_text("{}")
    with pytest.raises(DataError, match="chickenpox.json has SHA-256 .* expected 724b48cf"):
        ensure_readable(cache / "chickenpox.json")
    with pytest.raises(DataError, match=r"is not downloaded: run `dygsched datasets fetch chickenpox` \(from https://"):
        ensure_readable(cache / "chickenpox.json")
    ensure_readable(catalog.SHIPPED_DIR / "collegemsg.csv")  # shipped files are not the cache's business
    ensure_readable(cache / "somebody_elses.csv")
