"""What one-off long prompts cost `serve`'s prompt cache, and whether a reused state survives them.

A real ``workstation serve`` (SmolLM2, one slot, so each new prompt takes the slot) gets one
shared document asked twice (``--shared`` requests), then ``--n`` one-off prompts of about
``--tokens`` tokens (each a different document, asked once), then the shared document once more.
The prompt cache's budget is ``--budget-mb`` (WORKSTATION_KV_CACHE_MB). Printed: the one-off
requests' median time, the bytes their states wrote to disk and the files left, the time one
state of that size takes to write (``KvStateStore.save``, measured on a copy), and whether the
last shared request was restored from disk (its state survived the one-offs) or read again.
The same requests with ``--no-prompt-cache`` are the baseline.

    PYTHONPATH=. .venv/bin/python bench/kv_keep.py [--n 10] [--tokens 400] [--budget-mb 64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from serve_helpers import serve, write_profile  # noqa: E402

from workstation.core.kv_state import KvStateStore, StateKey, read_header, read_state_file  # noqa: E402

WORDS = ("budget printer meeting invoice holiday contract office supplier delivery training staff "
         "kitchen parking report deadline review project client payment schedule").split()


def document(seed: int, tokens: int) -> str:
    words = [WORDS[(seed * 7 + i * (seed % 5 + 1)) % len(WORDS)] for i in range(tokens)]
    return f"Document {seed}. " + " ".join(words)


def ask(url: str, doc: str, question: str) -> tuple[float, dict]:
    body = {"messages": [{"role": "system", "content": doc}, {"role": "user", "content": question}],
            "max_tokens": 1, "temperature": 0}
    t0 = time.perf_counter()
    r = httpx.post(f"{url}/chat/completions", json=body, timeout=300)
    r.raise_for_status()
    return time.perf_counter() - t0, r.json()["timings"]


class Written:
    """The bytes of every state file that appeared in the folder (polled: superseded or
    evicted files still count)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.seen, self.stop = folder, {}, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stop.is_set():
            self.look()
            time.sleep(0.02)

    def look(self) -> None:
        for p in self.folder.glob("*.kv"):
            try:
                st = p.stat()
            except OSError:
                continue
            self.seen[(st.st_ino, st.st_size)] = st.st_size  # (a restored state is renamed, not written)

    def total(self) -> int:
        self.stop.set()
        self.thread.join()
        self.look()
        return sum(self.seen.values())


def run(prof: Path, data: Path, args: argparse.Namespace, cache: bool) -> dict:
    extra = [] if cache else ["--no-prompt-cache"]
    folder = data / "kv-cache"
    folder.mkdir(parents=True, exist_ok=True)
    written = Written(folder)
    shared = document(999, args.tokens)
    with serve(prof, "--parallel", "1", *extra, data=data) as srv:
        for i in range(args.shared):
            ask(srv.base_url, shared, f"Question {i}: what is due?")
        before = written.total()
        written = Written(folder)
        times = [ask(srv.base_url, document(i, args.tokens), "What is due?")[0] for i in range(args.n)]
        _, last = ask(srv.base_url, shared, "Last question: who pays?")
    left = list(folder.glob("*.kv"))  # (after the shutdown, which saves the slot's cells)
    return {"median_s": statistics.median(times), "bytes": written.total(), "shared_bytes": before,
            "files_left": len(left), "bytes_left": sum(p.stat().st_size for p in left),
            "restored_last": last.get("restored_n", 0), "files": left}


def write_time(path: Path) -> tuple[float, int, int]:
    """Seconds to write one state like ``path`` (its tokens and bytes) into an empty folder, its
    tokens and file size."""
    header, _ = read_header(path)
    key = StateKey(header["model"], header["type_k"], header["type_v"], header["n_ctx"], header["n_stream"])
    tokens, data = read_state_file(path, key)
    with tempfile.TemporaryDirectory() as tmp:
        copy = KvStateStore(Path(tmp), budget=2**40)
        t0 = time.perf_counter()
        copy.save(key, tokens, data)
        return time.perf_counter() - t0, len(tokens), path.stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=400, help="words in each document (about a token each)")
    ap.add_argument("--shared", type=int, default=3, help="requests on the shared document before the one-offs")
    ap.add_argument("--budget-mb", type=int, default=64)
    args = ap.parse_args()
    model = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    os.environ["WORKSTATION_KV_CACHE_MB"] = str(args.budget_mb)
    with tempfile.TemporaryDirectory() as tmp:
        prof = write_profile(Path(tmp), model, context=2048)
        cold = run(prof, Path(tmp) / "cold", args, cache=False)
        kept = run(prof, Path(tmp) / "kept", args, cache=True)
        print(f"{args.n} one-off prompts of ~{args.tokens} words, budget {args.budget_mb} MiB, one slot")
        print(f"  no prompt cache : median request {cold['median_s'] * 1000:.0f} ms")
        print(f"  prompt cache    : median request {kept['median_s'] * 1000:.0f} ms, "
              f"{kept['bytes'] / 2**20:.1f} MiB written while the one-offs ran "
              f"({kept['shared_bytes'] / 2**20:.1f} MiB by the shared document before), "
              f"{kept['files_left']} files ({kept['bytes_left'] / 2**20:.1f} MiB) left")
        print(f"  shared document asked again after them: {kept['restored_last']} tokens restored from disk")
        if kept["files"]:
            s, n, size = write_time(kept["files"][0])
            print(f"  one state of {n} tokens: {size / 2**20:.1f} MiB, written in {s * 1000:.0f} ms "
                  f"({size / max(n, 1) / 1024:.1f} KiB a token)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
