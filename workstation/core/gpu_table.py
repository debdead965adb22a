"""The shipped table of GPUs (``workstation/data/gpus.yaml``): VRAM, memory bandwidth, FP16
throughput and list price of consumer, workstation and data-centre NVIDIA cards.

``hardware.gpu_bandwidth_gbps`` reads its bandwidth figures from here (one table, two uses):
``fit`` for the card NVML names, ``size`` for the cards it proposes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from workstation.core.errors import ProfileError

TABLE_PATH = Path(__file__).resolve().parent.parent / "data" / "gpus.yaml"


@dataclass(frozen=True)
class GpuSpec:
    match: str  # a substring of the name NVML reports
    name: str
    vram_gb: float  # GiB
    bandwidth_gbps: float  # GB/s
    fp16_tflops: float
    price_usd: float | None = None
    size: bool = True  # proposed by ``workstation size``

    @property
    def vram_bytes(self) -> int:
        return int(self.vram_gb * 1024**3)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=1)
def gpu_specs() -> tuple[GpuSpec, ...]:
    """Every card in the table, in its order."""
    from workstation.core.settings_file import YamlError, load_yaml

    try:
        data = load_yaml(TABLE_PATH.read_text(encoding="utf-8"))
    except (OSError, YamlError) as err:
        raise ProfileError(f"The GPU table {TABLE_PATH} cannot be read ({err}).") from None
    specs = []
    for row in (data or {}).get("gpus", []):
        specs.append(GpuSpec(
            match=str(row["match"]), name=str(row["name"]), vram_gb=float(row["vram_gb"]),
            bandwidth_gbps=float(row["bandwidth_gbps"]), fp16_tflops=float(row["fp16_tflops"]),
            price_usd=None if row.get("price_usd") is None else float(row["price_usd"]),
            size=bool(row.get("size", True)),
        ))
    return tuple(specs)


def find_spec(name: str) -> GpuSpec | None:
    """The table's row for a card name (NVML's or a user's), longest ``match`` first."""
    low = name.lower()
    for spec in sorted(gpu_specs(), key=lambda s: len(s.match), reverse=True):
        if spec.match.lower() in low:
            return spec
    return None


def _squeezed(text: str) -> str:
    return "".join(text.lower().split())


def cards_named(wanted: list[str]) -> tuple[list[GpuSpec], list[str]]:
    """The table's cards a workload's ``candidates.gpus`` names (a part of the card's name or
    match, spaces and case aside: "RTX 3060 12GB", "rtx 4090"), every card of the table, not
    only those ``size`` proposes by itself; and the names that are no card of the table (they
    were dropped without a word, a typo leaving the other cards alone)."""
    found: list[GpuSpec] = []
    unknown: list[str] = []
    for w in wanted:
        named = [s for s in gpu_specs() if _squeezed(w) in _squeezed(s.name) or _squeezed(w) in _squeezed(s.match)]
        if not named:
            unknown.append(w)
        found += [s for s in named if s not in found]
    return found, unknown


def sizing_specs() -> list[GpuSpec]:
    """The cards ``workstation size`` proposes."""
    return [s for s in gpu_specs() if s.size]
