"""``backend: openai`` profiles: the engine interface over any OpenAI-compatible server.

``RemoteEngine(profile)`` talks to ``profile.remote.base_url`` (vLLM, SGLang, llama-server,
Ollama, ``workstation serve``) with streamed chat completions over httpx and measures the turn
on the client side: ``ttft_ms`` is request to first visible text, ``predicted_n`` comes from the
server's ``usage`` (asked for with ``stream_options.include_usage``) or, when a server sends
none, from the number of content chunks. ``predicted_ms`` is the server's own (its ``timings``:
``workstation serve``, llama-server), else the decode time from the first to the last token seen
here scaled to all ``predicted_n`` tokens (the first token's own time hides in TTFT). ``cache_n`` is the server's
``prompt_tokens_details.cached_tokens`` when it reports it.

Every sampling field of the profile is sent: OpenAI's (temperature, top_p, presence_penalty,
frequency_penalty, max_tokens, seed: a random one each turn where the profile has none, as the
local sampler draws it)
and llama-server's (top_k, min_p, repeat_penalty), which ``workstation serve``, llama-server and
llama-cpp-python's server apply. Token counts (for summaries' chunking) come from the server's
``/apply-template`` + ``/tokenize`` (``workstation serve`` and llama-server have them); other
servers get a conservative estimate, ``ESTIMATE_BYTES_PER_TOKEN`` UTF-8 bytes a token plus
``ESTIMATE_TOKENS_PER_MESSAGE`` for each message's template, which over-counts English (about 4
bytes a token) and most other languages, so chunks stay inside the context.
``run_many`` sends up to ``profile.parallel`` requests at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from workstation.core.engine_api import (
    answer_reserve,
    check_sent,
    fit_history,
    with_system_prompt,
)
from workstation.core.errors import BackendUnreachable, EngineError, ProfileError, WorkstationError
from workstation.core.events import (
    SERVER_STOPPING,
    EngineInfo,
    Message,
    PromptRead,
    RunningTurns,
    ServerWaiting,
    StepEvent,
    TokenDelta,
    TurnEvent,
    TurnFinished,
    finished_turn,
)
from workstation.core.language_words import said_figures
from workstation.core.loops import loop_watch, watched
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import Phrase
from workstation.core.profile_check import profile_from_dict
from workstation.core.profiles import Constraints, Profile, Remote, Sampling
from workstation.core.reasoning import ThinkingSplitter

ESTIMATE_BYTES_PER_TOKEN = 2.5
ESTIMATE_TOKENS_PER_MESSAGE = 8
QUIET_SAID_AFTER_S = 5.0  # nothing from the server for this long before the first word: said (ServerWaiting)
STALLED_SAID_AFTER_S = 15.0  # nothing more for this long in the middle of a reply: said (ServerWaiting, stalled)
LIMITS = ("n_ctx", "max_prompt_tokens")  # the server's limits a request is fitted to (its /models meta, a 400's fields)
FINISH_TO_STOP = {"stop": "eos", "length": "length", "content_filter": "eos", "tool_calls": "eos"}


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
        message = data.get("error", {}).get("message") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            message = data["error"]
        if isinstance(data, dict) and message is None and isinstance(data.get("message"), str):
            message = data["message"]  # vLLM's errors: {"object": "error", "message": ...}
    except (ValueError, AttributeError):
        message = None
    return str(message or response.reason_phrase or "no message").rstrip(".")


def _error_object(response: httpx.Response) -> dict[str, Any]:
    """The OpenAI-style error object (empty where the answer has none)."""
    try:
        data = response.json()
        error = data.get("error") if isinstance(data, dict) else None
    except (ValueError, AttributeError):
        return {}
    return error if isinstance(error, dict) else {}


def _error_fields(response: httpx.Response) -> tuple[str | None, str | None]:
    """The OpenAI-style error's ``code`` and ``type`` (None where it has none)."""
    error = _error_object(response)
    code, type_ = error.get("code"), error.get("type")
    return (code if isinstance(code, str) else None), (type_ if isinstance(type_, str) else None)


def _whole_header(response: httpx.Response, name: str) -> int | None:
    """A header's whole number of 0 and up ('3', '3s', '2.5'); None when it is not one."""
    try:
        value = float(response.headers.get(name, "").removesuffix("s"))
    except ValueError:
        return None
    return max(0, int(value)) if math.isfinite(value) and value < 10**9 else None


def _whole(value: Any) -> int:
    """A whole number a server's ``/models`` meta gives (0 where it gives something else: a
    third-party server's meta is its own)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# what a server answers instead of a reply, before its first token: the key, the day's tokens,
# every slot busy. Nothing was read, so the message can go again as it is (the app puts it back
# in the box: it stayed in the chat with no reply, its reason in a notice that faded)
REFUSALS = frozenset({"remote.key_refused", "remote.key_unknown", "remote.key_not_here", "remote.day_used",
                      "remote.prompt_too_big", "remote.over_whole_day", "remote.day_held", "remote.all_busy", "remote.all_busy_own", "remote.busy",
                      "remote.loading", "remote.stopping", "remote.too_long",
                      "remote.key_revoked", "remote.key_for_others", "remote.too_large", "remote.model_changed",
                      "remote.needs_key", "remote.needs_key_env", "remote.needs_key_file"})


def resets_text(at: float | None) -> str:
    """When a key's day resets (``at``, on this PC's clock; None: not said, this PC's next
    midnight), as a refusal and a reply cut where the day ran out both say it ("at 00:00")."""
    from workstation.core.quota import next_day_start

    return time.strftime("%H:%M", time.localtime(next_day_start(time.time()) if at is None else at))


# the server's refusals and stops of a key whose tokens for the day ran out (or are fewer than a
# request needs): it answers again once its admin raises the limit or the day resets ("resets"),
# not "once the server is back" (it never went away)
DAY_LIMIT = frozenset({"remote.day_used", "remote.prompt_too_big", "remote.prompt_too_big_in_summary",
                       "remote.quota_cut", "remote.quota_cut_part"})


def day_cut(engine: Any, phrase: str) -> BackendUnreachable:
    """The error of a reply the office server stopped where the key's tokens for the day ran
    out (``stop_reason`` "quota"): the server cannot take more today, as when it refuses a
    request over the quota (429), so it is what that refusal is (exit 75), saying when the day
    resets as the refusal does. ``phrase``: a chat's reply or a summary's."""
    at = getattr(engine, "day_resets_at", None)
    return BackendUnreachable(said=[(phrase, again_at(resets_text(at)))])


def again_at(resets: str) -> dict[str, Any]:
    """The values of a phrase that says when a key whose day ran out is answered again
    (``remote.again_at``, one phrase for the refusal, a reply cut and the status line)."""
    return {"resets": resets, "again": ("remote.again_at", {"resets": resets})}


def stopped_reply(error: Any) -> Phrase:
    """What an error event in the middle of a stream says: by its ``code`` where it is one
    ``workstation serve`` sends (its shutdown cut the reply off), in the desk PC's language;
    else the server's own sentence, where it names the server itself ("The server is shutting
    down…" was said "The server stopped the reply: The server is shutting down…"), or after
    "The server stopped the reply"."""
    if isinstance(error, dict) and error.get("code") == "shutting_down":
        return ("remote.cut_by_stopping", {})
    message = str(error.get("message") if isinstance(error, dict) else error).strip().rstrip(".")
    if message.lower().startswith(("the server", "server ")):
        return ("remote.server_said", {"message": message})
    return ("remote.stopped_reply", {"message": message})


def refused(err: WorkstationError) -> bool:
    """Whether a turn failed because the server refused the request (``REFUSALS``)."""
    return bool(err.said) and err.said[0][0] in REFUSALS


def answered_phrase(url: str, response: httpx.Response, now: float | None = None, model: str = "",
                    own: bool = False, new_fits: Callable[[int], bool] | None = None) -> Phrase:
    """What a server's refusal means, as a phrase the desk PC's language says, read from the
    OpenAI-style error's ``code`` and the rate-limit headers ``workstation serve`` sends (never
    from its English sentence): a key's day used up (with when it resets, on this PC's clock), a
    message longer than what is left of the day, the person's own running requests holding the
    rest, every slot busy, the server starting (its model loading) or stopping, a request longer
    than it reads or a body larger than it takes, no such ``model``, its model file changed on
    disk. Anything else (another server's per-minute limit too) in
    the server's own words. ``own``: every slot is busy with the person's own requests
    (``_queued_behind_own``), as the waiting line said: not "other people's". ``new_fits(left)``:
    whether a new conversation (the instructions and the last message alone) would fit the
    ``left`` tokens of the day: only then is one advised (it was advised in a conversation already
    new, or where the instructions alone needed more, and only waiting helped)."""
    code, type_ = _error_fields(response)
    wait = _whole_header(response, "Retry-After")
    limit = _whole_header(response, "X-RateLimit-Limit-Tokens")
    left = _whole_header(response, "X-RateLimit-Remaining-Tokens")
    if response.status_code == 429 and code == "request_over_day_limit":  # waiting cannot help: never "wait until"
        error = _error_object(response)
        n, most = _whole(error.get("prompt_tokens")), _whole(error.get("tokens_per_day")) or limit
        return ("remote.over_whole_day", {"url": url, "n": f"{n:,}" if n else "?", "limit": f"{most:,}" if most else "?"})
    if response.status_code == 429 and code == "insufficient_quota" and wait is not None:
        resets = resets_text((time.time() if now is None else now) + wait)
        if left:  # some of the day is left, less than this message needs
            advice = "remote.day_new_fits" if new_fits is not None and new_fits(left) else "remote.day_wait"
            return ("remote.prompt_too_big", {"url": url, "left": f"{left:,}", "resets": resets,
                                              "advice": (advice, {"resets": resets})})
        return ("remote.day_used", {"url": url, "limit": f"{limit:,}" if limit is not None else "?",
                                    **again_at(resets)})
    if response.status_code == 429 and code == "rate_limit_exceeded" and type_ == "insufficient_quota":
        return ("remote.day_held", {"url": url})
    if response.status_code in (429, 503) and code == "server_busy" and own:
        return ("remote.all_busy_own", {"url": url})
    if response.status_code in (429, 503) and code == "server_busy":
        return ("remote.all_busy", {"url": url, "seconds": wait or 1})
    if response.status_code == 503 and code == "loading":  # workstation serve restarted, its model not loaded yet
        return ("remote.loading", {"url": url, "when": try_again_in(wait)})
    if response.status_code == 503 and code == "shutting_down":  # stopped by its admin (or restarting)
        return ("remote.stopping", {"url": url, "when": try_again_in(wait)})
    if response.status_code == 400 and code == "context_length_exceeded":  # with its figures where it gives them
        figures = {k: _whole(_error_object(response).get(k)) for k in ("prompt_tokens", "max_prompt_tokens", "n_ctx")}
        said: Phrase | str = ("remote.too_long_figures", {"n": f"{figures['prompt_tokens']:,}",
                                                          "most": f"{figures['max_prompt_tokens']:,}",
                                                          "ctx": f"{figures['n_ctx']:,}"}) if all(figures.values()) else ""
        return ("remote.too_long", {"url": url, "figures": said})
    if response.status_code == 404 and code == "model_not_found" and model:
        return ("remote.no_model", {"url": url, "model": model})
    limit = _error_object(response).get("limit_bytes")
    if response.status_code == 413 and code == "request_too_large" and isinstance(limit, int) and limit > 0:
        from workstation.core.catalog import human_bytes

        return ("remote.too_large", {"url": url, "size": human_bytes(limit)})
    if response.status_code == 503 and code == "model_file_changed":  # until its admin restarts it
        return ("remote.model_changed", {"url": url})
    if response.status_code == 404 and _no_route(response):  # a wrong address
        asked = response.request.url.path if _has_request(response) else ""
        return wrong_address(url, asked.removeprefix(httpx.URL(url).path))
    return ("remote.answered", {"url": url, "status": response.status_code, "message": _error_text(response)})


def key_refusal(url: str, response: httpx.Response, source: Phrase | str = "") -> Phrase:
    """What a server's 401 or 403 to a key it was sent means (``source``: where the key came
    from), by the error's code and fields, never its English sentence (a server's own words only
    for a code not known here). A ``workstation serve`` older than the ``key_revoked`` code
    answered a revoked key ``invalid_api_key`` as a key never given, with "The API key 'bob' was
    revoked.": said revoked, not "does not know the API key; check that it was copied whole"."""
    code, _ = _error_fields(response)
    error = _error_object(response)
    profiles, served = error.get("profiles"), error.get("profile")
    if response.status_code == 403 and code == "profile_not_allowed":
        if isinstance(profiles, list) and profiles and isinstance(served, str):
            return ("remote.key_for_others", {"url": url, "served": served, "profiles": ", ".join(map(str, profiles))})
        return ("remote.key_not_here", {"url": url, "message": _error_text(response)})
    if code == "key_revoked" or (code == "invalid_api_key" and _error_text(response).endswith("was revoked")):
        return ("remote.key_revoked", {"url": url, "source": source})
    if code == "invalid_api_key":  # (its sentence is advice for programmers: which header to send)
        return ("remote.key_unknown", {"url": url, "source": source})
    return ("remote.key_refused", {"url": url, "source": source, "message": _error_text(response)})


def try_again_in(wait: int | None) -> Phrase:
    """When to try again: in the seconds a server's ``Retry-After`` names, else in a moment."""
    return ("remote.in_seconds", {"seconds": wait}) if wait else ("remote.in_a_moment", {})


def _no_route(response: httpx.Response) -> bool:
    """A 404 for the address, not for something asked there: ``workstation serve``'s own
    ``not_found``, or an answer with no OpenAI-style error (a web server's page). Ollama's and
    vLLM's 404 for a model they do not have says so, in their words."""
    code, _ = _error_fields(response)
    if code == "not_found":
        return True
    try:
        data = response.json()
    except ValueError:
        return True
    return not (isinstance(data, dict) and (isinstance(data.get("error"), dict | str) or "message" in data))


def wrong_address(url: str, route: str) -> Phrase:
    """A server that answers 404 for ``url`` + ``route``: there is no OpenAI-style API at that
    address (``remote.base_url`` ends in /v2, or misses its /v1)."""
    address = httpx.URL(url)
    hint: Phrase | str = ""
    if not address.path.rstrip("/").endswith("/v1"):
        example = str(address.copy_with(path="/v1", query=None, fragment=None))
        hint = ("remote.ends_v1", {"example": example})
    return ("remote.wrong_address", {"url": url, "route": route, "hint": hint})


def constraint_fields(constraints: Constraints) -> dict[str, Any]:
    """The request fields that ask a server for ``constraints``: a JSON schema as OpenAI's
    ``response_format`` (vLLM, SGLang, llama-server, Ollama and ``workstation serve`` read it), any
    other grammar as llama-server's ``grammar`` (GBNF; ``workstation serve`` reads it too)."""
    if constraints.json_schema is not None:
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": constraints.json_schema},
            }
        }
    if constraints.grammar:
        return {"grammar": constraints.grammar}
    return {}


def _key_file_used(remote: Remote) -> bool:
    """Whether the key comes from ``api_key_file``: named, and there or the only source named.
    A profile naming both (the shipped office-server.yaml) takes the file first and the
    variable where no such file is there: the README tells offices to use the file, and a
    desk set up with the variable before goes on working."""
    if not remote.api_key_file:
        return False
    from workstation.core.paths import typed_path

    return not remote.api_key_env or typed_path(remote.api_key_file).exists()


def key_source(remote: Remote) -> str:
    """Where a desk profile's key comes from, in words: the key file, else the variable ("")."""
    return remote.api_key_file if _key_file_used(remote) else remote.api_key_env or ""


def key_from_profile(remote: Remote) -> str | None:
    """The key a desk profile names: the first line of ``api_key_file`` (refused where every
    user may read it, as serve's --api-key-file is), else the variable ``api_key_env``."""
    if _key_file_used(remote) and remote.api_key_file:
        from workstation.core.keys import key_from_file

        try:
            return key_from_file(remote.api_key_file, ("key.named_remote", {}))
        except WorkstationError as err:
            raise ProfileError(said=err.said) from None
    return os.environ.get(remote.api_key_env) if remote.api_key_env else None


def _checked_key(remote: Remote, key: str | None) -> str:
    """A desk profile's key as sent ("" for none), refused where it cannot be one."""
    key = (key or "").strip()
    from workstation.core.keys import bearer_before

    if key and bearer_before(key):  # (a key file's is said by key_from_file)
        raise ProfileError(said=[("key.bearer", {"named": key_source(remote) or "the profile"})])
    if key and (not key.isprintable() or " " in key or not key.isascii()):
        raise ProfileError(  # pasted with a line break or a space inside, or with typographic quotes
            f"The API key in {key_source(remote) or 'the profile'} is not a key: it holds a space, a line "
            "break or a character a key never has; copy it again from where it was given."
        )
    return key


class RemoteEngine:
    """Same interface as ``Engine``; ``cancel()`` may be called from any thread."""

    def __init__(self, profile: Profile, *, check: bool = True, api_key: str | None = None,
                 own_server: bool = False) -> None:
        """``own_server``: the ``workstation serve`` this app started (Ctrl+G): a turn names its
        conversation (``conversation_tag``) and ``forget`` reaches the server's cells, so a
        deleted conversation leaves nothing of itself in the server's slots or on disk."""
        if profile.backend != "openai":
            raise EngineError(f"Profile '{profile.name}' is not an openai-backend profile.")
        t0 = time.perf_counter()
        self.profile = profile
        remote = profile.remote
        self.base_url = remote.base_url.rstrip("/")  # its http(s):// checked with the profile
        headers = {"Accept": "application/json"}
        # a variable that is not set means no key (a local server without one); a server that
        # wants one answers 401 and the error names the variable. ``api_key``: the key itself
        # (the TUI's chat on the server it started), used instead of the variable
        self._given_key = api_key is not None
        key = _checked_key(remote, api_key or key_from_profile(remote))
        self.has_key = bool(key)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        timeout = httpx.Timeout(remote.timeout_s, connect=min(10.0, remote.timeout_s))
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)
        self.model = remote.model
        self.meta: dict[str, Any] = {}
        self.listed: list[str] = []  # the models the server's /models names (empty: it has no list)
        # what the server answered of itself: starting (its model loading: a turn waits for it) or stopping
        self.loading: Phrase | None = None
        self.load_notes: list[Phrase] = []  # what to say once connected, as a local engine's
        self._cancel = threading.Event()
        self.turns = RunningTurns(self._cancel)
        self._responses: set[httpx.Response] = set()
        # re-entrant: cancel() runs in a signal handler, on the main thread, which may hold it then
        self._lock = threading.RLock()
        self.exact_counts: bool | None = None  # the server tokenizes for us (None: not asked yet)
        self.own_server = own_server
        # when the key's day resets, on this PC's clock, as the server said with a reply cut where
        # the day ran out (``quota_resets_in``; None: not said, an older server): ``day_cut``
        self.day_resets_at: float | None = None
        if check or not self.model:
            self._discover()
        self.load_ms = (time.perf_counter() - t0) * 1000

    def _discover(self) -> None:
        """Reach the server once (clear error now rather than at the first turn)."""
        try:
            response = self.client.get("/models", timeout=min(10.0, self.profile.remote.timeout_s))
        except httpx.HTTPError as err:
            self.client.close()
            raise BackendUnreachable(said=[("remote.unreachable", {"url": self.base_url, "reason": _reason(err)})]) from None
        if response.status_code in (401, 403):
            self.client.close()
            raise self._key_problem(response)
        if response.status_code == 404 and (not self.model or _no_route(response)):  # a wrong address
            self.client.close()
            raise EngineError(said=[wrong_address(self.base_url, "/models")])
        if response.status_code != 200:
            # some servers have no /models; the first turn will tell
            said = answered_phrase(self.base_url, response) if response.status_code == 503 else None
            self.loading = said if said is not None and said[0] in ("remote.loading", "remote.stopping") else None
            if not self.model:
                self.client.close()
                if self.loading:
                    raise BackendUnreachable(said=[self.loading])
                if response.status_code in (429, 502, 503, 504):  # busy or down: may work later
                    raise BackendUnreachable(said=[("remote.busy", {"url": self.base_url,
                                                                     "status": response.status_code})])
                raise EngineError(said=[("remote.lists_no_models", {"url": self.base_url,
                                                                    "status": response.status_code})])
            return
        try:
            models = [m for m in response.json().get("data", []) if isinstance(m, dict)]
        except (ValueError, AttributeError):
            models = []
        if not self.model:
            if not models:
                self.client.close()
                raise EngineError(said=[("remote.no_models", {"url": self.base_url})])
            self.model = str(models[0].get("id"))
        self.listed = [str(m.get("id")) for m in models if m.get("id")]
        for m in models:
            if m.get("id") == self.model:
                self.meta = m.get("meta") or {}
        # (workstation serve answers any name with its own; Ollama lists llama3.1 as llama3.1:latest)
        if self.listed and self.model not in self.listed and f"{self.model}:latest" not in self.listed:
            served = ", ".join(self.listed[:5]) + (f" (and {len(self.listed) - 5:,} more)" if len(self.listed) > 5 else "")
            self.load_notes.append(("fit.setting_note", {"what": ("remote.serves_other", {
                "url": self.base_url, "served": served, "model": self.model})}))

    def _key_again(self) -> None:
        """The profile's key read again before a request: a person whose key was revoked ("ask
        whoever runs the server for a new key") puts the new one in the key file and sends again;
        the key read as the profile loaded went on being sent, refused as revoked until the app
        was started again. (A key given to the engine itself stays.)"""
        if self._given_key:
            return
        key = _checked_key(self.profile.remote, key_from_profile(self.profile.remote))
        self.has_key = bool(key)
        if key:
            self.client.headers["Authorization"] = f"Bearer {key}"
        else:
            self.client.headers.pop("Authorization", None)

    def _key_problem(self, response: httpx.Response) -> EngineError:
        remote = self.profile.remote
        env = key_source(remote)
        if not self.has_key:
            if remote.api_key_file:  # the file first, as README says (the variable, where named, also works)
                return EngineError(said=[("remote.needs_key_file", {"url": self.base_url, "file": remote.api_key_file})])
            return EngineError(said=[("remote.needs_key", {"url": self.base_url, "env": env}) if env
                                     else ("remote.needs_key_env", {"url": self.base_url})])
        source = ("remote.key_from", {"env": env}) if env else ""
        return EngineError(said=[key_refusal(self.base_url, response, source)])

    # --- the Engine interface ----------------------------------------------------------------
    def info(self) -> EngineInfo:
        named = self.meta.get("model_name")  # the model itself, where our server says it (``self.model``
        return EngineInfo(  # is the name it is asked by: the server's profile, which read as the model)
            profile=self.profile.key,
            model_name=named if isinstance(named, str) and named else self.model,
            model_path=self.base_url,
            n_ctx=_whole(self.meta.get("n_ctx")) or self.profile.context,
            n_layer=0,
            gpu_layers=0,
            type_k="remote",
            type_v="remote",
            flash_attn=False,
            threads=0,
            load_ms=self.load_ms,
            template_fallback=None,
            speculative="remote",
            parallel=self.profile.parallel,
            n_params=_whole(self.meta.get("n_params")),
            max_prompt_tokens=_whole(self.meta.get("max_prompt_tokens")),
            words_a_token=said_figures(self.meta),
        )

    @property
    def n_ctx(self) -> int:
        return self.info().n_ctx

    def cancel(self) -> None:
        self._cancel.set()
        with self._lock:
            responses = list(self._responses)
        for response in responses:
            try:
                response.close()  # unblocks a read waiting on the socket; the server sees a disconnect
            except Exception:  # noqa: BLE001 - closing from another thread is best effort
                pass

    # --- token counts ----------------------------------------------------------------------
    @property
    def _root(self) -> str:
        """The server's root (llama-server's native endpoints live there, not under /v1)."""
        return self.base_url.removesuffix("/v1")

    def count_prompt(self, messages: list[Message]) -> int:
        """Tokens of the chat prompt: the server's own count when it has ``/apply-template`` and
        ``/tokenize``, else the conservative estimate in the module's docstring. A server out of
        reach now (stopped, restarting, busy) raises ``BackendUnreachable`` and is asked again
        next time: an estimate then cut a document into other parts than the server's count had,
        so a summary its outage stopped did every part again instead of going on from them."""
        messages = with_system_prompt(self.profile, messages)
        if self.exact_counts is not False:
            answer: httpx.Response | None = None
            try:
                with self._stream_when_free({"messages": messages, **self._template_fields()},
                                            f"{self._root}/apply-template") as answer:
                    answer.read()
                if answer.status_code == 200:
                    prompt = answer.json()["prompt"]
                    answer = self.client.post(f"{self._root}/tokenize", json={"content": prompt, "add_special": True})
                    if answer.status_code == 200:
                        self.exact_counts = True
                        return len(answer.json()["tokens"])
            except httpx.HTTPError as err:
                raise BackendUnreachable(said=[("remote.unreachable", {"url": self.base_url, "reason": _reason(err)})]) \
                    from None
            except (ValueError, KeyError, TypeError):
                answer = None
            if answer is not None and answer.status_code in (429, 502, 503, 504):
                raise BackendUnreachable(said=[answered_phrase(self.base_url, answer)])
            self.exact_counts = False
        return estimate_tokens(messages)

    def reset(self) -> None:
        """Nothing to forget locally; the server keeps (or drops) its prefix cache itself."""

    def close(self) -> None:
        self._cancel.set()  # (a turn waiting for a free slot ends, not a raw "client has been closed")
        self.client.close()

    def __enter__(self) -> RemoteEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _payload(
        self, messages: list[Message], sampling: Sampling, constraints: Constraints | None = None,
        tag: str | None = None,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": with_system_prompt(self.profile, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,
            "min_p": sampling.min_p,
            "repeat_penalty": sampling.repeat_penalty,
            "presence_penalty": sampling.presence_penalty,
            "frequency_penalty": sampling.frequency_penalty,
            "max_tokens": sampling.max_tokens,
        }
        payload.update(self._template_fields())
        # no seed is a new one each turn, as the local sampler draws it: left out, the server's
        # profile's seed applied, and a desk PC at temperature 0.8 gave one reply every time
        payload["seed"] = sampling.seed if sampling.seed is not None else random.getrandbits(32)
        # also none: the server's profile's are not this one's; none under a reply format, as the
        # local engine (a stop text cut the JSON a schema asked for: "{ \"" and a failed check)
        formatted = constraints is not None and (constraints.grammar or constraints.json_schema is not None)
        payload["stop"] = [] if formatted else list(sampling.stop)
        if sampling.ignore_eos:
            payload["ignore_eos"] = True
        if constraints is not None:
            payload.update(constraint_fields(constraints))
        if tag and self.own_server:
            payload["conversation_tag"] = tag
        return payload

    def _template_fields(self) -> dict[str, Any]:
        """``thinking: false`` as llama-server, vLLM and ``workstation serve`` take it (sent only
        then: a server that knows no such field is asked nothing new)."""
        return {} if self.profile.thinking else {"chat_template_kwargs": {"enable_thinking": False}}

    def run_many(
        self,
        conversations: Sequence[list[Message]],
        sampling: Sampling | None = None,
        on_finished: Callable[[int, TurnFinished], None] | None = None,
        *,
        tag: str | None = None,
        on_step: Callable[[int, StepEvent], None] | None = None,
    ) -> list[TurnFinished]:
        """One turn per conversation, up to ``profile.parallel`` requests in flight. ``on_step``
        is told a server silent before a turn's first word, or in the middle of it, as the chat
        is (``ServerWaiting``): a summary behind the person's chat request showed nothing."""

        failed = threading.Event()  # one turn failed (the server gone, the key's day over): none sent after it

        def one(i: int) -> TurnFinished:
            if failed.is_set():
                raise EngineError("Not sent: an earlier request failed.")
            final: TurnFinished | None = None
            try:
                held: list[str] = []
                turn = self._turn(conversations[i], sampling or self.profile.sampling, tag=tag,
                                  reading=on_step is not None, held=held)
                for event in self._saying_waits(turn, held) if on_step is not None else turn:
                    if isinstance(event, TurnFinished):
                        final = event
                    elif on_step is not None and not (isinstance(event, PromptRead) and event.whole):
                        on_step(i, event)
            except BaseException:
                failed.set()
                raise
            if final is None:
                raise EngineError("The turn ended without a result.")
            if on_finished is not None:
                on_finished(i, final)
            return final

        with self.turns.turn(), ThreadPoolExecutor(max_workers=max(1, self.profile.parallel)) as pool:
            futures = [pool.submit(one, i) for i in range(len(conversations))]
            try:
                return [f.result() for f in futures]
            except BaseException:  # (the server gone: the parts not sent yet are not sent, each to time out)
                for f in futures:
                    f.cancel()
                raise

    def stream_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *,
        constraints: Constraints | None = None, tag: str | None = None, reading: bool = False,
    ) -> Iterator[TurnEvent]:
        """``tag``: whose conversation it is, told to our own server only (another server keeps
        no cells of ours by conversation). ``reading``: llama-server's ``return_progress`` asked of
        a server whose ``/models`` meta says it takes it (``workstation serve`` since it does;
        an older one refused the field), which then says how far it has read a long prompt."""
        with self.turns.turn():
            held: list[str] = []
            turn = self._turn(messages, watched(messages, sampling or self.profile.sampling), constraints, tag=tag,
                              reading=reading, held=held)
            yield from self._saying_waits(turn, held) if reading else turn

    def _saying_waits(self, turn: Generator[TurnEvent, None, None], held: list[str] | None = None) -> Iterator[TurnEvent]:
        """``turn``'s events, read in a thread of their own so that a server silent before the
        first word (or a part of the prompt read) for ``QUIET_SAID_AFTER_S`` is said, every second (``ServerWaiting``): behind
        the same person's other request (``/usage/today`` says the key has one running and one
        waiting: a key that may run one at a time), or slow to answer. The chat waited 18 s
        behind the person's own summary without a word, and said "reading the conversation…
        26 s" of a frozen server. Esc (``cancel``) ends it within a second, before the first word,
        in a silence after it (the closed response is read on until the server's next word) and
        also after the server said how far it has read the prompt (``PromptRead``, seconds a part
        on a CPU server): a request the server holds unanswered has no response to close, and its
        "(Esc stops)" waited for ``remote.timeout_s``, or for the next part read. A server silent
        in the middle of a reply for ``STALLED_SAID_AFTER_S`` is said too (``stalled``), every
        second until the next word: the reply stood half-written and looked frozen. ``held``: the
        code of the server's answer that holds the request back now (``_stream_when_free``), said
        in ``ServerWaiting.held``."""
        events: queue.Queue[tuple[TurnEvent | None, BaseException | None]] = queue.Queue()
        left = threading.Event()  # the caller stopped reading (a stop string, an error of its own)

        def pump() -> None:
            try:
                for event in turn:
                    if left.is_set():
                        break
                    events.put((event, None))
                events.put((None, None))
            except BaseException as err:  # noqa: BLE001 (raised again in the caller's thread)
                events.put((None, err))
            finally:  # (closed in this thread, which runs it: the stream ends, so does the server's reply)
                turn.close()

        threading.Thread(target=pump, name="remote-turn", daemon=True).start()
        t0 = last = time.monotonic()  # the request sent; the last event from the server
        own: bool | None = None  # asked once, when the silence is first said
        started = False  # the server said something (a part of the prompt read counts): not silent
        worded = False  # the first word came: Esc is the stream's own to end while words come
        text: list[str] = []  # the reply so far, and its thinking (Esc while the server is silent)
        thought: list[str] = []
        try:
            while True:
                try:
                    event, err = events.get(timeout=1.0)
                except queue.Empty:
                    if self._cancel.is_set():  # (the thread ends at its next event)
                        # (also in a reply the server stopped sending: Esc waited for its next word)
                        yield TurnFinished("".join(text), TurnMetrics(load_ms=self.load_ms, predicted_n=len(text),
                                                                      stop_reason="cancelled"),
                                           reasoning="".join(thought).strip())
                        return
                    now = time.monotonic()
                    if worded and now - last >= STALLED_SAID_AFTER_S:
                        yield ServerWaiting(now - last, stalled=True)
                        continue
                    waited = now - t0
                    if started or waited < QUIET_SAID_AFTER_S:
                        continue
                    if own is None:
                        own = self._queued_behind_own(held[0] if held else "")
                    yield ServerWaiting(waited, own, held=held[0] if held else "")
                    continue
                if err is not None:
                    raise err
                if event is None:
                    return
                last = time.monotonic()
                if isinstance(event, TokenDelta):
                    text.append(event.text)
                    thought.append(event.reasoning)
                worded = worded or isinstance(event, TokenDelta | TurnFinished)
                started = started or worded or isinstance(event, PromptRead)  # (reading: not silent)
                yield event
        finally:
            left.set()

    def _queued_behind_own(self, held: str = "") -> bool:
        """Whether the server holds this key's request back behind another of its own
        (``/usage/today``'s ``running`` and ``waiting``, a workstation server's): in its queue,
        or refused (``held`` ``server_busy``: no place in a queue, ``--queue 0``) while this key
        runs as many requests as the server has slots (its ``/models`` meta's ``n_parallel``):
        a person whose own reply held the only slot was told "the server is busy with other
        people's requests". A server that does not answer in a few seconds is not."""
        try:
            response = self.client.get(f"{self._root}/usage/today", timeout=2.0)
            data = response.json() if response.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return False
        if not isinstance(data, dict):
            return False
        running, slots = _whole(data.get("running")), _whole(self.meta.get("n_parallel"))
        return running > 0 and (_whole(data.get("waiting")) > 0 or (held == "server_busy" and running >= slots > 0))

    def forget(self, tag: str) -> int:
        """A deleted conversation's cells on our own server (``/cells/forget``): how many saved
        states went. Another server's cells are not ours to delete: 0."""
        if not self.own_server:
            return 0
        try:
            response = self.client.post(f"{self._root}/cells/forget", json={"tag": tag})
            if response.status_code == 200:
                return int(response.json().get("forgotten") or 0)
        except (httpx.HTTPError, ValueError, TypeError, AttributeError):
            pass
        raise EngineError(said=[("remote.cannot_forget", {"url": self.base_url})])

    def usage_today(self) -> dict[str, Any] | None:
        """What this key used today on a workstation server (``/usage/today``: tokens,
        tokens_per_day, left, resets_at); None from another server. A key the server refuses
        (revoked, unknown) or a server gone raise what the chat would say: F11 said "it is not
        a workstation server" of both."""
        try:
            response = self.client.get(f"{self._root}/usage/today", timeout=min(10.0, self.profile.remote.timeout_s))
        except httpx.HTTPError as err:
            raise BackendUnreachable(said=[("remote.unreachable", {"url": self.base_url, "reason": _reason(err)})]) \
                from None
        if response.status_code in (401, 403):
            raise self._key_problem(response)
        try:
            data = response.json() if response.status_code == 200 else None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def claim_cells(self, tag: str, messages: list[Message]) -> int:  # noqa: ARG002
        return 0

    def _limits(self) -> dict[str, int]:
        """The server's limits a request is fitted to now (its ``/models`` meta, or a 400's
        figures since): ``n_ctx`` and ``max_prompt_tokens``, 0 where not said."""
        return {k: _whole(self.meta.get(k)) for k in LIMITS}

    def _fitted(self, messages: list[Message], sampling: Sampling,
                limits: dict[str, int]) -> tuple[list[Message], int]:
        """The newest messages that fit the server's context, as the local engine fits them
        (``fit_history``), and how many were left out; for a server that says its context per
        request (``workstation serve``'s ``meta.n_ctx``), where a long conversation was refused
        as too long and could go no further. Another server's is its own affair: all are sent.
        The estimate over-counts, so only a conversation it puts near the end is counted.
        ``limits``: the server's (``_limits``), read once for the request and its 400's check."""
        check_sent(messages)
        n_ctx = limits["n_ctx"]
        reserve = answer_reserve(sampling, n_ctx)
        most = limits["max_prompt_tokens"] or n_ctx
        estimate = estimate_tokens(with_system_prompt(self.profile, messages))
        if not n_ctx or (estimate + reserve <= n_ctx and estimate <= most):
            return messages, 0
        return fit_history(messages, self.count_prompt, n_ctx, reserve, most)

    def _new_fits(self, messages: list[Message], left: int) -> bool:
        """Whether a new conversation would fit the ``left`` tokens of the key's day where
        ``messages`` did not: they hold earlier turns, and the instructions with the last message
        alone come to fewer (the server takes a prompt with room for one token of reply). Not
        said where the count cannot be had (the server out of reach now)."""
        asked = [m for m in messages if m.get("role") != "system"]
        if len(asked) < 2:  # already a new conversation
            return False
        try:
            return self.count_prompt([asked[-1]]) < left
        except WorkstationError:
            return False

    def _limits_changed(self, response: httpx.Response, fitted_to: dict[str, int]) -> bool:
        """Whether ``response`` refuses a request as too long (400 ``context_length_exceeded``) by
        limits other than ``fitted_to``, those the request was fitted to (the server restarted
        with a smaller ``--max-prompt-tokens`` or context since its ``/models`` meta was read): the
        meta takes the error's figures, so a conversation is fitted to them, and a summary's part
        too long for them is said in the summary's words (``IN_A_SUMMARY``), not "start a new
        conversation". Not the meta of now: another part sent at the same time (``run_many``) may
        have taken the figures first, and this one, fitted to the old ones, was said too long."""
        if response.status_code != 400 or _error_fields(response)[0] != "context_length_exceeded":
            return False
        error = _error_object(response)
        now = {k: _whole(error.get(k)) for k in LIMITS}
        if not all(now.values()) or now == fitted_to:
            return False
        self.meta.update(now)
        return True

    def _turn(
        self, messages: list[Message], sampling: Sampling, constraints: Constraints | None = None,
        tag: str | None = None, reading: bool = False, held: list[str] | None = None, refit: bool = True,
    ) -> Generator[TurnEvent, None, None]:
        asked, limits = messages, self._limits()
        messages, left_out = self._fitted(messages, sampling, limits)
        payload = self._payload(messages, sampling, constraints, tag)
        if reading and self.meta.get("prompt_progress") is True:  # a server that says it takes it (an older one refused it)
            payload["return_progress"] = True
        if not sampling.stop_on_loop and self.meta.get("loop_watch") is True:  # (sent only to a server that says
            # it takes it: OpenAI's own refuses a field it does not know; workstation serve cut the repeats of a
            # desk PC whose profile says not to)
            payload["stop_on_loop"] = False
        if self._cancel.is_set():  # cancelled before it was sent: nothing to ask the server
            yield TurnFinished("", TurnMetrics(load_ms=self.load_ms, stop_reason="cancelled"))
            return
        t_request = time.perf_counter()
        metrics = TurnMetrics(load_ms=self.load_ms)
        parts: list[str] = []
        thoughts: list[str] = []
        split = ThinkingSplitter()  # for a server that leaves <think> in the content
        n_chunks = 0
        t_first = t_last = 0.0
        finish: str | None = None
        usage: dict[str, Any] | None = None
        timings: dict[str, Any] = {}  # the server's own figures (prompt_ms: its reading, no queue)
        quota = False  # workstation serve said the reply stopped where the key's day ran out
        stopping = False  # workstation serve said it has begun to stop (said once)
        stopping_next = False  # ... in the comment just read: said unless the next part ends the reply
        stop = "eos"
        # a server's reply that goes round in circles is stopped here as the app's own decoding stops
        # one (core/loops.py); workstation serve stops it itself and says how much of it is kept
        watch = loop_watch(sampling) if sampling.stop_on_loop and not sampling.ignore_eos \
            and not (constraints is not None and constraints.active) else None
        looped = False
        try:
            with self._stream_when_free(payload, held=held) as response:
                with self._lock:
                    self._responses.add(response)
                if response.status_code in (401, 403):
                    response.read()
                    raise self._key_problem(response)
                if response.status_code != 200 and self._cancel.is_set():  # Esc while it waited for a slot
                    response.read()
                    stop = "cancelled"
                elif response.status_code != 200:
                    response.read()
                    if refit and self._limits_changed(response, limits):  # fitted again to the server's limits of now
                        yield from self._turn(asked, sampling, constraints, tag, reading, held, refit=False)
                        return
                    # busy, over its quota, or down behind a proxy: the same request may work later
                    later = response.status_code in (429, 502, 503, 504) and \
                        _error_fields(response)[0] != "request_over_day_limit"  # (refused again tomorrow)
                    # waited past timeout_s behind the person's own request: said so, as the waiting
                    # line said it (it ended "busy with other people's requests")
                    own = _error_fields(response)[0] == "server_busy" and self._queued_behind_own("server_busy")
                    wait = _whole_header(response, "Retry-After")
                    if response.status_code == 429 and _error_fields(response)[0] == "insufficient_quota" and wait:
                        self.day_resets_at = time.time() + wait  # (the status line says it: ``again_at``)
                    raise (BackendUnreachable if later else EngineError)(
                        said=[answered_phrase(self.base_url, response, model=self.model, own=own,
                                              new_fits=lambda left: self._new_fits(asked, left))])
                for line in response.iter_lines():
                    if self._cancel.is_set():
                        stop = "cancelled"
                        break
                    if line.startswith(":") and line[1:].strip().startswith(SERVER_STOPPING) and not stopping:
                        # workstation serve has begun to stop: the reply may be cut off (an SSE comment);
                        # said with the next part that does not end the reply (a note that came with the
                        # reply's last part was said of a whole reply: "this reply may be cut off")
                        stopping = stopping_next = True
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        continue
                    if not isinstance(chunk, dict):
                        continue
                    if "error" in chunk:
                        said = stopped_reply(chunk["error"])
                        # the server's own stop cut it off: "try again later" (exit status 75), as a
                        # connection lost part-way; chat exited 1, as for a mistake to fix
                        cut = said[0] == "remote.cut_by_stopping"
                        raise (BackendUnreachable if cut else EngineError)(said=[said])
                    if chunk.get("usage"):
                        usage = chunk["usage"]
                    if isinstance(chunk.get("timings"), dict):  # workstation serve's and llama-server's
                        timings = chunk["timings"]
                    quota = quota or chunk.get("quota_reached") is True
                    if _whole(chunk.get("loop_kept")) and not looped:
                        parts, looped = ["".join(parts)[:chunk["loop_kept"]]], True
                    if _whole(chunk.get("quota_resets_in")):
                        self.day_resets_at = time.time() + chunk["quota_resets_in"]
                    read = _prompt_read(chunk.get("prompt_progress")) if reading and not n_chunks else None
                    if read is not None:
                        yield read
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        # a reasoning model's thinking: as its own field (llama-server, vLLM,
                        # DeepSeek: reasoning_content; Ollama, OpenRouter: reasoning) or inline
                        thought = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
                        inline, text = split.push(_text(delta.get("content")))
                        thought += inline
                        if text or thought:
                            now = time.perf_counter()
                            if not n_chunks:
                                t_first = now
                                metrics.ttft_ms = (now - t_request) * 1000
                            t_last = now
                            n_chunks += 1
                            if thought:
                                thoughts.append(thought)
                                metrics.reasoning_n += 1
                                metrics.reasoning_ms = (now - t_first) * 1000
                            parts.append(text)
                            yield TokenDelta(text, reasoning=thought)
                            if watch is not None and text and (cut := watch.push(text)) is not None:
                                parts, looped = [watch.text[:cut].rstrip()], True
                                break
                        if choice.get("finish_reason"):
                            finish = choice["finish_reason"]
                    if looped:  # (the connection closed: the server stops writing it)
                        break
                    if stopping_next and finish is None:  # the reply goes on: it may yet be cut off
                        yield ServerWaiting(0.0, held=SERVER_STOPPING)
                    stopping_next = False
        except httpx.ReadTimeout:
            if not self._cancel.is_set():  # it answers, but not this request in time: the request's fault
                raise EngineError(said=[("remote.silent", {"url": self.base_url,
                                                           "seconds": f"{self.profile.remote.timeout_s:g}"})]) from None
            stop = "cancelled"
        except (httpx.HTTPError, httpx.StreamError) as err:
            if not self._cancel.is_set():
                # never connected (the server stopped since the last turn): not "Lost the connection"
                said = "remote.unreachable" if isinstance(err, httpx.ConnectError | httpx.ConnectTimeout) else "remote.lost"
                raise BackendUnreachable(said=[(said, {"url": self.base_url,
                                                       "reason": _reason(err, mid_reply=True)})]) from None
            stop = "cancelled"
        finally:
            with self._lock:
                self._responses = {r for r in self._responses if not r.is_closed}
        thought, text = split.flush()
        if looped:
            text = ""
        if thought or text:
            thoughts.append(thought)
            parts.append(text)
            yield TokenDelta(text, reasoning=thought)
        if self._cancel.is_set():
            stop = "cancelled"
        elif looped:
            stop = "loop"
        elif finish:
            stop = "quota" if quota and finish == "length" else FINISH_TO_STOP.get(finish, "eos")
        now = time.perf_counter()
        n = n_chunks
        if usage:
            n = int(usage.get("completion_tokens") or n_chunks)
            prompt = int(usage.get("prompt_tokens") or 0)
            cached = int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
            details = usage.get("completion_tokens_details") or {}
            if isinstance(details, dict) and details.get("reasoning_tokens"):
                metrics.reasoning_n = int(details["reasoning_tokens"])
            metrics.cache_n = cached
            metrics.prompt_n = max(0, prompt - cached)
        elif isinstance(timings.get("prompt_n"), int):  # llama-server's timings, with no usage asked or sent
            metrics.cache_n = timings["cache_n"] if isinstance(timings.get("cache_n"), int) else 0
            metrics.prompt_n = timings["prompt_n"]
        metrics.predicted_n = n
        for drafted in ("draft_n", "draft_n_accepted"):  # the server's speculative decoding (its timings)
            if isinstance(timings.get(drafted), int):
                setattr(metrics, drafted, timings[drafted])
        server_predicted_ms = timings.get("predicted_ms")
        if isinstance(server_predicted_ms, int | float) and server_predicted_ms > 0 and timings.get("predicted_n") == n:
            # the server's own writing time: words that reach this PC together (the app busy drawing,
            # a slow network) are read here in the same millisecond ("7,650.9 tok/s" of a short reply)
            metrics.predicted_ms = float(server_predicted_ms)
        elif n > 1 and t_last > t_first:
            metrics.predicted_ms = (t_last - t_first) * 1000 * n / (n - 1)
        server_prompt_ms = timings.get("prompt_ms")
        if isinstance(server_prompt_ms, int | float) and server_prompt_ms > 0 and metrics.prompt_n:
            # the server's own reading time: the time until the first token here holds the wait for
            # a slot too ("prompt 12 at 5 tok/s" behind a person's two other requests)
            metrics.prompt_ms = float(server_prompt_ms)
            if not metrics.ttft_ms:
                metrics.ttft_ms = (now - t_request) * 1000
        elif metrics.ttft_ms:
            metrics.prompt_ms = metrics.ttft_ms  # as seen from here: queue + prefill + first token
        else:
            metrics.ttft_ms = (now - t_request) * 1000
        metrics.total_ms = (now - t_request) * 1000
        metrics.stop_reason = stop
        metrics.left_out_n = left_out
        metrics.new_n = -1  # the new message's tokens: not counted (no server says them apart from the prompt's)
        metrics.finish_rates()
        yield TurnFinished("".join(parts), metrics, reasoning="".join(thoughts).strip())

    @contextlib.contextmanager
    def _stream_when_free(self, payload: dict[str, Any], path: str = "/chat/completions",
                          held: list[str] | None = None) -> Iterator[httpx.Response]:
        """The request's streamed response (a POST to ``path``), once the server has a slot for it: a server with
        every slot and its queue taken (429 ``server_busy``, ``Retry-After``) is asked again
        after the time it names, for up to ``remote.timeout_s``, as Ollama's queue holds a
        request (the desk PC gave up at once: "busy with other people's requests"). The same for a
        server loading its model (503 ``loading``, ``Retry-After``: restarted by its admin), which
        had held the request until loaded. Esc (cancel) ends the wait; the last answer is then
        the response. ``held``: while it waits, the server's code for why (``server_busy``,
        ``loading``), for the chat to say it (it said "the server is slow to answer" of a server
        that had answered at once that every slot was taken)."""
        self._key_again()
        until = time.monotonic() + self.profile.remote.timeout_s
        while True:
            with self.client.stream("POST", path, json=payload) as response:
                wait = _whole_header(response, "Retry-After") if response.status_code in (429, 503) else None
                if wait is not None:
                    response.read()
                busy = wait is not None and _error_fields(response)[0] == ("server_busy" if response.status_code == 429
                                                                          else "loading")
                pause = max(1, wait or 0)  # (a "Retry-After: 0" from another server: asked again each second)
                if held is not None:
                    held[:] = [_error_fields(response)[0] or ""] if busy else []
                if not busy or time.monotonic() + pause > until or self._cancel.wait(pause):
                    if held is not None:
                        held.clear()
                    yield response
                    return

    def run_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *, constraints: Constraints | None = None
    ) -> TurnFinished:
        return finished_turn(self.stream_chat(messages, sampling, constraints=constraints))


def _prompt_read(progress: Any) -> PromptRead | None:
    """llama-server's ``prompt_progress`` (``total``, ``cache``, ``processed``, ``time_ms``), as
    ``workstation serve`` sends it too; None where it is not that."""
    if not isinstance(progress, dict):
        return None
    try:
        total, cached, read = (int(progress.get(k) or 0) for k in ("total", "cache", "processed"))
        ms = float(progress.get("time_ms") or 0.0)
    except (TypeError, ValueError):
        return None
    return PromptRead(read, total, cached, ms) if total > 0 else None


@dataclass
class ServerCheck:
    """Whether a desk PC's profile can work now: what its server said when asked once."""

    reachable: bool = False  # something answered at the address
    model: str = ""  # the model the profile's turns would ask for
    # the model itself, as the server names it (our server: its file's model, where ``model`` is its
    # profile's id, "office-cpu"); F4 names it so
    model_name: str = ""
    listed: list[str] = field(default_factory=list)  # what the server's /models names
    # our server's profile as F3 lists it there (``profile_said``), by language
    profile_said: dict[str, str] = field(default_factory=dict)
    # the context each conversation is read in there, in tokens (our server's ``/models`` meta
    # ``n_ctx``); 0 where not said (an older server, another kind): F3 says it in words then
    n_ctx: int = 0
    # its model's words a token by language, where our server says them (``language_words.said_figures``)
    words_a_token: dict[str, float] = field(default_factory=dict)
    error: WorkstationError | None = None  # why not (a ProfileError: the server was not asked)

    @property
    def not_served(self) -> bool:
        """The server lists its models, and the profile's is not among them."""
        return self.error is None and bool(self.listed) and self.model not in self.listed

    @property
    def ok(self) -> bool:
        return self.error is None and not self.not_served

    def served_said(self, lang: str) -> str:
        """What the server serves, as a person knows it: our server's profile as F3 lists it there
        ("Office CPU — SmolLM2 135M", in ``lang``; `profiles check` said "serving office-cpu", the
        file's name), else the model as the server names it; "" where it named none."""
        return self.profile_said.get(lang) or self.profile_said.get("en") or self.model_name or self.model


def check_server(profile: Profile) -> ServerCheck:
    """Ask the profile's server once, as a chat would on loading it (`profiles check`, F3)."""
    try:
        engine = RemoteEngine(profile)
    except (BackendUnreachable, ProfileError) as err:  # down or not there; or not asked (a mangled key)
        return ServerCheck(reachable=bool(err.said) and err.said[0][0] in ("remote.loading", "remote.stopping"),
                           error=err)
    except WorkstationError as err:  # it answered, and said no (a key refused, no models)
        return ServerCheck(reachable=True, error=err)
    engine.close()
    if engine.loading:  # it said "answers now" of a server loading its model (503 to every request)
        return ServerCheck(reachable=True, model=engine.model, error=BackendUnreachable(said=[engine.loading]))
    said = engine.meta.get("profile_said")
    return ServerCheck(reachable=True, model=engine.model, model_name=engine.info().model_name, listed=engine.listed,
                       n_ctx=_whole(engine.meta.get("n_ctx")),
                       words_a_token=said_figures(engine.meta),
                       profile_said={str(k): v for k, v in said.items() if isinstance(v, str) and v}
                       if isinstance(said, dict) else {})


def client_profile(profile: Profile, base_url: str) -> Profile:
    """The profile of a client of a server that serves ``profile`` (the TUI's Ctrl+G): the same
    sampling, system prompt, context and slots, over HTTP."""
    data = profile.to_dict()
    return profile_from_dict(
        {
            "name": profile.name,
            "backend": "openai",
            "remote": {"base_url": base_url},
            "context": profile.context,
            "parallel": profile.parallel,
            "sampling": data["sampling"],
            "system_prompt": profile.system_prompt,
            "thinking": profile.thinking,
        },
        f"<the API server of {profile.key}>",
    )


def estimate_tokens(messages: list[Message]) -> int:
    """A conservative token count for servers that cannot count for us (see the docstring)."""
    return sum(
        math.ceil(len(m.get("content", "").encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN)
        + ESTIMATE_TOKENS_PER_MESSAGE
        for m in messages
    )


def _causes(err: BaseException) -> list[BaseException]:
    """``err`` and the errors it was raised from or during (httpx wraps httpcore's, which wraps
    the socket's or the TLS layer's)."""
    seen: list[BaseException] = []
    e: BaseException | None = err
    while e is not None and e not in seen:
        seen.append(e)
        e = e.__cause__ or e.__context__
    return seen


def _has_request(answer: httpx.HTTPError | httpx.Response) -> bool:
    try:
        answer.request  # noqa: B018 - raises RuntimeError when it has none
    except RuntimeError:
        return False
    return True


def _text(value: Any) -> str:
    """A chunk's text field: the text, or nothing for a missing or odd value."""
    return value if isinstance(value, str) else ""


def _reason(err: Exception, mid_reply: bool = False) -> Phrase | str:
    if isinstance(err, httpx.ConnectError):
        causes = _causes(err)
        if any(isinstance(e, ssl.SSLCertVerificationError) for e in causes):
            return ("remote.bad_certificate", {})
        if any(isinstance(e, ssl.SSLError) for e in causes) or "[SSL" in str(err):
            return ("remote.not_https", {})
        lookup = next((e for e in causes if isinstance(e, socket.gaierror)), None)
        host = err.request.url.host if _has_request(err) else "?"
        if (lookup is not None and lookup.errno == socket.EAI_NONAME) or "Name or service not known" in str(err):
            return ("remote.no_such_host", {"host": host})
        if lookup is not None or "Temporary failure in name resolution" in str(err):  # offline, or no DNS
            return ("remote.no_lookup", {"host": host})
        return ("remote.refused", {})
    if isinstance(err, httpx.TimeoutException):
        return ("remote.timed_out", {})
    if mid_reply and isinstance(err, httpx.RemoteProtocolError):  # "peer closed connection without sending ..."
        return ("remote.closed", {})
    text = str(err).strip().rstrip(".")
    return text or type(err).__name__
