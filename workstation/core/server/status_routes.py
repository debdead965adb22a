"""The routes that tell how the server is, and what it serves: its health, its models, a key's
usage today and the Prometheus metrics; none of them generates."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from workstation.core.language_words import SAID, served_figures
from workstation.core.locales import locale_languages
from workstation.core.profiles import profile_said
from workstation.core.server.accounts import NO_OPERATOR_KEY
from workstation.core.server.prometheus import prometheus_text
from workstation.core.server.protocol import ApiError

if TYPE_CHECKING:
    from workstation.core.server.app import OpenAIServer

STOPPING_HEADERS = {"Retry-After": "5", "Connection": "close"}  # a request refused while the server stops
MODEL_FILE_CHANGED = "the model file changed on disk since it was loaded: restart the server"  # (/health: no path)
log = logging.getLogger("uvicorn.error")


class StatusRoutes:
    """``/health``, ``/v1/models`` (and ``/v1/models/{id}``), ``/usage/today`` and ``/metrics``.
    A part of ``OpenAIServer``: ``scheduler``, ``options``, ``accounts``, ``guard``, ``bodies``
    and whether it is ``stopping`` are the server's."""

    async def health(self: OpenAIServer, request: Request) -> Response:
        """llama-server's shape; ``problems``: what the server cannot write now (the usage file,
        the audit trail on a full disk), which it said once in its log and "ok" hid. While it
        stops, 503 ``"stopping"``: it said "ok" while refusing every request (503), so a load
        balancer went on sending it people's requests ("loading", 503, comes before the model
        is loaded: ``answering_while_loading``). A model file changed on disk since it was loaded
        (every request refused, 503, until a restart): 503 ``"error"``, where it said "ok"."""
        s = self.scheduler
        changed = await run_in_threadpool(s.model_file_changed)  # (a stat: a disk may be slow)
        body: dict[str, Any] = {
            "status": "stopping" if self.stopping else "error" if changed else "ok",
            "slots_idle": s.n_parallel - s.requests_processing,
            "slots_processing": s.requests_processing,
            "requests_deferred": s.requests_deferred,
        }
        # what, not the error's words (they may name the data folder's path: /health needs no key)
        problems = [f"cannot write {what}" for what in self.accounts.write_problems.copy()]  # (the writer
        if changed:  # thread changes it; a copy is atomic)
            problems.insert(0, MODEL_FILE_CHANGED)
        if problems:
            body["problems"] = problems
        if body["status"] != self._health_said:  # (its 503s are not each a line: a poll a second filled the journal)
            self._health_said = body["status"]
            log.info(f"workstation: /health now answers {503 if self.stopping or changed else 200} \"{body['status']}\".")
        return JSONResponse(body, status_code=503 if self.stopping or changed else 200,
                            headers=dict(STOPPING_HEADERS) if self.stopping else None)

    async def models(self: OpenAIServer, request: Request) -> Response:
        """Every id this server answers to (``/v1/models``), or one of them
        (``/v1/models/{id}``: the openai client's ``models.retrieve``, any name ``/api/chat``
        takes; 404 for an id not served)."""
        try:
            self._auth(request)
            self._refuse_while_stopping()
        except ApiError as err:
            return err.response()
        s = self.scheduler
        if self.words_said is None:  # (its vocabulary read once a server, in a thread: not on the event loop)
            self.words_said = await run_in_threadpool(served_figures, s.model.path)
        meta = {  # never the model's file path: it tells a caller about the machine
            "model_name": s.model_name,
            # its profile as F3 lists it, in each language (a desk PC said "serving office-cpu", the file's name)
            # (whole: `profiles check` and F3 say it on lines of their own; it said "Office server (OpenAI-compa…")
            "profile_said": {lang: profile_said(s.profile, lang, None) for lang in locale_languages()},
            "n_ctx": s.slot_ctx,
            "max_prompt_tokens": self._prompt_limit(),  # (a desk PC fits a conversation to it)
            "n_parallel": s.n_parallel,
            "n_vocab": s.model.n_vocab,
            "n_params": s.model.n_params,  # (llama-server's too): a desk PC's summary says a small model is one
            "prompt_progress": True,  # return_progress is taken (a server before it refused the field: 400)
            "loop_watch": True,  # stop_on_loop is taken (a desk PC's `stop_on_loop: false` was never sent)
        }
        if self.words_said:  # its model's words a token in each language (a desk PC said the language's, having
            meta[SAID] = self.words_said  # no file to measure: "about 1,600 Turkish words" where here it said 1,100)
        names = self.ollama.names()
        listed = [  # each alias is a model id a client can pick (llama-server lists them in "aliases")
            {"id": name, "object": "model", "created": self.created, "owned_by": "workstation",
             "aliases": names, "meta": meta}
            for name in names
        ]
        asked = request.path_params.get("model")
        if asked is None:
            return JSONResponse({"object": "list", "data": listed})
        served = self.ollama.served_name(asked)  # (as /api/chat takes it: "office:latest" too, in any case)
        for model in listed:
            if model["id"] == served:
                return JSONResponse(model)
        return ApiError(404, f"This server serves no model '{asked}'; it serves {', '.join(names)}.",
                        param="model", code="model_not_found").response()

    async def usage_today(self: OpenAIServer, request: Request) -> Response:
        """Ours: what the caller's key used today of its daily quota (``tokens``,
        ``tokens_per_day``, ``left``, ``resets_at``), and its requests ``running`` and ``waiting``
        for a slot now: a desk PC's Usage screen shows it. The
        server's shared key gets every key's (``keys: [...]``, each with its ``running`` and ``waiting``)."""
        try:
            caller = self._auth(request)
        except ApiError as err:
            return err.response()
        return JSONResponse(await run_in_threadpool(self.accounts.today, caller, self.scheduler.owner_requests))

    async def metrics(self: OpenAIServer, request: Request) -> Response:
        try:
            caller = self._auth(request)
        except ApiError as err:
            return err.response()
        rows = [
            ("http_requests_in_flight", "gauge", "HTTP requests being handled (/health aside).", self.guard.in_flight),
            ("body_bytes_in_flight", "gauge", "Request body bytes being read or parsed.", self.bodies.used),
        ]
        per_key = caller.key is None
        # a person's key on a server without an operator's key: a comment (Prometheus reads past it)
        # says why the per-key lines are not there and how the operator gets them
        why = "" if per_key or self.accounts.shared_key else (
            f"# The per-key counters (workstation:key_*) are the operator's: {NO_OPERATOR_KEY}.\n")
        return PlainTextResponse(
            # what each person used: for the operator's key (or an open server), not for a person's
            prometheus_text(self.scheduler, rows) + why + self.accounts.metrics.text(per_key=per_key),
            media_type="text/plain; version=0.0.4",
        )
