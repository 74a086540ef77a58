"""Self-test of the browser harness on a plain anywidget (no think_nb needed)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jlab import run_all

pytestmark = pytest.mark.e2e

WIDGET = '''
import anywidget, traitlets
class Probe(anywidget.AnyWidget):
    _esm = """
    export default { render({ model, el }) {
      const d = document.createElement("div"); d.className = "probe-root";
      const draw = () => {
        d.dataset.count = String(model.get("count")); d.textContent = "count " + model.get("count");
      };
      model.on("change:count", draw); draw(); el.appendChild(d);
    } }"""
    count = traitlets.Int(0).tag(sync=True)
w = Probe(); w
'''


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_server_browser_and_widgets_work(notebook, app: str) -> None:
    page = notebook(["import os; print('env', os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])",
                     WIDGET, "w.count = 7"])
    run_all(page)
    expect(page.locator(".jp-OutputArea-output", has_text="env True")).to_be_visible(timeout=30_000)
    expect(page.locator(".probe-root")).to_have_attribute("data-count", "7", timeout=30_000)
