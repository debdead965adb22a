"""The decode core's counters since it started (``Scheduler.stats``): what ``serve``'s /metrics
reports (``server/prometheus.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SchedulerStats:
    """Counters for /metrics (names follow llama-server's Prometheus metrics)."""

    prompt_tokens_total: int = 0
    prompt_seconds_total: float = 0.0
    tokens_predicted_total: int = 0
    tokens_predicted_seconds_total: float = 0.0
    n_decode_total: int = 0
    n_busy_slots_total: int = 0
    cached_tokens_total: int = 0
    requests_total: int = 0
    requests_rejected_total: int = 0
    requests_cancelled_total: int = 0
    decode_seconds_total: float = 0.0  # inside llama_decode
    busy_seconds_total: float = 0.0  # from one decode's start to the next's while slots are busy
