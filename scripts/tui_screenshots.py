"""Write the README's screenshots (SVG) of the chat and the dashboard.

    .venv/bin/python scripts/tui_screenshots.py [--out docs/screenshots]

The app runs headless on a sample conversation written to a temporary data directory (no
model is loaded, so the script is quick and the pictures are repeatable); CPU and RAM on the
dashboard are this machine's, sampled live.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _metrics(ttft: float, tps: float, n: int, prompt: int, cached: int, kv: int) -> dict[str, object]:
    from workstation.core.metrics import TurnMetrics

    m = TurnMetrics(
        ttft_ms=ttft, prompt_n=prompt, cache_n=cached, prompt_ms=prompt / 0.279,
        predicted_n=n, predicted_ms=n / tps * 1000, kv_used=kv, kv_size=4096, stop_reason="eos",
    )
    m.finish_rates()
    return m.to_dict()


def _sample_store() -> None:
    from workstation.core.store import ConversationStore

    store = ConversationStore()
    for title in ("Supplier contract review", "Travel policy 2025"):
        conv = store.new(title, "office-cpu")
        store.add_message(conv.id, "user", f"Notes about: {title}")
    conv = store.new("Weekly team meeting", "office-cpu")
    turns = [
        ("Write three short tips for a good weekly team meeting.",
         "1. **Share the agenda** a day before, with one owner per item.\n"
         "2. **Start and end on time**; park long topics for a follow-up.\n"
         "3. **Close with actions**: who does what, by when.",
         _metrics(231, 78.4, 41, 44, 0, 85)),
        ("And how long should it be?",
         "Thirty minutes is enough for most teams. If it often runs over, the agenda is too long.",
         _metrics(104, 80.2, 22, 16, 85, 123)),
        ("Turn the tips into a checklist.",
         "- [ ] Agenda sent the day before\n- [ ] Owner for every item\n"
         "- [ ] Timekeeper chosen\n- [ ] Actions written down with dates",
         _metrics(98, 79.1, 33, 14, 123, 170)),
    ]
    for question, answer, metrics in turns:
        store.add_message(conv.id, "user", question)
        store.add_message(conv.id, "assistant", answer, metrics)
    store.close()


async def shoot(out: Path) -> None:
    from workstation.core.profile_lookup import load_profile
    from workstation.tui.app import WorkstationApp

    _sample_store()
    app = WorkstationApp(load_profile("office-cpu"), start_engine=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        # the system sampler runs for the app's life: wait for the others, if any (an empty
        # list would mean all of them)
        others = [w for w in app.workers if w.group != "sample"]
        if others:
            await app.workers.wait_for_complete(others)
        app.screen.set_focus(None)
        await pilot.pause(0.5)
        app.save_screenshot("chat.svg", str(out))
        await pilot.press("f5")
        await pilot.pause(2.5)  # a few live CPU/RAM samples
        app.save_screenshot("dashboard.svg", str(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    os.environ["WORKSTATION_DATA"] = tempfile.mkdtemp(prefix="tui-shots-")
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(shoot(args.out))
    print(f"wrote {args.out / 'chat.svg'} and {args.out / 'dashboard.svg'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
