"""An image pasted or dropped into the panel reaches the model and shows in the transcript (issue 31 §1),
in JupyterLab 4 and Notebook 7.

Paste: the page puts a PNG (drawn on a canvas, 3×2) on the real clipboard (`navigator.clipboard.write`,
permission granted to the page's origin), a person clicks into the message box, presses Ctrl+V,
types a question and Enter. Drop: a drop event carrying a PNG file on the composer. The kernel's
model is a `FunctionModel` that decodes the image it was sent and says its size, so the reply proves
the model received the image; the user's message shows it as an inline `data:` image.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from panel_flows import TURN_MS, expect_status, last_text, open_panel

pytestmark = pytest.mark.e2e

AGENT = '''
import base64, io
from PIL import Image
from think_nb.testing import FunctionModel

def looks(messages, info):
    content = messages[-1]["content"] if isinstance(messages[-1]["content"], list) else []
    images = [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
    if not images:
        return "I see no image."
    data = base64.b64decode(images[0].split(",", 1)[1])
    w, h = Image.open(io.BytesIO(data)).size
    return f"I see a {w}x{h} image."

seer = FunctionModel(looks)
class Seer(Think):
    def get_model(self):
        return seer.model
agent = Seer("seer")
agent.panel()
'''

CANVAS_PNG = '''async () => {
  const canvas = document.createElement("canvas");
  canvas.width = 3; canvas.height = 2;
  const g = canvas.getContext("2d"); g.fillStyle = "red"; g.fillRect(0, 0, 3, 2);
  return await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
}'''


def test_a_pasted_image_is_sent_and_shown(notebook, app: str, browser_context) -> None:
    page, panel = open_panel(notebook, AGENT)
    origin = page.evaluate("location.origin")
    browser_context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
    page.evaluate(f'''async () => {{
      const blob = await ({CANVAS_PNG})();
      await navigator.clipboard.write([new ClipboardItem({{"image/png": blob}})]);
    }}''')
    box = panel.locator("textarea.think-input")
    box.click()
    page.keyboard.press("Control+V")  # the browser's own paste of the clipboard's image
    expect(panel.locator(".think-attachment img")).to_have_count(1)
    page.keyboard.type("What is this?")
    page.keyboard.press("Enter")
    user = panel.locator(".think-message[data-role=user]")
    expect(user).to_have_count(1, timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("I see a 3x2 image.", timeout=TURN_MS)
    expect_status(panel, "ready")
    image = user.first.locator("img.think-image")
    expect(image).to_have_count(1)
    assert image.get_attribute("src").startswith("data:image/png;base64,iVBORw0KGgo")
    assert page.evaluate("() => document.querySelector('img.think-image').naturalWidth") == 3
    expect(panel.locator(".think-attachments")).to_be_hidden()


def test_a_dropped_image_is_sent_and_an_oversized_one_refused(notebook, app: str) -> None:
    page, panel = open_panel(notebook, AGENT)
    drop = f'''async ([size]) => {{
      const blob = size ? new Blob([new Uint8Array(size)], {{type: "image/png"}}) : await ({CANVAS_PNG})();
      const data = new DataTransfer();
      data.items.add(new File([blob], size ? "huge.png" : "red.png", {{type: "image/png"}}));
      const composer = document.querySelector(".think-composer");
      composer.dispatchEvent(new DragEvent("dragover", {{dataTransfer: data, bubbles: true, cancelable: true}}));
      composer.dispatchEvent(new DragEvent("drop", {{dataTransfer: data, bubbles: true, cancelable: true}}));
    }}'''
    page.evaluate(drop, [6 * 1024 * 1024])
    expect(panel.locator(".think-attach-note")).to_have_text(
        "huge.png is 6.0 MiB, more than the 5.0 MiB an attachment may be: it was not attached.")
    page.evaluate(drop, [0])
    expect(panel.locator(".think-attachment[data-name='red.png'] img")).to_have_count(1)
    panel.locator("button.think-send").click()  # an image alone, no text
    expect(last_text(panel)).to_have_text("I see a 3x2 image.", timeout=TURN_MS)
    expect(panel.locator(".think-message[data-role=user] img.think-image")).to_have_count(1)


TOOL_AGENT = '''
import base64, io
from PIL import Image
from think_nb import tool
from think_nb.testing import FunctionModel, ScriptedModel as S

@tool
def chart(color: str) -> object:
    """Draw a chart."""
    return ["the chart", Image.new("RGB", (5, 4), color)]

def plots(messages, info):
    if info.call == 1:
        return S.tool_call("chart", {"color": "blue"})
    content = messages[-1]["content"] if isinstance(messages[-1]["content"], list) else []
    images = [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
    if not images:
        return "I see no image."
    w, h = Image.open(io.BytesIO(base64.b64decode(images[0].split(",", 1)[1]))).size
    return f"The tool drew a {w}x{h} image."

plotter = FunctionModel(plots)
class Plotter(Think):
    def get_model(self):
        return plotter.model
    def get_tools(self):
        return [chart]
agent = Plotter("plotter")
agent.panel()
'''


def test_a_tools_image_reaches_the_model_and_shows_in_its_card(notebook, app: str) -> None:
    _page, panel = open_panel(notebook, TOOL_AGENT)
    panel.locator("textarea.think-input").fill("draw it")
    panel.locator("textarea.think-input").press("Enter")
    expect(last_text(panel)).to_have_text("The tool drew a 5x4 image.", timeout=TURN_MS)
    card = panel.locator(".think-tool[data-tool-name=chart]")
    expect(card).to_have_attribute("open", "")  # open: the image is there to see
    expect(card.locator(".think-tool-text")).to_have_text("the chart")
    image = card.locator("img.think-tool-image")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.naturalWidth") == 5
