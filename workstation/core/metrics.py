"""Per-turn timings (names follow llama-server's ``timings``) and rolling windows."""

from __future__ import annotations

import dataclasses
import statistics
from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass
class TurnMetrics:
    load_ms: float = 0.0
    ttft_ms: float = 0.0  # wall clock, request to first visible token
    prompt_n: int = 0  # prompt tokens evaluated this turn
    cache_n: int = 0  # prompt tokens reused from the KV cache
    restored_n: int = 0  # of cache_n: tokens restored from a state saved on disk
    prompt_ms: float = 0.0
    prompt_per_second: float = 0.0
    predicted_n: int = 0
    predicted_ms: float = 0.0
    predicted_per_second: float = 0.0
    predicted_per_token_ms: float = 0.0  # TPOT
    draft_n: int = 0
    draft_n_accepted: int = 0
    kv_used: int = 0
    kv_size: int = 0
    total_ms: float = 0.0  # wall clock of the whole turn
    stop_reason: str = ""  # eos | length | context | cancelled
    n_threads: int = 0  # decode threads the turn ended with (0: not a local engine)
    threads_reason: str = ""  # fixed | idle | busy | gpu (core/thread_policy.py)
    cpu_others: float = 0.0  # cores other programs kept busy when the threads were chosen
    reasoning_n: int = 0  # of predicted_n: tokens a reasoning model spent thinking
    reasoning_ms: float = 0.0  # from its first token to the end of its thinking

    def finish_rates(self) -> None:
        """Derive the rates from counts and times (rates always equal counts over times)."""
        self.prompt_per_second = self.prompt_n / self.prompt_ms * 1000 if self.prompt_ms > 0 else 0.0
        self.predicted_per_second = (
            self.predicted_n / self.predicted_ms * 1000 if self.predicted_ms > 0 else 0.0
        )
        self.predicted_per_token_ms = (
            self.predicted_ms / self.predicted_n if self.predicted_n > 0 else 0.0
        )

    @property
    def acceptance_rate(self) -> float | None:
        return self.draft_n_accepted / self.draft_n if self.draft_n else None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnMetrics:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def summary_line(self) -> str:
        parts = [
            f"TTFT {self.ttft_ms:.0f} ms",
            f"{self.predicted_per_second:.1f} tok/s",
            f"{self.predicted_n} tokens",
        ]
        if self.prompt_n + self.cache_n:  # a reply stopped before a server said its counts: none known
            parts.append(f"prompt {self.prompt_n} (+{self.cache_n} cached"
                         + (f", {self.restored_n} of them from disk" if self.restored_n else "")
                         + f") at {self.prompt_per_second:.0f} tok/s")
        if self.draft_n:
            parts.append(f"draft {self.draft_n_accepted}/{self.draft_n} accepted")
        return " · ".join(parts)


class RollingWindow:
    """The last ``size`` values of one metric, for sparklines and averages."""

    def __init__(self, size: int = 60) -> None:
        self.values: deque[float] = deque(maxlen=size)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def last(self) -> float | None:
        return self.values[-1] if self.values else None

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None


class MetricsHistory:
    """Rolling windows over the turn metrics the dashboard plots."""

    FIELDS = ("ttft_ms", "predicted_per_second", "prompt_per_second", "predicted_per_token_ms")

    def __init__(self, size: int = 60) -> None:
        self.windows = {name: RollingWindow(size) for name in self.FIELDS}
        self.turns: deque[TurnMetrics] = deque(maxlen=size)

    def add(self, metrics: TurnMetrics) -> None:
        self.turns.append(metrics)
        for name, window in self.windows.items():
            window.add(float(getattr(metrics, name)))
