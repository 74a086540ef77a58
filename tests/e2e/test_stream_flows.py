"""Streaming flows in a real browser: stop, clear, regenerate, resume after a reload, many
views of one stream, a 10,000-delta reply, inert malicious markdown, theme screenshots.

One flow per test, in JupyterLab and Notebook 7.
"""

from __future__ import annotations

import contextlib

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from jlab import REPO_ROOT, save, wait_kernel_idle
from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

RESULTS_DIR = REPO_ROOT / "test-results"

pytestmark = pytest.mark.e2e

WORDS = "".join(f"w{i} " for i in range(300))  # ~1,500 characters


def test_stop_mid_stream_keeps_the_partial_reply(notebook, app: str) -> None:
    _, panel = open_panel(notebook, f'agent = bot([[S.text({WORDS!r}, chunk_size=2)]], delay=0.02)\nagent.panel()')
    send(panel, "Count slowly")
    expect(last_text(panel)).to_contain_text("w20 ", timeout=TURN_MS)
    panel.locator("button.think-stop").click()
    expect_status(panel, "ready")
    partial = last_text(panel).inner_text()
    assert partial.startswith("w0 w1 w2") and len(partial) < len(WORDS.strip())
    expect(panel.locator(".think-message[data-role=assistant]")).to_have_count(1)
    expect(panel.locator(".think-message[data-live=true]")).to_have_count(0)  # it is the stored copy now


def test_clear_empties_every_view(notebook, app: str) -> None:
    page, panel = open_panel(notebook, 'agent = bot([[S.text("Hello there.")]])\np = agent.panel()\ndisplay(p, p)')
    send(panel, "Hi")
    expect(last_text(panel)).to_have_text("Hello there.", timeout=TURN_MS)
    panel.locator("button.think-clear").click()
    panel.locator("button.think-clear-yes").click()  # Clear asks first
    for i in range(2):
        expect(page.locator(".think-panel").nth(i).locator(".think-message")).to_have_count(0, timeout=30_000)
    expect_status(panel, "ready")


def test_regenerate_replaces_the_reply_with_a_sibling(notebook, app: str) -> None:
    _, panel = open_panel(notebook, 'agent = bot([[S.text("First answer.")], [S.text("Second answer.")]])\n'
                                       'agent.panel()')
    send(panel, "Answer me")
    expect(last_text(panel)).to_have_text("First answer.", timeout=TURN_MS)
    expect_status(panel, "ready")
    panel.locator("button.think-regenerate").click()
    expect(last_text(panel)).to_have_text("Second answer.", timeout=TURN_MS)
    expect(panel.locator(".think-message[data-role=assistant]")).to_have_count(1)
    expect(panel.locator(".think-message[data-role=user]")).to_have_count(1)
    expect_status(panel, "ready")


def test_reload_mid_stream_resumes_without_duplicates(notebook, app: str) -> None:
    page, panel = open_panel(notebook, f'agent = bot([[S.text({WORDS!r}, chunk_size=3)]], delay=0.022)\nagent.panel()')
    send(panel, "Count slowly")
    expect(last_text(panel)).to_contain_text("w10 ", timeout=TURN_MS)
    save(page)
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    wait_kernel_idle(page)
    panel = page.locator(".think-panel").first  # restored from the saved output, model from the kernel
    expect(last_text(panel)).to_contain_text("w0 w1 w2 ", timeout=60_000)
    seen = last_text(panel).inner_text()
    assert len(seen) < len(WORDS.strip()), "the reload should land mid-stream"
    expect(last_text(panel)).to_have_text(WORDS.strip(), timeout=TURN_MS)  # nothing twice, nothing missing
    expect_status(panel, "ready")


def test_two_views_two_panels_and_a_second_tab_stream_the_same_text(notebook, app: str, browser_context) -> None:
    page, panel = open_panel(notebook, f'agent = bot([[S.text({WORDS!r}, chunk_size=4)]], delay=0.01)'
                                       '\np = agent.panel()\ndisplay(p, p)', ["agent.panel()"])
    panels = page.locator(".think-panel")
    expect(panels).to_have_count(3, timeout=60_000)
    save(page)
    tab2 = browser_context.new_page()
    try:
        tab2.goto(page.url.replace("?reset", ""))
        tab2.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        other = tab2.locator(".think-panel")
        expect(other).to_have_count(3, timeout=60_000)
        send(panel, "Count")
        for i in range(3):  # every view streams live
            expect(panels.nth(i).locator(".think-message[data-live=true]")).to_have_count(1, timeout=TURN_MS)
        expect(other.nth(2).locator(".think-message[data-live=true]")).to_have_count(1, timeout=TURN_MS)
        for view in [panels.nth(0), panels.nth(1), panels.nth(2), other.nth(0), other.nth(2)]:
            expect(last_text(view)).to_have_text(WORDS.strip(), timeout=TURN_MS)
    finally:
        tab2.close()


def test_a_10000_delta_reply_arrives_complete(notebook, app: str) -> None:
    text = "".join(chr(97 + i % 26) for i in range(10_000))
    page, panel = open_panel(notebook, f'agent = bot([[S.text({text!r}, chunk_size=1)]])\nagent.panel()')
    send(panel, "Stream a lot")
    expect(last_text(panel)).to_have_text(text, timeout=TURN_MS)
    expect_status(panel, "ready")
    assert page.locator("text=IOPub message rate exceeded").count() == 0


MALICIOUS = (
    'Hi <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> '
    '[click me](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">raw</a> '
    '<svg onload="window.__pwned=5"></svg> <iframe srcdoc="<script>parent.__pwned=6</script>"></iframe> '
    '![x](javascript:window.__pwned=7) **bold** `<b>code</b>`'
)


def test_malicious_markdown_is_inert(notebook, app: str) -> None:
    page, panel = open_panel(notebook, f'agent = bot([[S.text({MALICIOUS!r}), S.tool_call("remove", '
                                       '{"path": "<img src=x onerror=window.__pwned=8>"})], [S.text("ok")]])\n'
                                       'agent.panel()')
    send(panel, "Say something nasty")
    expect(panel.locator(".think-tool[data-tool-name=remove]")).to_have_attribute(
        "data-state", "output-available", timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("ok", timeout=TURN_MS)
    text = panel.locator(".think-message[data-role=assistant] .think-text").first
    expect(text.locator("strong")).to_have_text("bold")
    assert text.locator("img, script, svg, iframe").count() == 0
    assert panel.locator("img, script, iframe, [onerror], [onload]").count() == 0
    assert text.locator("a[href^='javascript']").count() == 0
    for link in text.locator("a").all():
        link.click(modifiers=["Alt"], no_wait_after=True)
    expect(text.locator("code")).to_have_text("<b>code</b>")
    assert page.evaluate("() => window.__pwned === undefined")


def test_light_and_dark_theme_screenshots(notebook, app: str) -> None:
    reply = ("Here is code:\n\n```python\nprint('hello')\n```\n\nAnd a [link](https://example.org).")
    page, panel = open_panel(notebook, f'agent = bot([[S.tool_call("remove", {{"path": "a.txt"}}), '
                                       f'S.tool_call("delete_file", {{"path": "b.txt"}})], [S.text({reply!r}), '
                                       'S.usage(120, 30)]])\nagent.panel()')
    send(panel, "Show me everything")
    expect_status(panel, "awaiting-approval")
    RESULTS_DIR.mkdir(exist_ok=True)
    panel.screenshot(path=str(RESULTS_DIR / "panel-light-approval.png"))
    panel.locator("button.think-approve").click()
    expect(panel.locator(".think-code-copy")).to_have_count(1, timeout=TURN_MS)
    expect_status(panel, "ready")
    panel.screenshot(path=str(RESULTS_DIR / "panel-light.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    # The theme's stylesheet loads after the flag flips: wait until the panel's colours use it.
    with contextlib.suppress(PlaywrightTimeoutError):  # else the assertion below shows the colours
        page.wait_for_function(PANEL_IS_DARK, timeout=30_000)
    panel.screenshot(path=str(RESULTS_DIR / "panel-dark.png"))
    bg, fg = page.evaluate(PANEL_COLOURS)
    assert _luminance(bg) < 0.3 < _luminance(fg), (bg, fg)
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")


PANEL_COLOURS = """() => { const s = getComputedStyle(document.querySelector('.think-panel'));
    return [s.backgroundColor, s.color]; }"""
# The panel's background is dark and its text light: the assertion's test, in the page.
PANEL_IS_DARK = """() => {
    const lum = (css) => { const [r, g, b] = css.match(/[\\d.]+/g).map(Number);
                           return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; };
    const s = getComputedStyle(document.querySelector('.think-panel'));
    return lum(s.backgroundColor) < 0.3 && lum(s.color) > 0.3;
}"""


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255
