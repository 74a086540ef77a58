"""Source of notebooks/memory.ipynb: run `python notebooks/make_memory.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# Memory: context blocks, compaction, search, sessions

A model remembers nothing between calls: everything it knows about the conversation is what
the agent sends it each time, the **system prompt** and the **history**. think_nb (like
Cloudflare's Think) manages both for you in a **session**:

- **context blocks**: labelled pieces of the system prompt. Some are read-only (a persona,
  facts you provide); some are *writable*, and the model gets a `set_context` tool to write
  them: that is how it remembers things across turns and conversations;
- **compaction**: when the history grows long, its middle is replaced by a summary, without
  deleting anything;
- **search**: full-text search over everything said (SQLite FTS5);
- **sessions**: several conversations for one agent, sharing its memory.

Everything lives in the SQLite file beside this notebook. The agent here uses a `ScriptedModel`
(a fake model that plays back a script and records in `.requests` what it was sent) so you can
see exactly what the model would receive. For a hosted model, one line in the class:

```python
def get_model(self): return "openai/gpt-4o-mini"   # and set OPENAI_API_KEY
```"""),
    new_code_cell('''%load_ext think_nb
from think_nb import Think
from think_nb.testing import ScriptedModel as S

script = S([])  # an empty script: before each turn we append the model's reply to it


def model_replies(*steps):
    """Queue the scripted model's next replies, one list of items per model call."""
    script.steps.extend(list(step) for step in steps)'''),
    new_markdown_cell("""## 1. Configure the session

`configure_session(session)` runs once, when the agent first needs its memory. Each
`with_context(label, ...)` adds a block:

- `soul` has a **provider**: any object with a `get()` method. With only `get()` it is
  read-only; here it returns a fixed persona, but it could read a file or a database.
- `memory` has no provider, so it is **writable** and stored in SQLite; `max_tokens` caps it.

`compact_after(tokens)` turns on automatic compaction (section 5). We count tokens as words,
to keep the numbers easy to follow; by default litellm counts them for the agent's model."""),
    new_code_cell('''class Persona:
    def get(self):
        return "You are Ada, a concise assistant who plans meals."


def words(text):
    return len(text.split())


class Ada(Think):
    def get_model(self):
        return script.model          # a hosted model instead: return "openai/gpt-4o-mini"

    def configure_session(self, session):
        return (session
                .with_context("soul", provider=Persona())
                .with_context("memory", description="Facts about the user", max_tokens=60)
                .compact_after(120, token_counter=words))


ada = Ada("memory-demo")
# Run All again starts this demo afresh: no transcript, an empty memory, no other sessions
ada.clear_messages()
await ada.session.set_block("memory", "")
for session_id in ada.sessions()["id"][1:]:  # the first is the default session, which stays
    ada.delete_session(session_id)
ada.context_blocks()'''),
    new_markdown_cell("""The chat panel of `ada`: every turn below streams into it, and its **Context** tab shows the
blocks as the model writes them."""),
    new_code_cell("ada.panel()"),
    new_markdown_cell("""`context_blocks()` is a DataFrame of what the prompt is made of: each block's kind, whether the
model may write it, its size and how full it is. The system prompt is rendered from them:"""),
    new_code_cell("print(await ada.session.system_prompt())"),
    new_markdown_cell("""## 2. The model writes its memory

Because `memory` is writable, the agent offers the model a `set_context` tool whose `label`
can only be a writable block. In this turn the (scripted) model hears something worth
remembering, appends it to `memory`, then answers."""),
    new_code_cell('''model_replies(
    [S.tool_call("set_context", {"label": "memory", "action": "append",
                                 "content": "User: Sam, lives in Lyon, allergic to peanuts."})],
    [S.text("Nice to meet you, Sam! I will keep peanuts off the menu.")],
)
await ada.send("Hi, I'm Sam from Lyon. I'm allergic to peanuts.")
ada.tool_calls_df()[["tool_name", "input", "output"]]'''),
    new_markdown_cell("The tool the model was offered on its first call (its schema lists the writable blocks):"),
    new_code_cell('''set_context = next(t["function"] for t in script.requests[0]["tools"]
                   if t["function"]["name"] == "set_context")  # the workspace tools come first
print(set_context["description"])
set_context["parameters"]["properties"]["label"]'''),
    new_code_cell('ada.context_blocks()[["label", "kind", "tokens", "max_tokens", "percent_used", "content"]]'),
    new_markdown_cell("""The write is stored at once. In think_nb the prompt is rendered at the start of **every** turn,
so the very next turn's system prompt contains it (Think freezes the prompt instead, for hosted
models' prompt caches: `session.freeze_prompt()` gives you that behaviour). Next turn:"""),
    new_code_cell('''model_replies([S.text("Try a chickpea salad with lemon: no peanuts, and easy to find in Lyon.")])
await ada.send("Suggest a lunch.")
print(script.requests[-1]["messages"][0]["content"])  # the system message the model received'''),
    new_markdown_cell("""A block's `max_tokens` is enforced: a write that is too long is refused, the call **fails**
(its card in the panel says "failed") and the model is told why in the error, so it can shorten
it. You can also write blocks yourself:"""),
    new_code_cell('''model_replies([S.tool_call("set_context", {"label": "memory", "content": "blah " * 100})],
              [S.text("Sorry, that was too long; I kept the old memory.")])
await ada.send("Remember this long story...")
print(ada.tool_calls_df()[["state", "error_text"]].iloc[-1].tolist())

await ada.session.set_block("memory", "User: Sam, lives in Lyon, allergic to peanuts. Vegetarian.")
ada.session.get_context_block("memory").content'''),
    new_markdown_cell("""## 3. Look at the conversation as DataFrames

`messages_df()` is the current branch, one row per message; `tool_calls_df()` every tool call;
`usage_df()` the tokens and cost of each turn. `usage_source` says who counted: the provider
(`reported`) or nobody (`None`: unknown, `<NA>`, never 0; the panel shows "usage unknown").
When a hosted provider sends no usage, litellm's tokenizer estimate is kept apart in
`estimated_tokens` (a guess, not a count). The scripted model reports no usage of its own and runs
in the kernel without litellm, so its counts are unknown and nothing estimates them; it has no
price either, so `cost_usd` is NaN (unknown)."""),
    new_code_cell('ada.messages_df()[["role", "text", "parts", "tool_calls", "total_tokens"]]'),
    new_code_cell('ada.usage_df()[["model", "prompt_tokens", "completion_tokens", "total_tokens", "usage_source",\n'
                  '              "estimated_tokens", "cost_usd"]]'),
    new_markdown_cell("""## 4. Search

Every message is indexed with SQLite FTS5. `agent.search(query)` matches the query as a phrase,
best first, with the hit marked in `snippet`; `%think search` is the same from a magic line."""),
    new_code_cell('ada.search("peanuts")[["role", "snippet"]]'),
    new_code_cell("%think search chickpea salad --agent ada"),
    new_markdown_cell("""## 5. Compaction

The history grows with every turn, and a model's context window does not. `compact_after(120)`
means: before a turn, if the system prompt plus the history exceed 120 tokens (words, here),
summarise the middle of the history. The summary is written by the agent's own model (here the
script's next reply), the first messages and the latest ones are kept verbatim, and **nothing
is deleted**: the summary is an *overlay* applied when the history is read.

How big is the history now?"""),
    new_code_cell("ada.session.token_estimate(system=await ada.session.system_prompt())"),
    new_markdown_cell("""Over the threshold, so the next turn compacts first. The script gets two replies: the summary
(for the compaction call), then the turn's answer."""),
    new_code_cell('''model_replies(
    [S.text("## Topic\\nMeal ideas for Sam.\\n## Key Points\\nAda suggested a chickpea salad.")],
    [S.text("Tonight: a mushroom risotto, vegetarian and peanut-free.")],
)
await ada.send("And for dinner?")
overlay = ada.session.overlays()[0]
print(f"overlay {overlay.id}: messages {overlay.from_id} .. {overlay.to_id}, {overlay.tokens_before} tokens before")
print(overlay.summary)'''),
    new_markdown_cell("""What the model sees now (`session.history()`): the first messages, one synthetic
`compaction_…` message holding the summary, then the recent messages. What is stored
(`ada.messages`) is unchanged:"""),
    new_code_cell('''for m in ada.session.history():
    print(f"{m['id'][:14]:15} {m['role']:9} {m['parts'][-1].get('text', m['parts'][-1]['type'])[:60]!r}")
print(len(ada.session.history()), "messages sent to the model;", len(ada.messages), "stored")'''),
    new_markdown_cell("""And the request the model received for "And for dinner?" had the summary in place of the
middle of the conversation:"""),
    new_code_cell('''for m in script.requests[-1]["messages"]:
    print(f"{m['role']:9}", repr((m.get("content") or "(tool calls)")[:70]))'''),
    new_markdown_cell("""`await ada.compact()` (or `await ada.session.compact()`) compacts on demand and returns what it
did (None when there is nothing in the middle to summarise). A second compaction extends the
first: the summariser is given the previous summary to update. `session.on_compaction(fn)`
replaces the summariser with your own function, e.g. `create_compact_function(protect_head=1,
tail_token_budget=2000)` or any `async fn(messages, ctx)`."""),
    new_code_cell('''model_replies([S.text("## Topic\\nMeal ideas for Sam.\\n## Key Points\\nLunch: chickpea salad. "
                      "Dinner: mushroom risotto.")])
await ada.compact()'''),
    new_code_cell('''print(script.requests[-1]["messages"][-1]["content"][:400])  # what the summariser was asked'''),
    new_markdown_cell("""## 6. Sessions

An agent can hold several conversations. `create_session(name)` starts an empty one and
switches to it; the **memory is shared**, so Ada still knows Sam in the new conversation."""),
    new_code_cell('''ada.create_session("weekend")
model_replies([S.text("A picnic in the Parc de la Tête d'Or, peanut-free!")])
await ada.send("Plan my weekend.")
print("memory in the new session's prompt:", "Sam" in script.requests[-1]["messages"][0]["content"])
ada.sessions()[["id", "name", "active", "messages"]]'''),
    new_code_cell('''ada.switch_session("default")
ada.messages_df()[["role", "text"]].tail(2)'''),
    new_markdown_cell("""`%think context ada`, `%think messages ada` and `%think sessions ada` show the same DataFrames
from a magic line, and the chat panel (`%think ada`) has a context tab with the blocks. Next:
`sub_agents.ipynb`, agents that delegate to other agents."""),
    new_code_cell("%think context ada"),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("memory.ipynb").write_text(nbformat.writes(nb))
