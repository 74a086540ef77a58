/**
 * Interrupting the panel's kernel through Jupyter Server, the way the notebook toolbar's ■ does.
 *
 * While `run_code` runs the agent's code on the kernel's own thread, the kernel reads no comm
 * message, so the panel's `chat_request_cancel` frame waits until the code ends. Stop therefore
 * also asks the server: `POST {baseUrl}api/kernels/{kernel_id}/interrupt` (Jupyter Server's REST
 * API; the server signals the kernel, KeyboardInterrupt is raised inside the code). The request
 * is built as @jupyterlab/services' `ServerConnection.makeRequest` builds it: the base URL and the
 * token from the page's `#jupyter-config-data` JSON (JupyterLab 4 and Notebook 7 both write it),
 * `Authorization: token …` when there is a token, the `_xsrf` cookie as `X-XSRFToken`, and the
 * page's cookies.
 *
 * Where there is no server (marimo, a saved notebook, a page without that JSON) or no kernel
 * id, `interruptKernel` resolves `{ok: false, reason}` without a request, and the panel says so.
 */

/** Where the page's Jupyter Server is: its base URL (ends with "/") and token ("" if none). */
export interface JupyterServer {
  baseUrl: string;
  token: string;
}

/** The Jupyter Server of `doc`'s page, from `#jupyter-config-data`, or null when there is none. */
export function jupyterServer(doc: Document = document): JupyterServer | null {
  const el = doc.getElementById("jupyter-config-data");
  if (!el?.textContent) return null;
  let config: unknown;
  try {
    config = JSON.parse(el.textContent);
  } catch {
    return null;
  }
  if (typeof config !== "object" || config === null) return null;
  const { baseUrl, token } = config as { baseUrl?: unknown; token?: unknown };
  if (typeof baseUrl !== "string" || !baseUrl) return null;
  return { baseUrl: baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`, token: typeof token === "string" ? token : "" };
}

/** The `_xsrf` cookie's value (Tornado's XSRF token), or "" when the page has none. */
export function xsrfToken(cookie: string): string {
  for (const pair of cookie.split(";")) {
    const at = pair.indexOf("=");
    if (at > 0 && pair.slice(0, at).trim() === "_xsrf") return decodeURIComponent(pair.slice(at + 1).trim());
  }
  return "";
}

export interface InterruptResult {
  ok: boolean;
  /** Why the kernel was not interrupted (shown in the panel). */
  reason?: string;
}

/** Why Stop cannot interrupt code running in this panel's kernel here, or null when it can. */
export function cannotInterrupt(kernelId: string, doc: Document = document): string | null {
  if (!jupyterServer(doc)) {
    return "Stop cannot interrupt the kernel here (no Jupyter Server on this page): the agent's code runs until it ends, then the turn stops.";
  }
  if (!kernelId) return "Stop cannot interrupt the kernel: the kernel did not say its id. The agent's code runs until it ends, then the turn stops.";
  return null;
}

/** Ask the page's Jupyter Server to interrupt kernel `kernelId` (see the module docstring). */
export async function interruptKernel(
  kernelId: string,
  doc: Document = document,
  fetcher: typeof fetch = globalThis.fetch.bind(globalThis),
): Promise<InterruptResult> {
  const why = cannotInterrupt(kernelId, doc);
  const server = jupyterServer(doc);
  if (why || !server) return { ok: false, reason: why ?? undefined };
  const headers: Record<string, string> = {};
  if (server.token) headers.Authorization = `token ${server.token}`;
  const xsrf = xsrfToken(doc.cookie);
  if (xsrf) headers["X-XSRFToken"] = xsrf;
  const url = `${server.baseUrl}api/kernels/${encodeURIComponent(kernelId)}/interrupt`;
  try {
    const res = await fetcher(url, { method: "POST", headers, credentials: "same-origin", cache: "no-store" });
    if (res.ok) return { ok: true };
    return { ok: false, reason: `Jupyter Server did not interrupt the kernel (HTTP ${res.status}).` };
  } catch (err) {
    return { ok: false, reason: `Jupyter Server could not be reached to interrupt the kernel (${String(err)}).` };
  }
}
