"""``GET /metrics``: Prometheus text with llama-server's metric names (``llamacpp:``) and this
server's own (``workstation:``)."""

from __future__ import annotations

from workstation.core.scheduler import Scheduler

Row = tuple[str, str, str, float]  # name, type, help, value


def prometheus_text(s: Scheduler, server_rows: list[Row] | None = None) -> str:
    """The scheduler's counters and gauges, then ``server_rows`` (the HTTP layer's own)."""
    st = s.stats
    kv_size = s.slot_ctx * s.n_parallel
    rows: list[Row] = [
        ("prompt_tokens_total", "counter", "Number of prompt tokens processed.", st.prompt_tokens_total),
        ("prompt_seconds_total", "counter", "Prompt process time.", st.prompt_seconds_total),
        ("tokens_predicted_total", "counter", "Number of generation tokens processed.", st.tokens_predicted_total),
        ("tokens_predicted_seconds_total", "counter", "Predict process time.", st.tokens_predicted_seconds_total),
        ("n_decode_total", "counter", "Total number of llama_decode() calls.", st.n_decode_total),
        (
            "n_busy_slots_per_decode",
            "gauge",  # an average, which can go down: not a counter
            "Average number of busy slots per llama_decode() call.",
            st.n_busy_slots_total / st.n_decode_total if st.n_decode_total else 0.0,
        ),
        (
            "prompt_tokens_seconds",
            "gauge",
            "Average prompt throughput in tokens/s.",
            st.prompt_tokens_total / st.prompt_seconds_total if st.prompt_seconds_total else 0.0,
        ),
        (
            "predicted_tokens_seconds",
            "gauge",
            "Average generation throughput in tokens/s.",
            st.tokens_predicted_total / st.tokens_predicted_seconds_total
            if st.tokens_predicted_seconds_total
            else 0.0,
        ),
        ("kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.", s.kv_tokens / kv_size),
        ("kv_cache_tokens", "gauge", "KV-cache tokens.", s.kv_tokens),
        ("requests_processing", "gauge", "Number of requests processing.", s.requests_processing),
        ("requests_deferred", "gauge", "Number of requests deferred.", s.requests_deferred),
    ]
    extra: list[Row] = [
        ("prompt_tokens_cached_total", "counter", "Prompt tokens reused from the KV cache.", st.cached_tokens_total),
        ("requests_total", "counter", "Requests accepted.", st.requests_total),
        ("requests_rejected_total", "counter", "Requests refused because the queue was full.", st.requests_rejected_total),
        ("requests_cancelled_total", "counter", "Requests cancelled (client went away).", st.requests_cancelled_total),
        ("n_parallel", "gauge", "Slots (sequences) decoded together.", s.n_parallel),
        ("decode_seconds_total", "counter", "Time inside llama_decode.", st.decode_seconds_total),
        ("busy_seconds_total", "counter",
         "Time from one decode to the next while requests are being processed.", st.busy_seconds_total),
        *(server_rows or []),
    ]
    lines: list[str] = []
    for prefix, table in (("llamacpp", rows), ("workstation", extra)):
        for name, kind, help_, value in table:
            full = f"{prefix}:{name}"
            lines += [f"# HELP {full} {help_}", f"# TYPE {full} {kind}", f"{full} {_num(value)}"]
    return "\n".join(lines) + "\n"


def _num(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return repr(round(float(value), 6))
