"""The app's own CPU for the chat screen's work: opening a long conversation, streaming a reply.

On a CPU-only office PC every millisecond the app spends drawing is taken from llama.cpp's
decoding (see ``tui_overhead.py``). This bench needs no model: the app runs headless
(``run_test``) with no engine, a conversation of ``--messages`` messages (half of the
replies with Markdown, half plain prose) is written to a fresh store, and a reply is streamed
into the chat from a fake event source (``TokenStreamed`` messages posted at the screen's
update rate, as the generation worker posts them). It prints, in one run:

- (a) opening the conversation (``open_conversation``: the last ``SHOWN_AT_ONCE`` drawn) and
  drawing all of its messages (``show_messages(at_least=N)``), in CPU seconds and per message;
  then all of a conversation as long whose messages have no Markdown (plain paragraphs);
- (b) streaming a reply of ``--tokens`` tokens: CPU per screen update and per token;
- (c) the status line set again with the same text (``update_status``), per call;
- how many full layout passes of the screen (``Screen._refresh_layout``) each part caused, and
  how many widgets the chat holds (each one is styled and laid out again in every pass).

CPU is ``time.process_time`` of this process (all threads), less what the idle app takes
over the same wall time (measured first). Run it on two checkouts to compare them:

    PYTHONPATH=. .venv/bin/python bench/tui_cpu.py [--messages 80] [--tokens 300] [--pace busy|free] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SETTLE_S = 0.4  # wall time left after each part for the screen to finish its work

PLAIN = ("Thank you for the note. The meeting with the supplier is moved to Thursday at ten, "
         "and the minutes of the last one are in the shared folder. Please bring the signed "
         "order form and the delivery schedule so that we can agree the dates for the next quarter.")
MARKDOWN = ("Here is a summary of the points:\n\n- **Budget**: approved for the next quarter\n"
            "- **Staff**: two new hires in March\n- Dates in `schedule.xlsx`\n\n"
            "## Next steps\n\n1. Send the order form\n2. Book the room\n\n"
            "| item | cost |\n|---|---|\n| chairs | 400 |\n| desks | 900 |\n")
QUESTION = "Can you summarise the meeting notes for me, please?"


def _reply(i: int) -> str:
    return MARKDOWN if i % 2 else PLAIN + "\n\n" + PLAIN


def _stream_pieces(tokens: int, per_update: int) -> list[str]:
    """A reply of ``tokens`` tokens (about four characters each) in pieces of ``per_update``."""
    words = (PLAIN + "\n\n").replace("\n\n", " \n\n ").split(" ")
    text: list[str] = []
    while len(text) < tokens:
        text.extend(words)
    toks = [w + " " if not w.startswith("\n") else w for w in text[:tokens]]
    return ["".join(toks[i:i + per_update]) for i in range(0, len(toks), per_update)]


def count_layouts() -> tuple[list[int], Callable[[], None]]:
    """Every full layout pass of a screen (``Screen._refresh_layout``) counted in the list's one
    item from now on, and the function that stops counting."""
    from textual.screen import Screen

    layouts = [0]
    original = Screen._refresh_layout

    def counted(self: Screen[Any], *a: Any, **k: Any) -> Any:
        layouts[0] += 1
        return original(self, *a, **k)

    Screen._refresh_layout = counted  # type: ignore[method-assign]

    def undo() -> None:
        Screen._refresh_layout = original  # type: ignore[method-assign]

    return layouts, undo


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from workstation.core.store import ConversationStore
    from workstation.tui.app import WorkstationApp
    from workstation.tui.messages import TokenStreamed
    from workstation.tui.pacing import BUSY_CPU, FREE_CPU

    pace = BUSY_CPU if args.pace == "busy" else FREE_CPU
    if args.hz is None:
        args.hz = pace.updates_hz

    layouts, undo = count_layouts()

    data = Path(os.environ["WORKSTATION_DATA"])
    store_path = data / "bench.sqlite3"
    store = ConversationStore(store_path)
    conv = store.new("Long conversation")
    for i in range(args.messages // 2):
        store.add_message(conv.id, "user", QUESTION)
        store.add_message(conv.id, "assistant", _reply(i), {"predicted_n": 50, "ttft_ms": 100.0})
    plain = store.new("Plain")
    for _ in range(args.messages // 2):
        store.add_message(plain.id, "user", QUESTION)
        store.add_message(plain.id, "assistant", _reply(0), {"predicted_n": 50, "ttft_ms": 100.0})
    empty = store.new("Empty")
    store.close()

    app = WorkstationApp(None, start_engine=False, sample_system=False, language="en", store_path=store_path)
    result: dict[str, Any] = {"messages": args.messages, "tokens": args.tokens, "hz": args.hz, "pace": args.pace}

    async def part(name: str, work: Any) -> tuple[float, int]:
        await asyncio.sleep(SETTLE_S)
        c0, l0 = time.process_time(), layouts[0]
        await work()
        await asyncio.sleep(SETTLE_S)
        return time.process_time() - c0 - idle, layouts[0] - l0

    async with app.run_test(size=(args.width, args.height)):
        await asyncio.sleep(1.0)
        c0 = time.process_time()
        await asyncio.sleep(1.0)
        idle = time.process_time() - c0  # the idle app's CPU a second
        idle_per_s = idle
        idle = idle_per_s * SETTLE_S
        result["idle_cpu_s_per_s"] = idle_per_s

        async def open_it() -> None:
            await app.open_conversation(conv.id)

        async def open_empty() -> None:
            await app.open_conversation(empty.id)

        from workstation.tui.screens.chat import SHOWN_AT_ONCE as shown
        cpu, lay = await part("open", open_it)
        drawn = min(shown, args.messages)
        result["open"] = {"cpu_s": cpu, "drawn": drawn, "per_message_ms": 1000 * cpu / drawn, "layouts": lay}

        async def draw_all() -> None:
            await app.chat_screen.show_messages(app.store.get(conv.id).messages, at_least=args.messages)

        await part("empty", open_empty)
        await part("open", open_it)
        cpu, lay = await part("all", draw_all)
        result["draw_all"] = {"cpu_s": cpu, "drawn": args.messages, "per_message_ms": 1000 * cpu / args.messages,
                              "layouts": lay, "widgets": len(list(app.chat_screen.query("#log *")))}

        async def open_plain() -> None:
            await app.open_conversation(plain.id)

        async def draw_plain() -> None:
            await app.chat_screen.show_messages(app.store.get(plain.id).messages, at_least=args.messages)

        await part("empty", open_empty)
        await part("plain", open_plain)
        cpu, lay = await part("plain all", draw_plain)
        result["draw_plain"] = {"cpu_s": cpu, "drawn": args.messages,
                                "per_message_ms": 1000 * cpu / args.messages, "layouts": lay,
                                "widgets": len(list(app.chat_screen.query("#log *")))}

        calls = 50

        async def statuses() -> None:
            for _ in range(calls):
                app.update_status()
                await asyncio.sleep(0.02)

        cpu, lay = await part("status", statuses)
        cpu -= idle_per_s * 0.02 * calls
        result["status"] = {"calls": calls, "per_call_ms": 1000 * cpu / calls, "layouts": lay}

        await part("empty", open_empty)
        await part("open", open_it)
        pieces = _stream_pieces(args.tokens, max(1, round(args.tokens / (args.hz * args.seconds))))

        async def stream() -> None:
            view = await app.chat_screen.add_exchange(QUESTION)
            view.markdown_every_s = pace.markdown_every_s  # as ``_start_reply`` sets it
            app.reply_view = view
            for piece in pieces:
                app.post_message(TokenStreamed(piece, 1))
                await asyncio.sleep(1.0 / args.hz)
            app.reply_view = None
            from workstation.core.metrics import TurnMetrics
            await view.finish(view.content, TurnMetrics(predicted_n=args.tokens))

        wall0 = time.perf_counter()
        cpu, lay = await part("stream", stream)
        wall = time.perf_counter() - wall0 - 2 * SETTLE_S
        cpu -= idle_per_s * wall
        result["stream"] = {"cpu_s": cpu, "updates": len(pieces), "per_update_ms": 1000 * cpu / len(pieces),
                            "per_token_ms": 1000 * cpu / args.tokens, "layouts": lay,
                            "cpu_share": cpu / wall if wall > 0 else 0.0}
    undo()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=80)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--pace", choices=("busy", "free"), default="busy",
                        help="busy: the engine on every core of this PC (the office case); free: a GPU, a server")
    parser.add_argument("--hz", type=float, default=None, help="screen updates a second while streaming (the pace's)")
    parser.add_argument("--seconds", type=float, default=4.0, help="how long the reply streams")
    parser.add_argument("--width", type=int, default=100)
    parser.add_argument("--height", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ["WORKSTATION_DATA"] = tempfile.mkdtemp(prefix="tui-cpu-")
    result = asyncio.run(measure(args))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    o, a, s, st = result["open"], result["draw_all"], result["stream"], result["status"]
    print(f"the app's CPU (process_time, idle app's {result['idle_cpu_s_per_s'] * 1000:.0f} ms/s taken off), "
          f"{args.width}x{args.height}:")
    print(f"  (a) open a conversation of {args.messages}: {o['cpu_s'] * 1000:7.0f} ms for {o['drawn']} drawn, "
          f"{o['per_message_ms']:5.1f} ms/message, {o['layouts']} layouts")
    print(f"      draw all {a['drawn']}:                {a['cpu_s'] * 1000:7.0f} ms, "
          f"{a['per_message_ms']:5.1f} ms/message, {a['layouts']} layouts, {a['widgets']} widgets in the chat")
    pl = result["draw_plain"]
    print(f"      draw all {pl['drawn']}, no Markdown:   {pl['cpu_s'] * 1000:7.0f} ms, "
          f"{pl['per_message_ms']:5.1f} ms/message, {pl['layouts']} layouts, {pl['widgets']} widgets in the chat")
    print(f"  (b) stream {args.tokens} tokens in {s['updates']} updates ({args.pace} pace, {args.hz:g} Hz): "
          f"{s['cpu_s'] * 1000:7.0f} ms, "
          f"{s['per_update_ms']:5.2f} ms/update, {s['per_token_ms']:5.2f} ms/token, {s['layouts']} layouts, "
          f"{s['cpu_share'] * 100:.1f}% of a core")
    print(f"  (c) status line set again, same text: {st['per_call_ms']:5.2f} ms/call, "
          f"{st['layouts']} layouts for {st['calls']} calls")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
