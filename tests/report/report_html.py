"""Parse a rendered report: its sections and each target's status (shared by the unit and smoke tests)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path


class ReportParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.targets: dict[str, tuple[str, str]] = {}  # target -> (section, status)
        self.images: list[str] = []
        self.smoke = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "section" and "paper-section" in classes:
            self.sections.append(found["id"] or "")
        elif tag == "div" and "target" in classes:
            self.targets[found["id"] or ""] = (self.sections[-1], found.get("data-status") or "")
        elif tag == "div" and found.get("id") == "smoke":
            self.smoke = True
        elif tag == "img":
            self.images.append(found.get("src") or "")


def parse_report(index: Path) -> ReportParser:
    parser = ReportParser()
    parser.feed(index.read_text())
    return parser
