"""Browser tools (Think's `createBrowserTools`): the model reads, scrapes, screenshots and drives web
pages in a real Chromium over the Chrome DevTools Protocol, through Playwright.

    from think_nb.browser import browser_tools

    class Researcher(Think):
        def get_tools(self):
            return browser_tools(allow_hosts=["docs.python.org"])

An optional extra: `pip install 'think-nb[browser]'` (Playwright; the system `/usr/bin/chromium` is
launched, so `playwright install` is not needed). Modules: `tools` (the tools), `page` (one call's
page and what the actions read), `netguard` (the fetch tool's guard on every request a page makes),
`host` (the kernel's one browser, on its own thread, closed with the kernel and `Think.shutdown()`).
"""

from think_nb.browser.host import close_browser
from think_nb.browser.tools import browser_tools

__all__ = ["browser_tools", "close_browser"]
