"""The chat panel: the anywidget `ChatPanel` (`widget.py`), the frames it exchanges with the front
end (`protocol.py`, names spelled once in `protocol_spec.json`), the fan-out and status every panel
of one agent shares (`hub.py`, which sees the agent as a `PanelSource`) and the coalescing of
streamed chunks into frames (`batcher.py`). The front end itself is `js/src`."""
