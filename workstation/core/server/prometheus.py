"""``GET /metrics``: Prometheus text with llama-server's metric names (``llamacpp:``) and this
server's own (``workstation:``), histograms of TTFT, time per output token and request duration
by profile, and requests and tokens per API key (``ServerMetrics``)."""

from __future__ import annotations

from workstation.core.metrics import TurnMetrics
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


# --- this server's histograms and per-key counters ------------------------------------------------
TTFT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
TPOT_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)
DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: tuple[tuple[str, str], ...]) -> str:
    return ",".join(f'{k}="{_label(v)}"' for k, v in pairs)


class Histogram:
    """A Prometheus histogram with one series per label set (cumulative buckets, sum, count)."""

    def __init__(self, name: str, help_: str, buckets: tuple[float, ...], label: str) -> None:
        self.name, self.help, self.buckets, self.label = name, help_, buckets, label
        self.series: dict[str, tuple[list[int], list[float]]] = {}  # value -> (counts, [sum])

    def observe(self, label_value: str, value: float) -> None:
        counts, total = self.series.setdefault(label_value, ([0] * (len(self.buckets) + 1), [0.0]))
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                counts[i] += 1
        counts[-1] += 1  # +Inf, which is also the count
        total[0] += value

    def lines(self, prefix: str) -> list[str]:
        full = f"{prefix}:{self.name}"
        out = [f"# HELP {full} {self.help}", f"# TYPE {full} histogram"]
        for value, (counts, total) in sorted(self.series.items()):
            base = ((self.label, value),)
            for bound, n in zip([*map(_bound, self.buckets), "+Inf"], counts, strict=True):
                out.append(f"{full}_bucket{{{_labels((*base, ('le', bound)))}}} {n}")
            out.append(f"{full}_sum{{{_labels(base)}}} {_num(total[0])}")
            out.append(f"{full}_count{{{_labels(base)}}} {counts[-1]}")
        return out


def _bound(b: float) -> str:
    return repr(float(b))


class ServerMetrics:
    """What ``/metrics`` adds from the HTTP side: latency histograms by profile, and requests and
    tokens per key (llama-server has counters only). Updated from the event loop's thread."""

    def __init__(self) -> None:
        self.ttft = Histogram("time_to_first_token_seconds", "Request to first token.", TTFT_BUCKETS, "profile")
        self.tpot = Histogram("time_per_output_token_seconds", "Decode time per generated token.", TPOT_BUCKETS, "profile")
        self.duration = Histogram("request_duration_seconds", "Request to last byte of the answer.", DURATION_BUCKETS, "profile")
        self.key_requests: dict[tuple[str, int], int] = {}
        self.key_prompt_tokens: dict[str, int] = {}
        self.key_completion_tokens: dict[str, int] = {}
        self.accounting_seconds = 0.0  # on the request path: keys, quota, counters, queueing
        self.writer_seconds = 0.0  # the writer thread: audit lines and usage rows
        self.accounted = 0  # generation requests accounted

    def observe(
        self, profile: str, key: str, status: int, m: TurnMetrics | None, duration_s: float, prompt: int, completion: int
    ) -> None:
        self.key_requests[(key, status)] = self.key_requests.get((key, status), 0) + 1
        self.key_prompt_tokens[key] = self.key_prompt_tokens.get(key, 0) + prompt
        self.key_completion_tokens[key] = self.key_completion_tokens.get(key, 0) + completion
        self.duration.observe(profile, duration_s)
        if m is not None and status < 400 and m.predicted_n:
            self.ttft.observe(profile, m.ttft_ms / 1000)
            if m.predicted_n > 1:
                self.tpot.observe(profile, m.predicted_per_token_ms / 1000)

    def text(self, prefix: str = "workstation", per_key: bool = True) -> str:
        """The histograms and accounting counters; the per-key counters only with ``per_key``
        (the operator's view: one person's key must not read what the others used)."""
        lines: list[str] = []
        for hist in (self.ttft, self.tpot, self.duration):
            lines += hist.lines(prefix)
        if per_key:
            lines += self._key_lines(prefix)
        for name, help_, value in (
            ("accounting_requests_total", "Generation requests accounted.", self.accounted),
            ("accounting_seconds_total", "Accounting time on the request path (keys, quota, counters).",
             self.accounting_seconds),
            ("accounting_writer_seconds_total", "Time writing audit lines and usage rows (writer thread).",
             self.writer_seconds),
        ):
            full = f"{prefix}:{name}"
            lines += [f"# HELP {full} {help_}", f"# TYPE {full} counter", f"{full} {_num(value)}"]
        return "\n".join(lines) + "\n"

    def _key_lines(self, prefix: str) -> list[str]:
        name = f"{prefix}:key_requests_total"
        lines = [f"# HELP {name} Generation requests per key and HTTP status.", f"# TYPE {name} counter"]
        for (key, status), n in sorted(self.key_requests.items()):
            lines.append(f'{name}{{key="{_label(key)}",status="{status}"}} {n}')
        for kind, table in (("prompt", self.key_prompt_tokens), ("completion", self.key_completion_tokens)):
            name = f"{prefix}:key_{kind}_tokens_total"
            lines += [f"# HELP {name} {kind.title()} tokens per key.", f"# TYPE {name} counter"]
            lines += [f'{name}{{key="{_label(key)}"}} {n}' for key, n in sorted(table.items())]
        return lines
