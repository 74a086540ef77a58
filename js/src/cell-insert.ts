/**
 * "Into a cell": a `run_code` card's code goes into a new notebook cell below the panel's cell.
 *
 * A widget cannot reach the notebook's model, so the panel asks: the card's button dispatches
 * `INSERT_CELL_EVENT` (a bubbling, cancelable CustomEvent whose detail is `{code, handled}`), and
 * think_nb's JupyterLab extension (js/cells/, shipped prebuilt in the wheel as
 * share/jupyter/labextensions/think-nb-cells, loaded by JupyterLab 4 and Notebook 7) inserts the
 * cell below the cell whose output holds the button, then acknowledges while the event is being
 * dispatched: `detail.handled = true` and `preventDefault()`. No acknowledgement (no extension:
 * marimo, VS Code, classic Notebook, a saved or static notebook; or a panel that is not in a notebook
 * cell's output) and the code is copied to the clipboard instead, and the card says so.
 */
import { copyText } from "./clipboard";

/** The event's name: the contract with js/cells/src/index.ts. */
export const INSERT_CELL_EVENT = "think-nb:insert-cell";

/** The event's detail. The extension sets `handled` once the cell is in the notebook. */
export interface InsertCellDetail {
  code: string;
  handled: boolean;
}

/** What a click did: the cell was added, the code was copied instead, or neither was possible. */
export type IntoCellOutcome = "inserted" | "copied" | "failed";

/** What the card says after the click, per outcome. */
export const INTO_CELL_NOTE: Record<IntoCellOutcome, string> = {
  inserted: "added as a new cell below the panel",
  copied: "copied — paste it into a cell",
  failed: "could not copy — select the code above and copy it",
};

/** Dispatch the request from `from` (an element inside the panel); true when an extension handled it. */
export function requestCell(from: Element, code: string): boolean {
  const detail: InsertCellDetail = { code, handled: false };
  const event = new CustomEvent<InsertCellDetail>(INSERT_CELL_EVENT, { bubbles: true, composed: true, cancelable: true, detail });
  from.dispatchEvent(event);
  return detail.handled === true || event.defaultPrevented;
}

/** Put `code` into a new cell below the panel's cell, else copy it to the clipboard. */
export async function intoCell(from: Element, code: string): Promise<IntoCellOutcome> {
  if (requestCell(from, code)) return "inserted";
  return (await copyText(code)) ? "copied" : "failed";
}
