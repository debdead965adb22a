"""One chat turn in the real TUI, headless (Textual's pilot), on the given profile: the app loads
the engine in its child process, the prompt is typed and sent, the reply streams in. Prints one
JSON line: the status bar (GPU layers as the engine reports them), the reply and its figures.

    python scripts/gpu_check/tui_turn.py PROFILE.yaml [--store FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


async def until(pilot: Any, condition: Callable[[], bool], seconds: float) -> None:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise SystemExit("the TUI did not reach the expected state in time")


async def one_turn(profile: str, store: Path, text: str) -> dict[str, Any]:
    from workstation.tui.app import WorkstationApp

    app = WorkstationApp(profile, sample_system=True, language="en", store_path=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.loading is None or app.load_failed, 240)
        if app.load_failed:  # said at once (the first device run waited out its 180 s on a crash)
            said = [n.message for n in app._notifications if n.severity == "error"]
            raise SystemExit(f"the app could not load the profile: {said[-1] if said else app.status_text().strip()}")
        status_loaded = app.status_text()
        await pilot.click("#prompt")
        await pilot.press(*text)
        await pilot.press("enter")
        await until(pilot, lambda: app.generating, 30)
        await until(pilot, lambda: not app.generating, 120)
        m = app.last_metrics
        return {
            "status": status_loaded.strip(),
            "reply_chars": len(app.store.messages(app.conversation_id)[-1].content) if app.conversation_id else 0,
            "predicted_n": m.predicted_n if m else None,
            "predicted_per_second": round(m.predicted_per_second, 2) if m else None,
            "ttft_ms": round(m.ttft_ms, 1) if m else None,
            "stop_reason": m.stop_reason if m else None,
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--store", type=Path)
    ap.add_argument("--text", default="Write three short tips for a tidy desk.")
    args = ap.parse_args()
    store = args.store or Path(tempfile.mkdtemp(prefix="gpu-check-tui-")) / "chats.sqlite"
    result = asyncio.run(one_turn(args.profile, store, args.text))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
