"""Per-turn timings (names follow llama-server's ``timings``) and rolling windows."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workstation.core.phrases import Lookup, Phrase, about_words, local_number, say, words_in

if TYPE_CHECKING:
    from workstation.core.conversation_records import StoredMessage


def draft_acceptance(accepted: int, drafted: int) -> float | None:
    """The share of drafted tokens the model accepted (speculative decoding); None with none
    drafted. The one place it is worked out: a turn's, a bench run's and a replay's."""
    return accepted / drafted if drafted else None


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
    stop_reason: str = ""  # eos | length | context | cancelled | loop (it began repeating itself: core/loops.py)
    n_threads: int = 0  # decode threads the turn ended with (0: not a local engine)
    threads_reason: str = ""  # fixed | idle | busy | gpu (core/thread_policy.py)
    cpu_others: float = 0.0  # cores other programs kept busy when the threads were chosen
    reasoning_n: int = 0  # of predicted_n: tokens a reasoning model spent thinking
    reasoning_ms: float = 0.0  # from its first token to the end of its thinking
    left_out_n: int = 0  # the conversation's earlier messages the context could not hold (not in the prompt)
    dropped_n: int = 0  # prompt tokens of a batch stopped part-way (Esc, a client gone): worked on, not kept
    # of prompt_n + cache_n: tokens more (or fewer, below 0) than the prompt's text reads as, where it took
    # the tokens its cells hold for a reply (``slots.aligned_prompt``): a client's usage counts its text's
    aligned_n: int = 0
    after_switch: bool = False  # the conversation's first reply after a profile switch (F3): the app's to set
    # of prompt_n: the new message's tokens, read in any case (a conversation's first: the whole prompt, its
    # instructions too; 0: none; -1: not counted, a desk PC's reply:
    # the server does not say, and the whole prompt said "read the conversation again" of the question too)
    new_n: int = 0

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
        return draft_acceptance(self.draft_n_accepted, self.draft_n)

    @property
    def asked_n(self) -> int:
        """The prompt's tokens as its text reads (``aligned_n`` out): what a client's usage and a
        key's day count, on every route (OpenAI's chat and responses, Ollama's)."""
        return self.prompt_n + self.cache_n - self.aligned_n

    @property
    def asked_cached_n(self) -> int:
        """Of ``asked_n``, those not read again: the tokens read (``prompt_n``) are read as their
        text reads, so never more than ``asked_n`` (``cache_n`` as the cells hold it was 270 cached
        of a prompt counted as 151)."""
        return max(0, self.cache_n - self.aligned_n)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnMetrics:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def summary_line(self, lookup: Lookup | None = None) -> str:
        """chat's figures on stderr after a reply, in ``lookup``'s language (``Texts.get``) or
        English: in the words of the app's line under a reply (``metric.*``, ``figures_line``)."""

        def said(key: str, **values: Any) -> str:
            return say([(key, values)], lookup)

        parts = [  # (figures with thousands separators, as the app's line: "TTFT 1261 ms" beside its 1,261)
            say([ttft_said(self.ttft_ms)], lookup),
            *([said("metric.tps", tps=f"{self.predicted_per_second:,.1f}")] if self.predicted_n > 1 else []),  # (one token: no rate)
            said("metric.one_token") if self.predicted_n == 1 else said("metric.tokens", n=f"{self.predicted_n:,}"),
        ]
        if self.prompt_n + self.cache_n:  # a reply stopped before a server said its counts: none known
            restored = said("metric.prompt_restored", n=f"{self.restored_n:,}") if self.restored_n else ""
            parts.append(said("metric.prompt", n=f"{self.prompt_n:,}", cached=f"{self.cache_n:,}", restored=restored,
                              tps=f"{self.prompt_per_second:,.0f}"))
        if self.draft_n:
            parts.append(said("metric.draft_accepted", acc=f"{self.draft_n_accepted:,}", n=f"{self.draft_n:,}"))
        return " · ".join(parts)


@dataclass(frozen=True)
class ProfileRun:
    """Turns in a row that ran on one profile: what the dashboard plots, and what it compares
    the current profile with after a switch (F3)."""

    ref: str  # Profile.ref; "" where a turn was saved before turns said their profile
    name: str
    turns: list[TurnMetrics]


def turn_record(metrics: TurnMetrics, profile_ref: str, profile_name: str,
                sampling: dict[str, Any] | None = None, model: str = "", served_model: str = "") -> dict[str, Any]:
    """A turn's metrics as a conversation keeps them, with the profile it ran on (so that the
    dashboard does not plot two profiles' turns as one series after a switch), the sampling
    settings it had other than the profile's (the app's Ctrl+E: a reply at temperature 3.5 was
    kept, and exported, as if written with the profile's) and the model file that wrote it, as
    the profile loaded it (``model_file``; F4 says how fast this PC's replies with a model were,
    and a profile's file can be changed since)."""
    record = {**metrics.to_dict(), "profile": profile_ref, "profile_name": profile_name}
    if model:
        record["model"] = model
    if served_model:  # a server's model (backend: openai), as it names it: F7's file names it
        record["served_model"] = served_model
    if sampling:
        record["sampling"] = sampling
    return record


class MetricsHistory:
    """The last turns of the open conversation, each with the profile it ran on."""

    def __init__(self, size: int = 60) -> None:
        self.turns: deque[TurnMetrics] = deque(maxlen=size)
        self._profiles: deque[tuple[str, str]] = deque(maxlen=size)  # (ref, name) of each turn
        self._words: deque[int] = deque(maxlen=size)  # the words each reply has (0: not known)

    def add(self, metrics: TurnMetrics, profile_ref: str = "", profile_name: str = "", words: int = 0) -> None:
        """``words``: the reply's own words (``phrases.words_in``), for ``words_per_token``."""
        if metrics.stop_reason in ("failed", "interrupted") or (metrics.stop_reason == "cancelled"
                                                                and not metrics.predicted_n):
            return  # it measured nothing (figures_line says so): no zeros in the plots
        self.turns.append(metrics)
        self._profiles.append((profile_ref, profile_name))
        self._words.append(words)

    def add_record(self, record: dict[str, Any], words: int = 0) -> None:
        """A turn as ``turn_record`` saved it (or as older versions did, without a profile)."""
        self.add(TurnMetrics.from_dict(record), str(record.get("profile") or ""), str(record.get("profile_name") or ""),
                 words)

    def words_per_token(self) -> float | None:
        """The words a token is in these replies, measured: their words over the tokens they took
        (its thinking counted with it, as its tokens count it), None with none to measure. The
        speeds and room said in words follow the text written, not the UI's language."""
        return measured_words_per_token((w, t.predicted_n) for w, t in zip(self._words, self.turns, strict=True))

    def runs(self, current_ref: str) -> tuple[ProfileRun, ProfileRun | None]:
        """The turns since the last switch to ``current_ref`` (the loaded profile), and the run
        of the profile before it, if any. A turn that does not say its profile (saved by an
        older version) joins the run next to it rather than making a switch."""
        turns, profiles = list(self.turns), list(self._profiles)

        def start_of(end: int, ref: str) -> int:
            while end > 0 and profiles[end - 1][0] in (ref, ""):
                end -= 1
            return end

        i = start_of(len(turns), current_ref) if current_ref else 0
        name = next((n for r, n in reversed(profiles[i:]) if r and n), "")
        current = ProfileRun(current_ref, name, turns[i:])
        if i == 0:
            return current, None
        ref, before_name = profiles[i - 1]
        j = start_of(i, ref)
        return current, ProfileRun(ref, before_name or ref, turns[j:i])


REPLIES_TIMED = 12  # the replies whose median says how fast a model writes here (F5's headline, F3, F4, load settings)

REPLY_RATE_MIN = 32  # tokens a reply wrote for its speed to count (a 5-token "Yes." times the first token's wait)
UNTIMED_ENDS = ("failed", "interrupted")  # replies cut off by an error or by the app's end: they time nothing
PROMPT_RATE_MIN = 32  # new prompt tokens a turn reads for its reading speed to count (a 19-token follow-up showed 30 tok/s)


def read_turns(turns: Iterable[TurnMetrics]) -> list[TurnMetrics]:
    """The turns that read a prompt worth timing (``PROMPT_RATE_MIN`` new tokens or more), in their
    order: a follow-up of 19 new tokens is mostly the step's own cost; nor a turn stopped while
    reading (the batch stopped took time and kept no tokens). F5 plots their reading speed."""
    return [turn for turn in turns if turn.prompt_n >= PROMPT_RATE_MIN and not turn.dropped_n
            and turn.prompt_per_second > 0]


def reading_speed(turns: Iterable[TurnMetrics]) -> float | None:
    """This PC's prompt-reading speed (tokens a second), the median of ``read_turns``; None with none."""
    import statistics

    speeds = [turn.prompt_per_second for turn in read_turns(turns)][-REPLIES_TIMED:]
    return statistics.median(speeds) if speeds else None


@dataclass(frozen=True)
class ReplyTiming:
    """A reply kept in the conversations' file, as its speed is said (``ConversationStore.reply_timings``)."""

    tps: float  # tokens a second
    tokens: int
    words: int  # its own words, thinking too (``words_in``): its words a token, as F5 says it
    profile_ref: str
    profile_name: str
    cpu_others: float = 0.0  # cores other programs kept busy as it began (``TurnMetrics.cpu_others``)
    language: str | None = None  # the language it is written in (``language_words.text_language``; None: cannot tell)


QUIET_MIN = 2  # replies begun quiet, at least, for their speed to be gone by (one says little)


def began_busy(cpu_others: float) -> bool:
    """Whether a reply began while other programs (another app, a ``batch`` or summary run in
    another window) kept a core of this PC busy (``TurnMetrics.cpu_others`` from
    ``thread_policy.BUSY_SLACK``): it wrote slower than this PC writes when quiet."""
    from workstation.core.thread_policy import BUSY_SLACK

    return cpu_others >= BUSY_SLACK


def quiet_median(replies: Iterable[tuple[float, float]], limit: int = REPLIES_TIMED) -> float | None:
    """The median speed (tokens/s) of the last ``limit`` of ``replies`` (speed, cores other
    programs kept busy as it began; oldest first) begun with no other program keeping a core
    busy (under ``thread_policy.BUSY_SLACK``), where there are at least ``QUIET_MIN``; None
    otherwise. What this PC's own replies say of a model, trusted: F5 compares two profiles by
    it ("about 26 against 13" compared 6 replies with 1 written while 2 cores were busy), F4
    judges a row slow by it (it said "Slow here: about 2 words a second" by the estimate beside
    the row's own replies at 9)."""
    import statistics

    speeds = [tps for tps, others in replies if not began_busy(others)][-limit:]
    return statistics.median(speeds) if len(speeds) >= QUIET_MIN else None


def measured_words_per_token(replies: Iterable[tuple[int, int]]) -> float | None:
    """The words a token is in replies of (words, tokens), measured: their words over their tokens,
    of those with words known and long enough to time; None with none. F5's (``MetricsHistory``)
    and F3's and F4's (``ReplyTiming``) alike: F3's E said 41 words a second of two replies F5
    said 46 of (the language's figure against the replies' own)."""
    pairs = [(w, n) for w, n in replies if w and n >= REPLY_RATE_MIN]
    tokens = sum(n for _, n in pairs)
    return sum(w for w, _ in pairs) / tokens if tokens else None


def replies_words_a_token(replies: Iterable[ReplyTiming], lang: str) -> float | None:
    """The words a token of ``replies`` as F3, F4 and fit say their speed in the UI's language
    ``lang``: their own (``measured_words_per_token``) of those written in it (or in a language
    that cannot be told), None where none was (``phrases.about_words`` then goes by the
    language's figure, as the estimate beside them does). A Turkish F3 said "up to about 25
    words a second" in Turkish words and, right under it, "your last reply with it: about 43" in
    the English words of an English reply."""
    return measured_words_per_token((r.words, r.tokens) for r in replies if r.language in (None, lang))


def timed_replies(turns: Iterable[TurnMetrics]) -> list[TurnMetrics]:
    """The replies that say how fast a model writes here, in their order: those not cut off
    (``UNTIMED_ENDS``) that wrote ``REPLY_RATE_MIN`` tokens or more. F5's "Your last N replies"
    counts these, as F3's and F4's do (the store's ``reply_speeds`` picks the same ones): F5 said
    "your last 12 replies" where F4 said 4 of the same conversation, counting the short ones too."""
    return [t for t in turns if t.stop_reason not in UNTIMED_ENDS and t.predicted_n >= REPLY_RATE_MIN
            and t.predicted_per_second > 0]


def history_of(messages: list[StoredMessage], switched_at: float | None = None) -> MetricsHistory:
    """The dashboard's turns of a conversation's replies; a reply is the first after a switch
    (``TurnMetrics.after_switch``) only where it came after this session's, at ``switched_at``
    (None: none this session): F5 said "The first reply after the switch…" of one from before a restart."""
    history = MetricsHistory(60)
    for msg in messages:
        if msg.metrics:
            this_switch = switched_at is not None and msg.created >= switched_at
            history.add_record(msg.metrics if this_switch else {**msg.metrics, "after_switch": False},
                               words_in(msg.content) + words_in(msg.reasoning))
    return history


TTFT_SECONDS_FROM_MS = 1_000  # a wait for the first word from 1 s on is said in seconds
TTFT_WHOLE_SECONDS_FROM = 10  # s: from there in whole seconds


def ttft_said(ms: float) -> tuple[str, dict[str, Any]]:
    """The wait for the first word under a reply: in ms below ``TTFT_SECONDS_FROM_MS``, seconds
    from there, to a tenth below ``TTFT_WHOLE_SECONDS_FROM`` ("TTFT 19,865 ms" made a reader count
    the digits; "TTFT 7,211 ms" under one reply and "TTFT 13 s" under the next read as two units)."""
    if round(ms) < TTFT_SECONDS_FROM_MS:  # (as it is said: 999.6 ms read "1,000 ms")
        return "metric.ttft", {"ms": f"{ms:,.0f}"}
    tenths = round(ms / 100) / 10
    return "metric.ttft_s", {"s": f"{tenths:.1f}" if tenths < TTFT_WHOLE_SECONDS_FROM else f"{ms / 1000:,.0f}"}


REREAD_MIN = 256  # tokens of the conversation read again for a turn to be a re-read (a first turn reads
# the system prompt alone: 36 tokens with office-cpu's)


def read_again_n(m: TurnMetrics) -> int:
    """The tokens of the conversation before the new message (``new_n``) that a turn read, not
    reused from the cache; 0 where the new message's tokens were not counted (a desk PC's reply)."""
    return max(0, m.prompt_n - m.new_n) if m.new_n >= 0 else 0


def reread(m: TurnMetrics) -> bool:
    """Whether a turn read the whole conversation again before its first word, most of it not
    kept (after a profile switch, a restart without its saved state): ``REREAD_MIN`` tokens or
    more read again, more than those reused. Its wait is many times an ordinary turn's: F5 says
    them apart (``dashboard.replies_said``), as a median of both said neither. Only where the new
    message's tokens were counted (``new_n`` above 0): a record kept before they were, a reply gone
    on with (Alt+C) and a desk PC's do not say what was read again."""
    before = read_again_n(m)
    return m.new_n > 0 and before >= REREAD_MIN and before > m.cache_n


def switch_reading(m: TurnMetrics, lookup: Lookup | None = None, prefix: str = "metric") -> Phrase | None:
    """Why the first reply after a profile switch (F3) waited, or did not: its prompt mostly read
    again (the other profile's engine held none of the conversation: "read the conversation again
    after the switch: 1,400 words"), or mostly kept, restored from the state saved on disk for this
    model file and settings ("kept from before the switch: 1,100 of 1,400 words"). A wait of 17 s
    after switching back and forth was told nothing. In ``lookup``'s language's words a token;
    ``prefix``: the reply's line's phrases ("metric") or F5's sentences ("dash"). None for any
    other reply, and for one whose prompt was kept in memory (a server's). The conversation is
    what came before the new message (``new_n``), which is read in any case: counted with it,
    a long question said "read the conversation again" of itself. None where it was not
    counted (a desk PC's reply: the server's count is of the whole prompt)."""
    if m.new_n < 0:
        return None
    before = read_again_n(m)
    total = before + m.cache_n
    if not m.after_switch or not total:
        return None
    if before > m.cache_n:
        return f"{prefix}.switch_read", {"words": about_words(before, lookup)}
    if m.restored_n:
        return f"{prefix}.switch_kept", {"kept": about_words(m.cache_n, lookup), "total": about_words(total, lookup)}
    return None


STOP_WORDS = {"cancelled": "metric.stopped", "length": "metric.length", "quota": "metric.quota",
              "context": "metric.context", "loop": "metric.loop"}  # how a reply ended, where it is worth a word
# what the line under a reply leaves out first where it would not fit on one line (``figures_line``'s
# ``width``): the cache's counts, the guesses kept, the length, then the wait, the speed last; how
# it ended and its own settings never (the Turkish line took two lines at 80x24 with a 4-digit
# figure, and "uzunluk sınırı · Alt+C sürdürür" went under it; at 110 columns the wait and the
# speed went first, the guesses kept stood: newuser21)
LEFT_OUT_FIRST = ("cache", "draft", "tokens", "ttft", "tps")


def figures_line(metrics: TurnMetrics | dict[str, Any], lookup: Lookup | None = None, speed: bool = True,
                 width: int | None = None, ended: bool = True) -> str:
    """TTFT, tok/s, tokens, cache hits and draft acceptance of one reply, on one line, and how
    it ended where that is worth a word; in ``lookup``'s language (the TUI's ``texts.get``) or
    English. The chat shows it under a reply. ``speed`` False: how it ended and its own settings,
    without the figures (F7's export, for a colleague: the dashboard's figures said nothing to one).
    ``width``: the columns it has (the chat's), its figures left out by ``LEFT_OUT_FIRST`` until
    it fits them; None: all of them. ``ended`` False: how it ended left out (the chat says it on a
    line of its own)."""
    m = TurnMetrics.from_dict(metrics) if isinstance(metrics, dict) else metrics

    def said(key: str, **values: Any) -> str:
        return say([(key, values)], lookup)

    if m.stop_reason == "cancelled" and not m.predicted_n:
        # cut off before its first token: no row of zeros, and no "TTFT" that was only the
        # time until Esc, nor the cache figures of a prompt read in part
        return said("metric.stopped")
    if m.stop_reason == "failed":  # cut off by an error (the server went away): it measured nothing
        # and why, where the reply's record keeps it (``stop_said``: the error's sentence as it was
        # said): once the notice faded, "cut off by an error" was all that was left of the reason
        why = metrics.get("stop_said") if isinstance(metrics, dict) else None
        if isinstance(why, str) and why.strip() and isinstance(metrics, dict) and metrics.get("stop_says_cut"):  # (the cut
            return why.strip().rstrip(".")  # said in its sentence itself: "cut off: …, so the reply was cut off")
        return said("metric.failed_why", why=why.strip().rstrip(".")) if isinstance(why, str) and why.strip() \
            else said("metric.failed")
    if m.stop_reason == "interrupted":  # kept while it streamed, and the app ended then (killed, the power cut)
        return said("metric.interrupted")
    prompt_total = m.prompt_n + m.cache_n
    # figures with thousands separators, in the language's way (TTFT 1,904 ms; 1.904 ms)
    figures: list[tuple[str, str]] = [
        ("ttft", say([ttft_said(m.ttft_ms)], lookup)),
        *([("tps", said("metric.tps", tps=f"{m.predicted_per_second:,.1f}"))] if m.predicted_n > 1 else []),  # (one token: no rate, not "0.0 tok/s")
        ("tokens", said("metric.one_token") if m.predicted_n == 1 else said("metric.tokens", n=f"{m.predicted_n:,}")),
    ] if speed else []
    if prompt_total and speed and m.cache_n:  # a server stopped before it said its prompt counts: none shown, not 0/0;
        # none read before (a conversation's first reply): "reused 0 of 711" said nothing a person could use
        cache = said("metric.cache", hit=f"{m.cache_n:,}", total=f"{prompt_total:,}")
        if m.restored_n:  # part of cache_n: read back from a saved KV state, not kept in memory
            cache += f" ({said('metric.restored', n=f'{m.restored_n:,}')})"
        figures.append(("cache", cache))
    if prompt_total and speed and (switch := switch_reading(m, lookup)) is not None:  # (the first reply after F3: why it waited)
        figures.append(("switch", say([switch], lookup)))  # (never left out)
    if (rate := m.acceptance_rate) is not None and speed:
        figures.append(("draft", said("metric.draft", rate=f"{rate * 100:.0f}", acc=f"{m.draft_n_accepted:,}",
                                      n=f"{m.draft_n:,}")))
    parts: list[str] = []
    if m.stop_reason == "cancelled" and isinstance(metrics, dict) and metrics.get("stopped_by") == "new_conversation":
        parts.append(said("metric.stopped_new"))  # (Ctrl+N while it was written: "stopped" alone said not why)
    elif m.stop_reason == "quota" and isinstance(metrics, dict) and isinstance(metrics.get("resets"), str) \
            and lookup is not None and lookup("status.day_used"):
        # when it answers again, as the status line says it ("status.day_used": one phrase for both)
        from workstation.core.remote import again_at

        parts.append(said("metric.quota_day", day=("status.day_used", again_at(metrics["resets"]))))
    elif m.stop_reason in STOP_WORDS and ended:
        parts.append(said(STOP_WORDS[m.stop_reason]))
    if m.left_out_n:  # the model did not see the conversation's start: worth a word under the reply
        parts.append(said("metric.left_out", n=f"{m.left_out_n:,}"))
    own = metrics.get("sampling") if isinstance(metrics, dict) else None
    if isinstance(own, dict) and own:  # set for the session (Ctrl+E) or the turn (chat --temperature): said
        # named as the app's Ctrl+E names them where the lookup has them (it said "max_tokens 60"
        # beside the dialog's "Longest reply"), numbers in the language's writing
        def value(v: Any) -> str:  # a seed of None is a new one each time; 1,200 and 0.7 as the language writes them
            if v is None:
                return (lookup("sampling.random") if lookup else None) or "random"
            if isinstance(v, list):
                return ", ".join(repr(x) for x in v)
            return local_number(f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v), lookup)

        named = [f"{(lookup(f'sampling.{k}') if lookup else None) or k} {value(v)}" for k, v in own.items()]
        parts.append(said("metric.sampling", settings=", ".join(named)))
    for kind in LEFT_OUT_FIRST if width is not None else ():
        if len(" · ".join([*(text for _, text in figures), *parts])) <= width:
            break
        figures = [(k, text) for k, text in figures if k != kind]
    return " · ".join([*(text for _, text in figures), *parts])
