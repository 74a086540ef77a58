"""Images and files reach the model (issue 31 §1): exact request bodies over litellm's real OpenAI and
Anthropic providers (`FakeProvider` on 127.0.0.1, which refuses what the real APIs refuse).

A user message's `file` parts, a tool's returned figure / PIL image / PNG bytes / workspace PNG, a PDF and
a text file, each as the provider takes it; a model without vision gets a note; old media are left out
of requests (and, once aged past the stored window, evicted from storage: tests/test_media_eviction.py).
"""

from __future__ import annotations

import base64
import io
import json

import pytest

from providers.agents import hosted_agent, server  # noqa: F401 - the fixture
from providers.server import Call, FakeProvider, Reply
from think_nb import tool
from think_nb.messages import media
from think_nb.models.resolve import LOCAL_MODEL, ModelConfig


def png(color: str = "red", size: tuple[int, int] = (8, 6)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


PNG = png()
NOTES = "# Plan\n- ship it"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def user_with(*files: dict, text: str = "What is in this?") -> dict:
    return {"role": "user", "parts": [{"type": "text", "text": text}, *files]}


def image_part(data: bytes = PNG, name: str = "shot.png") -> dict:
    return {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{b64(data)}", "filename": name}


def anthropic_image(data: bytes) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(data)}}


def openai_image(data: bytes) -> dict:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(data)}"}}


def last_user(fake: FakeProvider, n: int = -1) -> dict:
    return [m for m in fake.requests[n]["messages"] if m["role"] == "user"][-1]


async def test_user_image_reaches_the_model(server: FakeProvider) -> None:  # noqa: F811
    server.replies.append(Reply(text="A red square."))
    agent = hosted_agent(server)
    result = await agent.save_messages([user_with(image_part())])
    assert result.status == "completed" and not server.rejections
    sent = last_user(server)
    if server.format == "openai":
        assert sent == {"role": "user", "content": [{"type": "text", "text": "What is in this?"}, openai_image(PNG)]}
    else:
        assert sent == {"role": "user", "content": [{"type": "text", "text": "What is in this?"}, anthropic_image(PNG)]}
    assert agent.messages[0]["parts"][1] == image_part()  # stored as sent: the AI SDK's file part


async def test_pdf_and_text_files(server: FakeProvider) -> None:  # noqa: F811
    server.replies.append(Reply(text="Read both."))
    agent = hosted_agent(server)
    pdf = {"type": "file", "mediaType": "application/pdf", "url": f"data:application/pdf;base64,{b64(PDF)}",
           "filename": "paper.pdf"}
    notes = {"type": "file", "mediaType": "text/markdown", "filename": "notes.md",
             "url": f"data:text/markdown;base64,{b64(NOTES.encode())}"}
    elsewhere = {"type": "file", "mediaType": "image/png", "url": "http://127.0.0.1:9/x.png", "filename": "x.png"}
    assert (await agent.save_messages([user_with(pdf, notes, elsewhere)])).status == "completed"
    assert not server.rejections
    content = last_user(server)["content"]
    text_note = f"[Attached file notes.md (text/markdown)]\n{NOTES}"
    never = ("[Attached file x.png: not sent to the model (only inline data: attachments are sent)]")
    if server.format == "openai":
        assert content == [{"type": "text", "text": "What is in this?"},
                           {"type": "file", "file": {"file_data": pdf["url"], "filename": "paper.pdf"}},
                           {"type": "text", "text": text_note}, {"type": "text", "text": never}]
    else:
        assert content[0] == {"type": "text", "text": "What is in this?"}
        assert content[1]["type"] == "document"
        assert content[1]["source"] == {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)}
        assert content[2:] == [{"type": "text", "text": text_note}, {"type": "text", "text": never}]


def figure_tool():
    @tool
    def plot(title: str):
        """Plot a chart."""
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure

        fig = Figure(figsize=(1, 1), dpi=20)
        fig.add_subplot().plot([1, 2, 3])
        fig.suptitle(title)
        return fig

    return plot


@tool
def snapshot() -> list:
    """A PIL image and a caption."""
    from PIL import Image

    return ["the blue one", Image.new("RGB", (4, 4), "blue")]


@tool
def raw_png() -> bytes:
    """PNG bytes."""
    return PNG


async def test_tool_images_reach_the_model(server: FakeProvider) -> None:  # noqa: F811
    """A figure, a PIL image with text, and PNG bytes from three calls of one step: each tool's result
    holds its image where the provider takes it (Anthropic: inside `tool_result`), else the standard
    workaround: the tool message says so and one user message after the batch carries them."""
    server.replies += [Reply(tool_calls=[Call("plot", {"title": "t"}), Call("snapshot", {}), Call("raw_png", {})]),
                       Reply(text="Seen.")]
    agent = hosted_agent(server, [figure_tool(), snapshot, raw_png])
    assert (await agent.send("show me")).status == "completed"
    assert not server.rejections, server.rejections
    parts = [p for p in agent.messages[-1]["parts"] if p["type"].startswith("tool-")]
    outputs = [p["output"] for p in parts]
    assert [[item["type"] for item in o["value"]] for o in outputs] == [["image-data"], ["text", "image-data"],
                                                                        ["image-data"]]
    assert outputs[1]["value"][0] == {"type": "text", "text": "the blue one"}
    assert outputs[2]["value"][0] == {"type": "image-data", "data": b64(PNG), "mediaType": "image/png"}
    figure = base64.b64decode(outputs[0]["value"][0]["data"])
    assert figure.startswith(b"\x89PNG")
    blue = base64.b64decode(outputs[1]["value"][1]["data"])
    second = server.requests[1]["messages"]
    if server.format == "anthropic":
        results = second[-1]["content"]
        assert [r["type"] for r in results] == ["tool_result"] * 3
        assert results[0]["content"] == [{"type": "text", "text": "[the tool returned only media]"},
                                         anthropic_image(figure)]
        assert results[1]["content"] == [{"type": "text", "text": "the blue one"}, anthropic_image(blue)]
        assert results[2]["content"][1] == anthropic_image(PNG)
    else:
        tools = [m for m in second if m["role"] == "tool"]
        assert [m["content"] for m in tools] == [
            (f"[the tool returned only media]\n\n[1 attachment of this result (image/png, {len(figure) // 1024} KB)"
             " in the next user message]"),
            "the blue one\n\n[1 attachment of this result (image/png, 0 KB) in the next user message]",
            ("[the tool returned only media]\n\n[1 attachment of this result (image/png, 0 KB) in the next user "
             "message]")]
        assert second[-1] == {"role": "user", "content": [
            {"type": "text", "text": f"[Attachments of tool call {tools[0]['tool_call_id']}:]"}, openai_image(figure),
            {"type": "text", "text": f"[Attachments of tool call {tools[1]['tool_call_id']}:]"}, openai_image(blue),
            {"type": "text", "text": f"[Attachments of tool call {tools[2]['tool_call_id']}:]"}, openai_image(PNG)]}
        assert second.index(second[-1]) == len(second) - 1 and second[-5]["role"] == "assistant"


async def test_workspace_png_read_reaches_the_model(server: FakeProvider) -> None:  # noqa: F811
    """Think's `read` of an image: its descriptor as text, the image as image content."""
    server.replies += [Reply(tool_calls=[Call("read", {"path": "/plots/a.png"})]), Reply(text="A red square.")]
    agent = hosted_agent(server, [], include_workspace_tools=True)
    agent.workspace.pipe_file("/plots/a.png", PNG)
    assert (await agent.send("look at /plots/a.png")).status == "completed"
    assert not server.rejections, server.rejections
    [part] = [p for p in agent.messages[-1]["parts"] if p["type"] == "tool-read"]
    descriptor = {"kind": "image", "path": "/plots/a.png", "name": "a.png", "mediaType": "image/png",
                  "sizeBytes": len(PNG)}
    assert part["output"] == {"type": "content", "value": [
        {"type": "text", "text": json.dumps(descriptor, separators=(",", ":"))},
        {"type": "image-data", "data": b64(PNG), "mediaType": "image/png"}]}
    second = server.requests[1]["messages"]
    if server.format == "anthropic":
        assert second[-1]["content"][0]["content"][1] == anthropic_image(PNG)
    else:
        assert second[-1]["content"][-1] == openai_image(PNG)


async def test_model_without_vision_gets_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt-3.5-turbo is in litellm's map without vision: the image is a note, never silence."""
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")
    async with FakeProvider("openai", model="gpt-3.5-turbo") as fake:
        fake.replies.append(Reply(text="I cannot see it."))
        agent = hosted_agent(fake)
        assert (await agent.save_messages([user_with(image_part())])).status == "completed"
        assert last_user(fake)["content"] == (
            "What is in this?\n\n[image/png, 0 KB attached: not shown to you, this model cannot see images]")


def test_embedded_model_is_told_it_cannot_see() -> None:
    """The embedded model (SmolLM2, text only) gets text content with the note (llama-cpp's chat
    templates read strings)."""
    from think_nb.messages.convert import to_model_messages

    messages = to_model_messages([{"id": "u", **user_with(image_part())}], "sys")
    assert media.for_model(messages, ModelConfig(LOCAL_MODEL)) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "What is in this?\n\n[image/png, 0 KB attached: not shown to you, this model "
                                    "cannot see images]"}]


async def test_old_media_are_left_out_of_requests(server: FakeProvider) -> None:  # noqa: F811
    """Think's read-time truncation of media: past `keep_recent_messages` (clamped to 4), an image of
    at least `min_part_bytes` is a placeholder in the request, while the stored message still holds it
    (it has not aged past the stored window yet: `tests/test_media_eviction.py` evicts it there)."""
    big = png("green", (300, 300))  # a few KB
    agent = hosted_agent(server, media_eviction={"keep_recent_messages": 2, "min_part_bytes": 100})
    server.replies += [Reply(text=f"ok {n}") for n in range(3)]
    assert (await agent.save_messages([user_with(image_part(big), text="first")])).status == "completed"
    for n in range(2):
        assert (await agent.send(f"turn {n}")).status == "completed"
    kept, evicted = server.requests[1]["messages"], server.requests[2]["messages"]
    first = next(m for m in kept if m["role"] == "user")["content"]
    assert (first[1] if server.format == "openai" else first[1]["type"]) in (openai_image(big), "image")
    placeholder = (f"[image/png, {len(big) // 1024} KB, from an earlier message: left out of this request to "
                   "save context; the user still sees it]")
    old = next(m for m in evicted if m["role"] == "user")["content"]
    assert old == (f"first\n\n{placeholder}" if server.format == "openai"
                   else [{"type": "text", "text": f"first\n\n{placeholder}"}])


async def test_eviction_off_and_budget(server: FakeProvider) -> None:  # noqa: F811
    agent = hosted_agent(server, media_eviction=False)
    server.replies += [Reply(text="a"), Reply(text="b")]
    assert (await agent.save_messages([user_with(image_part())])).status == "completed"
    for _ in range(1):
        assert (await agent.send("again")).status == "completed"
    assert b64(PNG) in json.dumps(server.requests[-1])
    budget = media.MediaEviction(max_request_bytes=10)
    messages = [{"role": "user", "content": [{"type": "text", "text": "x"}, openai_image(PNG)]}]
    assert media.for_model(messages, server.model_config(), budget)[0]["content"].startswith("x\n\n[image/png")
    assert messages[0]["content"][1] == openai_image(PNG)  # the input is never changed


def test_media_eviction_setting_is_checked() -> None:
    from think_nb.errors import UserError

    assert media.MediaEviction.coerce(True) == media.MediaEviction()
    assert media.MediaEviction.coerce(False) is None
    with pytest.raises(UserError, match="keep_recent_messages"):
        media.MediaEviction.coerce({"keep_recent_messages": -1})
    with pytest.raises(UserError, match="unknown field 'keep'"):
        media.MediaEviction.coerce({"keep": 3})


def test_tool_content_is_cleaned() -> None:
    """A tool's own content output is untrusted: only images of the allowed types, of valid base64."""
    out = media.tool_content({"type": "content", "value": [
        {"type": "image-data", "data": b64(PNG), "mediaType": "image/svg+xml"},
        {"type": "image-data", "data": "not base64!", "mediaType": "image/png"},
        {"type": "image-data", "data": b64(PNG), "mediaType": "image/png"}, {"type": "weird", "x": 1}]})
    assert [i["type"] for i in out["value"]] == ["text", "text", "image-data", "text"]
    assert out["value"][3] == {"type": "text", "text": '{"type":"weird","x":1}'}


def test_too_large_images_are_not_kept() -> None:
    huge = b"\x89PNG\r\n\x1a\n" + bytes(media.MAX_MEDIA_BYTES)
    assert media.tool_content(huge)["value"][0]["text"].startswith("[image/png, 5,242,888 bytes: larger than")


async def test_an_oversized_or_broken_attachment_is_refused_whole(tmp_path) -> None:
    from think_nb import Think
    from think_nb.errors import UserError

    agent = Think("big", db=tmp_path / "big.sqlite")
    huge = {"type": "file", "mediaType": "image/png", "filename": "huge.png",
            "url": "data:image/png;base64," + "A" * (media.MAX_MEDIA_BYTES // 3 * 4 + 8)}
    with pytest.raises(UserError, match=r"message 0 part 1 \(file\): huge.png is 5.0 MiB; attach at most 5 MiB"):
        await agent.save_messages([user_with(huge)])
    broken = {"type": "file", "mediaType": "image/png", "url": "data:image/png,rawtext"}
    with pytest.raises(UserError, match="a data: URL without base64 data"):
        await agent.save_messages([user_with(broken)])
    assert agent.messages == []


async def test_the_embedded_model_answers_an_image_message_told_it_cannot_see(tmp_path, monkeypatch) -> None:
    """End to end on SmolLM2 (llama-cpp, text only): the turn completes, and the messages its chat
    template is given carry the note where the image was (recorded on the way through, unchanged)."""
    from think_nb import Think
    from think_nb.models import local

    seen: list[list] = []
    real = local.adapt_messages

    def recording(messages: list, *args, **kwargs) -> list:
        seen.append(real(messages, *args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(local, "adapt_messages", recording)
    agent = Think("eyes", db=tmp_path / "eyes.sqlite")
    result = await agent.save_messages([user_with(image_part())])
    assert result.status == "completed", result.error
    assert seen and seen[-1][-1] == {"role": "user", "content": (
        "What is in this?\n\n[image/png, 0 KB attached: not shown to you, this model cannot see images]")}
    assert agent.messages[0]["parts"][1] == image_part()


async def test_compaction_names_images_and_never_summarises_their_bytes() -> None:
    from types import SimpleNamespace

    from think_nb.session.compaction import create_compact_function

    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return "summary"

    tool_part = {"type": "tool-plot", "toolCallId": "c1", "state": "output-available", "input": {},
                 "output": media.tool_content(["a chart", PNG])}
    messages = [{"id": f"m{n}", "role": role, "parts": parts} for n, (role, parts) in enumerate([
        ("user", [{"type": "text", "text": "hi"}]), ("assistant", [{"type": "text", "text": "hello"}]),
        ("user", [{"type": "text", "text": "look"}, image_part()]), ("assistant", [tool_part]),
        ("user", [{"type": "text", "text": "thanks"}]), ("assistant", [{"type": "text", "text": "welcome"}])])]
    compact = create_compact_function(summarize, protect_head=1, tail_token_budget=1, token_counter=len)
    ctx = SimpleNamespace(token_counter=len, previous_summary=None, summarize=summarize)
    assert (await compact(messages, ctx))["summary"] == "summary"
    [prompt] = prompts
    assert "USER: look\n[attached shot.png (image/png)]" in prompt
    assert "[tool plot] input: {} output: a chart [image/png]" in prompt
    assert b64(PNG)[:20] not in prompt


def test_an_image_is_sent_as_what_its_bytes_are() -> None:
    """The panel trusts the browser's type (a file's extension); the model is sent the bytes' type, and
    bytes that are no raster image (an SVG named .png) are a note, never a request a provider refuses."""
    jpeg = b"\xff\xd8\xff\xe0" + bytes(20)
    assert media.model_parts("image/png", b64(jpeg)) == [
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{b64(jpeg)}"}}]
    svg = b64(b"<svg xmlns='http://www.w3.org/2000/svg'/>")
    assert media.model_parts("image/png", svg, "x.png") == [
        {"type": "text", "text": "[Attached x.png (image/png): not a PNG, JPEG, GIF or WebP image, left out]"}]
