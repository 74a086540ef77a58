"""Source of notebooks/sub_agents.ipynb: run `python notebooks/make_sub_agents.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# Sub-agents, cancellation and programmatic turns

An agent can drive another agent: a *lead* hands a question to a *researcher*, watches it
work, and uses its answer. In think_nb (as in Cloudflare's Think) a **sub-agent** is an ordinary
agent class, created by its parent with `sub_agent(Child, name)`: it has its own system prompt,
tools and transcript, stored in the parent's SQLite file under its own key.

This notebook shows:

1. `chat(message, callback)`: run a child's turn and receive its stream as events;
2. `delegate(child, message)` from inside one of the parent's tools: the child's progress
   shows up in the parent's message;
3. cancelling a turn: `cancel_chat`, `abort_request`, an `AbortController`;
4. turns started by code: `save_messages`, chaining from `on_chat_response`, `continue_last_turn`.

The researcher runs on the small model embedded in think_nb (SmolLM2-135M, offline, a few seconds
per call; its answers are short and not always right). The other agents use a `ScriptedModel`, a
fake model that plays back a script and records in `.requests` what it was sent. For a hosted
model, one line in any class:

```python
def get_model(self): return "openai/gpt-4o-mini"   # and set OPENAI_API_KEY
```"""),
    new_code_cell('''%load_ext think_nb
import asyncio
import json

from think_nb import AbortController, Think
from think_nb.messages import user_message
from think_nb.testing import ScriptedModel as S'''),
    new_markdown_cell("""## 1. A child agent and `chat()`

`Researcher` has no `get_model()`, so it runs on the embedded model. `chat()` runs one full turn
and calls the callback's methods as it goes: `on_start({"request_id"})`, `on_event(json)` for
every streamed chunk (AI SDK UIMessageChunks: `text-delta`, `tool-input-available`, ...), then
`on_done()` or `on_error(message)`. Each method may be sync or async, and any may be left out."""),
    new_code_cell('''class Researcher(Think):
    max_steps = 1
    # def get_model(self): return "openai/gpt-4o-mini"   # a hosted model instead

    def get_system_prompt(self):
        return "You are a researcher. Answer in one short sentence."


class Printer:
    """A chat() callback that prints what happens."""

    def on_start(self, info):
        self.request_id, self.text, self.deltas = info["request_id"], "", 0
        print("start", self.request_id)

    def on_event(self, raw):
        chunk = json.loads(raw)
        if chunk["type"] == "text-delta":  # many small pieces of text: counted, not printed
            self.text += chunk["delta"]
            self.deltas += 1
        else:
            print("  event", chunk["type"])

    def on_done(self):
        print(f"done after {self.deltas} text-delta events:", repr(self.text))

    def on_error(self, message):
        print("error:", message)


class Lead(Think):
    pass   # filled in below; for now it only owns the researcher


lead = Lead("lead")
researcher = lead.sub_agent(Researcher, "r1")
researcher.clear_messages()  # Run All again starts this demo afresh
researcher'''),
    new_code_cell('result = await researcher.chat("What is the capital of France?", Printer())'),
    new_markdown_cell("""## 2. Delegating from a tool

A parent usually delegates from one of its **tools**: the model decides to ask the researcher.
Inside the tool, `await self.delegate(child, message)` runs `child.chat(...)`, mirrors the
child's progress into the parent's running turn as a `data-subagent` part (the chat panel shows
it live as a nested card), and returns the child's final text, which becomes the tool's output.

A method of the agent can be a tool: `get_tools` returns `[self.research]`."""),
    new_code_cell('''lead_script = S([
    [S.tool_call("research", {"question": "What is the largest planet?"})],
    [S.text("My researcher has answered; see the research result above.")],
])


class Lead(Think):
    def get_model(self):
        return lead_script.model

    def get_tools(self):
        return [self.research]

    async def research(self, question: str) -> str:
        """Ask the research sub-agent a question."""
        return await self.delegate(self.sub_agent(Researcher, "r1"), question)


lead = Lead("lead")
lead.clear_messages()  # Run All again starts this demo afresh
result = await lead.send("Which planet is the largest?")
for part in lead.messages[-1]["parts"]:
    if part["type"] != "step-start":
        print(json.dumps(part)[:300])'''),
    new_markdown_cell("""The `data-subagent` part names the child (its storage key), its request, status, text and the
tools it used. The child kept its own transcript (with the earlier `chat()` too), in the same
SQLite file:"""),
    new_code_cell('''researcher = lead.sub_agent(Researcher, "r1")
print(researcher.name, "of", researcher.parent.name)
researcher.messages_df()[["role", "text"]]'''),
    new_markdown_cell("""The parent keeps a record of its children in the same file, so a new `Lead` object (after a
kernel restart, say) knows them too: `list_sub_agents()` lists them, `has_sub_agent(Researcher,
"r1")` asks about one, `delete_sub_agent(Researcher, "r1")` removes one and everything stored for it,
and `abort_sub_agent(Researcher, "r1")` stops its running turn (the delegating tool then reports an
error to the parent's model, and the parent's turn goes on). Each `delegate` is also recorded as an
*agent-tool run* (`lead.agent_tool_runs()`): if the kernel dies while the researcher works, creating
the `Lead` again hands the researcher's finished answer to the tool call instead of asking it again."""),
    new_code_cell('''again = Lead("lead")  # a new object for the same parent: its children come from the file
again.list_sub_agents(Researcher), again.has_sub_agent(Researcher, "r1")'''),
    new_markdown_cell("""## 3. Cancelling a turn

A turn can be stopped from outside. Whatever was streamed so far is **kept** (the partial
message is stored) and the turn ends with status `aborted`. Three ways:

- `child.cancel_chat(request_id)`: for a `chat()`; the id comes with `on_start`;
- `agent.abort_request(request_id)`: for any turn (`abort_all_requests()` stops them all);
- an `AbortController`: pass its `signal` to `chat`, `save_messages`, `continue_last_turn`, and
  call `controller.abort(reason)` from anywhere.

A slow scripted model (a chunk every 20 ms) makes the turn take a while:"""),
    new_code_cell('''class Talker(Think):
    def get_model(self):
        return talk.model


talk = S([[S.text("Once upon a time, " + "there was a very long story " * 20, chunk_size=4)]] * 3, delay=0.02)
talker = lead.sub_agent(Talker, "t1")
talker.clear_messages()  # Run All again starts this demo afresh

printer = Printer()
task = asyncio.ensure_future(talker.chat("Tell me a long story", printer))
await asyncio.sleep(0.3)
talker.cancel_chat(printer.request_id, "changed my mind")
result = await task
result.status, result.message["parts"][-1]["text"]'''),
    new_markdown_cell("`abort_request` with a request id of your choosing (`submit` accepts one):"),
    new_code_cell('''task = talker.submit("Another story, please", request_id="req_story_2")
await asyncio.sleep(0.3)
talker.abort_request("req_story_2")
result = await task
result.status, len(result.message["parts"][-1]["text"]), "characters kept"'''),
    new_markdown_cell("And an `AbortController`, the same shape as the browser's:"),
    new_code_cell('''controller = AbortController()
task = asyncio.ensure_future(talker.save_messages([user_message("A third story")], signal=controller.signal))
await asyncio.sleep(0.3)
controller.abort("the user closed the tab")
result = await task
print(result.status, "| aborted:", controller.signal.aborted, "| reason:", controller.signal.reason)
[(t["trigger"], t["status"]) for t in talker.turns(limit=3)]  # the last 3: the log outlives clear_messages'''),
    new_markdown_cell("""## 4. Turns started by code

`send()` is for a person's message. Code can start turns too:

- `save_messages(messages)` appends any messages (or `fn(current_messages) -> messages`,
  evaluated when the turn actually starts, after queued turns) and runs a turn;
- `on_chat_response(result)` runs after each turn is stored: a good place to **chain** a
  follow-up turn;
- `continue_last_turn()` asks the model to keep going from the last assistant message (for a
  reply cut short), stored as a new assistant message marked as a continuation.

Here a `Writer` drafts, and its `on_chat_response` asks itself for a review of every draft, once."""),
    new_code_cell('''writer_script = S([
    [S.text("DRAFT: Roses are red, the kernel is warm.")],
    [S.text("Review: good rhythm; the second line needs a rhyme.")],
    [S.text("Revised: Roses are red, the kernel is warm, my agent")],
    [S.text(" replies in perfect form.")],
])


class Writer(Think):
    def get_model(self):
        return writer_script.model

    async def on_chat_response(self, result):
        print(f"on_chat_response: {result.status}, {result.request_id}")
        text = result.message["parts"][-1].get("text", "") if result.message else ""
        if result.status == "completed" and text.startswith("DRAFT"):
            def review(messages):
                return [user_message(f"Review your draft ({len(messages)} messages so far).")]
            await self.save_messages(review)


writer = lead.sub_agent(Writer, "w1")
writer.clear_messages()  # Run All again starts this demo afresh
await writer.send("Write a two-line poem.")
await writer.wait_until_stable()
writer.messages_df()[["role", "text"]]'''),
    new_markdown_cell("""The review turn was started by `on_chat_response` and ran after the first turn finished (turns
of one agent never overlap: they queue). The turn log shows both, with their triggers:"""),
    new_code_cell('[(t["trigger"], t["status"]) for t in writer.turns(limit=2)]  # this run\'s two'),
    new_markdown_cell("""A programmatic turn: `save_messages` with a plain list. Its reply ends mid-sentence (as a
reply cut by a token limit would), so we ask the model to continue it:"""),
    new_code_cell('''result = await writer.save_messages([user_message("Now revise the poem.")])
print(result.status, repr(writer.messages[-1]["parts"][-1]["text"]))
result = await writer.continue_last_turn()
print(result.status, "continuation:", result.continuation, repr(writer.messages[-1]["parts"][-1]["text"]))
print("the model was asked:", writer_script.requests[-1]["messages"][-1])'''),
    new_code_cell('writer.messages_df()[["role", "text"]].tail(3)'),
    new_markdown_cell("""`continue_last_turn` does nothing (status `skipped`) when the last message is not the
assistant's."""),
    new_markdown_cell("""## 5. Telling the user something without a turn

A background job finishes, a scheduled check finds something: `deliver_notice(text)` puts an
assistant message in the transcript, and in every panel, **without running the model** (Think's
`deliverNotice`). It is safe from inside a tool of a running turn too. With `inform_model=True`
the stored text says it was delivered out of band, which is what the model reads on later turns;
`kind=` (`notice`, `interim`, `final`, `command`) is kept in the message's metadata."""),
    new_code_cell('''export_script = S([
    [S.text("I started the export of the orders table; I will let you know.")],
    [S.text("Yes: the export finished with 1,204 rows.")],
])


class Reporter(Think):
    def get_model(self):
        return export_script.model


reporter = Reporter("notices")
reporter.clear_messages()  # Run All again starts this demo afresh
display(reporter.panel())
await reporter.send("Export the orders table.")
# later, when the job is done (a callback, a scheduled task, this cell): no model call, no turn
await reporter.deliver_notice("The orders export finished: 1,204 rows.", inform_model=True)
print("model calls so far:", len(export_script.requests))
await reporter.send("Is the export done?")
for message in export_script.requests[-1]["messages"]:   # what the model read on its second call
    print(f"{message['role']:>9}: {message['content'].splitlines()[0][:90]}")'''),
    new_markdown_cell("""Next: `hooks.ipynb`, every hook of a turn and stepping through one cell by cell."""),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("sub_agents.ipynb").write_text(nbformat.writes(nb))
