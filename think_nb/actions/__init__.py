"""Actions: Think's `action()` / `getActions()` — server tools with durable guarantees.

    from think_nb import Think, action, ActionContext

    @action(idempotency_key="order_id", approval="approval-gated", permissions=["orders:refund"],
            risk="high", summary="Refund an order")
    def refund(order_id: str, amount: float, ctx: ActionContext) -> dict:
        '''Refund an order.'''
        ...

    class Shop(Think):
        def get_actions(self):
            return [refund]

What an action adds to a tool: a durable idempotency ledger in the agent's SQLite file (a
settled result is replayed, never re-run, also after a restart), approval (`approval-gated`: the
panel's Approve/Deny, the request carrying Think's approval descriptor; `durable-pause`: the call
is parked in SQLite, the turn ends, and `approve_execution(id)` / `reject_execution(id)` decide
later, also after a restart), permissions (`authorize_turn` / `authorize_action`), a timeout (30 s),
outputs normalized and bounded at 20,000 characters, failures as `{"error": {"name", "message"}}`
outputs, and reply attachments (`ctx.attach_reply`).

Modules: `spec` (the `@action` definition), `context` (`ActionContext`, attachments), `compile`
(`get_actions()` → tools), `runner` (one call, in order), `authorize`, `ledger`, `invoke` (the
function under its timeout), `output` (bounds and envelopes), `pause` (durable pauses). Tables:
`think_nb.store.actions`.
"""

from think_nb.lazy import attach as _attach

TYPE_CHECKING = False  # not typing's: this package is imported by every turn (`authorize`), its names only by actions
if TYPE_CHECKING:
    from think_nb.actions.context import ActionAuthorizationContext, ActionContext
    from think_nb.actions.spec import Action, action

_LAZY = {"Action": ".spec", "action": ".spec", "ActionAuthorizationContext": ".context", "ActionContext": ".context"}
"""The public names load on first access (`think_nb.lazy`): a turn that imports `think_nb.actions.authorize`
does not build `Action` or the contexts (dataclasses: ~2-4 M instructions each, issue 29 §3)."""

__all__ = ["Action", "ActionAuthorizationContext", "ActionContext", "action"]

__getattr__ = _attach(__name__, _LAZY)
