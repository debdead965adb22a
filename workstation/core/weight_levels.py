"""Whether a high-precision model file holds only what a 4-bit file holds.

A Q8_0 or F16 file made by requantizing a Q4_1 (``models quantize --allow-requantize``, the
way README makes draft-pair's target) is labelled Q8_0, and compared against it the Q4_1
"picks the same next word 95% of the time": the loss measured is only the rounding between
two copies of one 4-bit model, not what 4 bits lose against the original. Nothing in the file
says where it came from, but its weights do: a 4-bit block of 32 weights takes at most 16
values, and those stay at most 16 after dequantizing and quantizing again (to Q8_0's 255 or
F16's), where weights quantized straight from the original take 25 to 32.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workstation.core.errors import WorkstationError
from workstation.core.gguf_check import TensorEntry, preflight
from workstation.core.phrases import Lookup, Phrase, say

BLOCK = 32  # weights per block in Q4_0/Q4_1/IQ4 and per sub-block in Q4_K: at most 16 values each
FOUR_BIT_VALUES = 16
# ggml types that keep more than 16 values per block of 32: the bytes of one block, and where
# its values are in them (Q8_0: an f16 scale, then 32 int8)
_WIDE: dict[int, tuple[int, int, np.dtype]] = {
    0: (BLOCK * 4, 0, np.dtype("<u4")),  # F32 (compared as bits: the same value, the same bits)
    1: (BLOCK * 2, 0, np.dtype("<u2")),  # F16
    30: (BLOCK * 2, 0, np.dtype("<u2")),  # BF16
    8: (2 + BLOCK, 2, np.dtype("i1")),  # Q8_0
}
MOST_TENSORS = 12  # sampled, spread over the layers
MOST_BLOCKS = 256  # per tensor, spread over it
COARSE_BLOCKS = 0.9  # a tensor whose blocks nearly all take at most 16 values came from 4 bits
COARSE_TENSORS = 0.2  # a file where a fifth of its tensors did (Q4_K_M keeps some at 6 bits)


@dataclass(frozen=True)
class WeightLevels:
    sampled: int  # high-precision weight tensors looked at
    four_bit: int  # of them, those whose blocks take at most 16 values, as a 4-bit file's

    @property
    def from_four_bits(self) -> bool:
        """The file holds what a 4-bit file holds: it was made from one (or its model has no more)."""
        return self.sampled > 0 and self.four_bit >= COARSE_TENSORS * self.sampled


def weight_levels(path: Path) -> WeightLevels:
    """How many of the file's high-precision (Q8_0, F16, BF16, F32) layer weights take at most
    16 values in each block of 32, as a 4-bit file's do; (0, 0) for a file that has none (a
    4-bit or K-quant file: nothing to tell)."""
    header = preflight(path)
    tensors = [t for t in header.tensors if t.ggml_type in _WIDE and t.name.startswith("blk.")
               and len(t.shape) == 2 and t.shape[0] % BLOCK == 0]
    if not tensors:
        return WeightLevels(0, 0)
    picked = [tensors[i] for i in np.linspace(0, len(tensors) - 1, min(MOST_TENSORS, len(tensors))).astype(int)]
    data = np.memmap(path, dtype=np.uint8, mode="r")
    try:
        four_bit = sum(coarse(data, header.data_offset, t) for t in picked)
    finally:
        del data
    return WeightLevels(len(picked), four_bit)


def coarse(data: np.ndarray, data_offset: int, tensor: TensorEntry) -> bool:
    size, skip, dtype = _WIDE[tensor.ggml_type]
    n_blocks = tensor.nbytes // size
    start = data_offset + tensor.offset
    rows = []
    for i in np.linspace(0, n_blocks - 1, min(MOST_BLOCKS, n_blocks)).astype(int):
        block = np.asarray(data[start + i * size + skip: start + (i + 1) * size])
        rows.append(block.view(dtype))
    values = np.sort(np.stack(rows), axis=1)
    distinct = 1 + np.count_nonzero(np.diff(values, axis=1), axis=1)
    return bool(np.mean(distinct <= FOUR_BIT_VALUES) >= COARSE_BLOCKS)


def four_bit_levels(path: Path) -> WeightLevels | None:
    """What was looked at in the file at ``path`` (a Q8_0, F16 …) where it holds only what a
    4-bit file holds; None where it holds more, is a 4-bit file itself, or cannot be read."""
    try:
        levels = weight_levels(path)
    except (OSError, ValueError, WorkstationError):  # a file that cannot be read: said by what reads it next
        return None
    return levels if levels.from_four_bits else None


def four_bit_phrase(name: str, levels: WeightLevels) -> Phrase:
    """What ``four_bit_levels`` found, said of the model ``name`` (eval --kld and F12 say it of
    their reference, with ``reference_note``)."""
    return ("weights.four_bit", {"name": name, "four": f"{levels.four_bit:,}", "sampled": f"{levels.sampled:,}"})


def four_bit_note(name: str, path: Path, lookup: Lookup | None = None) -> str | None:
    """A sentence where the file at ``path`` holds only what a 4-bit file holds (``four_bit_levels``),
    in ``lookup``'s language or English."""
    levels = four_bit_levels(path)
    return say([four_bit_phrase(name, levels)], lookup) if levels is not None else None


def reference_note(name: str, levels: WeightLevels) -> list[Phrase]:
    """Under a KL divergence run whose reference ``name`` holds no more than a 4-bit file, said
    plainly first: not a good reference ("weights take at most 16 values in each block of 32" left
    the reader to work that out)."""
    return [("weights.note", {"name": name}), four_bit_phrase(name, levels), ("weights.not_the_loss", {})]
