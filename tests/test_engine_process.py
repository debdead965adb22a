"""The engine in its child process: the same turn as in-process, and gathered text pieces."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_profile
from workstation.core.engine import Engine, TokenDelta, TurnFinished
from workstation.core.engine_process import EngineProcess

MESSAGES = [{"role": "user", "content": "Name three colours of the rainbow and say why the sky is blue."}]


def _events(engine: object) -> tuple[list[TokenDelta], TurnFinished]:
    deltas: list[TokenDelta] = []
    done: TurnFinished | None = None
    for event in engine.stream_chat(MESSAGES):  # type: ignore[attr-defined]
        if isinstance(event, TokenDelta):
            deltas.append(event)
        else:
            done = event
    assert done is not None
    return deltas, done


def test_child_gathers_pieces_without_losing_text_or_tokens(smollm2_path: Path) -> None:
    profile = make_profile(sampling={"max_tokens": 64})
    with Engine(profile) as local:
        local_deltas, local_done = _events(local)
    with EngineProcess(profile) as proc:
        each_deltas, each_done = _events(proc)
        proc.reset()
        proc.stream_interval_s = 10.0  # one piece at once (first token), the rest at the end
        few_deltas, few_done = _events(proc)
    assert each_done.text == few_done.text == local_done.text
    assert len(each_deltas) == len(local_deltas) == local_done.metrics.predicted_n
    assert all(d.tokens == 1 for d in each_deltas)
    assert len(few_deltas) == 2 and few_deltas[0].tokens == 1
    assert sum(d.tokens for d in few_deltas) == few_done.metrics.predicted_n
    assert "".join(d.text for d in few_deltas) == few_done.text
