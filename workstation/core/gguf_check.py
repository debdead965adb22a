"""Pre-flight check of a GGUF file before llama.cpp's C parser sees it.

Every load, inspect, pull and import goes through ``preflight(path)``. A file that fails is
never handed to llama.cpp; the error says what is wrong and at which byte offset.
"""

from __future__ import annotations

from pathlib import Path

from workstation.core.errors import ModelFileError

GGUF_MAGIC = b"GGUF"


def preflight(path: Path) -> None:
    if not path.exists():
        raise ModelFileError(
            f"The model file {path} does not exist; run 'workstation models list' to see what is installed."
        )
    if not path.is_file():
        raise ModelFileError(f"The model path {path} is not a file.")
    with path.open("rb") as f:
        head = f.read(8)
    if head[:4] != GGUF_MAGIC:
        raise ModelFileError(f"{path} is not a GGUF model file (it does not start with 'GGUF').")
    if len(head) < 8:
        raise ModelFileError(f"{path} is truncated: it ends inside the GGUF header (byte {len(head)}).")
