"""A real Mermaid in a real browser: Debian's headless `chromium` loading the npm `mermaid`
package's `dist/mermaid.min.js` (both installed by scripts/setup-browser)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
MERMAID_JS = ROOT / ".cache" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
RENDER_TIMEOUT_S = 120  # a cold Chromium start on a loaded 2-core machine, with margin

_PAGE = """<!doctype html><html><head><meta charset="utf-8">
<script src="{script}"></script></head><body><div id="chart"></div><pre id="error"></pre>
<script>
mermaid.initialize({{startOnLoad: false}});
mermaid.render("g", {source}).then(
  (r) => {{ document.getElementById("chart").innerHTML = r.svg; }},
  (e) => {{ document.getElementById("error").textContent = "mermaid: " + e; }});
</script></body></html>
"""


class _Elements(HTMLParser):
    """Every element's attributes, by tag, in document order (plus the #error text)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.error = ""
        self._in_error = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.found.append((tag, a))
        self._in_error = a.get("id") == "error"

    def handle_data(self, data: str) -> None:
        if self._in_error:
            self.error += data

    def handle_endtag(self, tag: str) -> None:
        self._in_error = False


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def render_mermaid_svg(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[tuple[str, dict[str, str]]]]:
    """Render Mermaid source in headless Chromium; return the elements of the page's DOM."""
    browser = _chromium()
    missing = [what for what, ok in (("chromium", browser is not None),
                                     (str(MERMAID_JS.relative_to(ROOT)), MERMAID_JS.is_file())) if not ok]
    if missing:
        reason = (f"{' and '.join(missing)} missing (run scripts/setup-browser as root): the gantt "
                  "browser test needs Debian's chromium and the npm mermaid@11 package")
        if os.environ.get("LOCKSTEP_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " — LOCKSTEP_REQUIRE_BROWSER=1 makes this a failure", pytrace=False)
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("browser")

    def render(source: str) -> list[tuple[str, dict[str, str]]]:
        page = work / "gantt.html"
        page.write_text(_PAGE.format(script=MERMAID_JS.as_uri(), source=json.dumps(source)))
        # --virtual-time-budget lets the page's promise settle before the DOM is dumped.
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--allow-file-access-from-files", f"--user-data-dir={work / 'profile'}",
               "--virtual-time-budget=20000", "--dump-dom", page.as_uri()]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=RENDER_TIMEOUT_S)
        assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-2000:]}"
        parsed = _Elements()
        parsed.feed(done.stdout)
        assert not parsed.error, parsed.error
        assert any(tag == "svg" for tag, _ in parsed.found), f"no SVG in the page: {done.stdout[-2000:]}"
        return parsed.found

    return render
