/**
 * think-nb-cells: the JupyterLab 4 / Notebook 7 plugin behind a `run_code` card's "Into a cell".
 *
 * The panel (an anywidget) cannot reach the notebook's model; this plugin can. It listens on the
 * document for the card's `INSERT_CELL_EVENT` (js/src/cell-insert.ts), finds the notebook cell whose
 * output holds the element that dispatched it, inserts a code cell holding exactly `detail.code`
 * below it (never runs it), makes it the active cell, and acknowledges (`detail.handled = true`,
 * `preventDefault()`) while the event is dispatched. A request from outside a notebook cell (a
 * cloned output view, a sidebar) or into a notebook that refuses the insert is left unacknowledged,
 * so the card copies the code instead.
 *
 * It also adds, once, the style that hides the widget renderer's "Error displaying widget: model not
 * found" line above a panel's static transcript in a reopened notebook, trusted or not
 * (js/src/static-transcript.ts).
 *
 * It imports nothing from JupyterLab: it reaches notebooks through the application's shell
 * (`app.shell.widgets("main")`, both Lab's and Notebook 7's), so it shares no module versions with
 * the host and loads in any JupyterLab 4 / Notebook 7. Built with @jupyter/builder (`npm run
 * build:cells` in js/) into think_nb/labextension/, which the wheel installs as
 * share/jupyter/labextensions/think-nb-cells.
 */
import { INSERT_CELL_EVENT, type InsertCellDetail } from "../../src/cell-insert";
import { installStaticTranscriptStyle } from "../../src/static-transcript";

/** What this plugin uses of a notebook panel (JupyterLab's NotebookPanel / Notebook / ISharedNotebook). */
export interface NotebookPanelLike {
  node: HTMLElement;
  content: {
    widgets: ReadonlyArray<{ node: HTMLElement }>;
    model: { sharedModel: { insertCell(index: number, cell: { cell_type: "code"; source: string; metadata: object }): unknown } } | null;
    activeCellIndex: number;
  };
}

/** What this plugin uses of the application (JupyterFrontEnd). */
export interface AppLike {
  shell: { widgets(area?: string): Iterable<unknown>; currentWidget?: unknown };
}

function isNotebookPanel(widget: unknown): widget is NotebookPanelLike {
  const w = widget as Partial<NotebookPanelLike> | null;
  return !!w && w.node instanceof HTMLElement && !!w.content && Array.isArray(w.content.widgets) && !!w.content.model?.sharedModel;
}

/** The notebook panel and the index of the cell whose node holds `target`, else null. */
export function cellOf(app: AppLike, target: Node): { panel: NotebookPanelLike; index: number } | null {
  const seen = new Set<unknown>();
  const candidates = [...app.shell.widgets("main"), app.shell.currentWidget];
  for (const widget of candidates) {
    if (seen.has(widget) || !isNotebookPanel(widget) || !widget.node.contains(target)) continue;
    seen.add(widget);
    const index = widget.content.widgets.findIndex((cell) => cell.node.contains(target));
    if (index >= 0) return { panel: widget, index };
  }
  return null;
}

/** Insert a code cell holding `code` below the cell that holds `target`; true when it is in the notebook. */
export function insertBelow(app: AppLike, target: Node, code: string): boolean {
  const found = cellOf(app, target);
  if (!found || !found.panel.content.model) return false;
  try {
    found.panel.content.model.sharedModel.insertCell(found.index + 1, { cell_type: "code", source: code, metadata: {} });
  } catch (err) {
    console.warn("think-nb-cells: the notebook refused the new cell", err);
    return false;
  }
  found.panel.content.activeCellIndex = found.index + 1;
  return true;
}

/** Handle one request event; ignores anything that is not a well-formed request. */
export function handle(app: AppLike, event: Event): void {
  const detail = (event as CustomEvent<InsertCellDetail>).detail;
  if (!detail || typeof detail !== "object" || typeof detail.code !== "string" || detail.handled === true) return;
  const target = event.composedPath()[0] ?? event.target;
  if (!(target instanceof Node)) return;
  if (!insertBelow(app, target, detail.code)) return;
  detail.handled = true;
  event.preventDefault();
}

const plugin = {
  id: "think-nb-cells:plugin",
  description: "Puts a think_nb run_code card's code into a new cell below the panel's cell; a reopened notebook shows a panel's transcript alone.",
  autoStart: true,
  activate(app: AppLike): void {
    document.addEventListener(INSERT_CELL_EVENT, (event) => handle(app, event));
    installStaticTranscriptStyle(document);
  },
};

export default plugin;
