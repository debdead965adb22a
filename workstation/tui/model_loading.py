"""The model: the profile loaded at the start, F3's switch, serving the office (Ctrl+G), the load's
bar, and the engine lost and loaded again."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import on, work

from workstation.core.catalog import params_text
from workstation.core.engine_api import open_engine
from workstation.core.engine_process import EngineStopped
from workstation.core.errors import BackendUnreachable, WorkstationError
from workstation.core.load_notes import load_notes, unsaid_notes
from workstation.core.memory_plan import FreedMemory
from workstation.core.phrases import say
from workstation.core.profile_lookup import load_profile
from workstation.core.profiles import Profile, under_file_of
from workstation.core.summarize import small_model
from workstation.tui import integrations
from workstation.tui.app_part import AppPart
from workstation.tui.messages import EngineExited, EngineFailed, LoadProgress, ProfileLoaded
from workstation.tui.screens.profile_menu import ProfileMenu
from workstation.tui.screens.summarize import SummarizeScreen
from workstation.tui.toasts import LOAD_NOTICE
from workstation.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


LOAD_BAR_EVERY_S = 0.1  # a model load's bar moves at most this often


def _preflight(profile: Profile, freed: FreedMemory | None) -> None:
    """Refuse a profile whose model file is missing or damaged, or that does not fit even in
    the memory the running engine frees (``freed``), before that engine is closed (cheap: reads
    the file's header, loads nothing). A profile too big closed the running model, was refused
    once it had gone, and the running one was loaded again (a minute, for a large model)."""
    if profile.backend != "llama":
        return
    from workstation.core.catalog import resolve_model_path
    from workstation.core.model_info import check_gguf
    from workstation.core.profile_plan import gpu_layers_for_load

    check_gguf(resolve_model_path(profile.model))
    gpu_layers_for_load(profile, profile.context * profile.parallel, freed=freed)  # (the load's own check)


def _small_for_language(profile: Profile, small: tuple[str, int]) -> tuple[str, dict[str, Any]]:
    """What a start in a language other than English says of ``small``, the model too small for
    it: a desk PC's is the office server's, which F4 (this PC's models) cannot change."""
    key = "fit.small_for_language_server" if profile.backend == "openai" else "fit.small_for_language"
    return key, {"name": small[0], "n": params_text(small[1])}


def _close_quietly(engine: Any) -> None:
    """Close an engine that is going away anyway (a failure to close changes nothing)."""
    if engine is None:
        return
    try:
        engine.close()
    except Exception:  # noqa: BLE001
        pass


LAST_PROFILE = "profile"  # the store's key for the profile loaded last (started without -p: that one)


class ModelLoading(AppPart):
    """Loading, switching and serving the model, and its engine lost."""

    def _start_with_last_profile(self: WorkstationApp, default_problem: str | None) -> None:
        """Started without -p: the profile last loaded, as LM Studio and Ollama's app start with
        the model used last (F3's choice was forgotten at each start, the default's model loaded
        again). One that no longer loads (its file gone or changed) leaves the default."""
        last = self.store.recalled(LAST_PROFILE)
        if not last or (self.profile is not None and last in (self.profile.ref, self.profile.key)):
            return
        try:
            self.profile = load_profile(last)
        except WorkstationError:
            return
        self.started_profile = self.profile
        if default_problem is not None and self.startup_problem == default_problem:
            self.startup_problem = self._settings_problem()  # (the default's problem is not this start's)

    def engine_limits_now(self: WorkstationApp) -> None:
        """The loaded engine's context and prompt limit of now in ``engine_info``, read once as it
        loaded: a desk PC's request refused by a server restarted with smaller limits is fitted to
        its new ones (``RemoteEngine._limits_changed``), and the room left under the message box was
        still the old context's until the profile was loaded again."""
        engine, info = self.engine, self.engine_info
        if engine is None or info is None or self.loading is not None:
            return
        now = engine.info()
        if (now.n_ctx, now.max_prompt_tokens) != (info.n_ctx, info.max_prompt_tokens):
            self.engine_info = dataclasses.replace(info, n_ctx=now.n_ctx, max_prompt_tokens=now.max_prompt_tokens)

    @work(thread=True, exit_on_error=False, group="small-model-loaded")
    def _know_small_model(self: WorkstationApp, profile: Profile, engine: Any) -> None:
        """Whether the model just loaded is too small to trust with facts (its header is read: a
        thread's work), for the empty chat's welcome."""
        small = small_model(profile, engine)

        def known() -> None:
            if self.profile is profile:  # (not another loaded meanwhile)
                self.small_model = small
                self.chat_screen.show_welcome()
        self.call_from_thread(known)

    @work(thread=True, exit_on_error=False, group="small-model")
    def _warn_small_for_language(self: WorkstationApp, profile: Profile, engine: Any) -> None:
        """After F9 to another language than English, what a start in it says of a model too
        small for it (the header is read: a thread's work)."""
        small = small_model(profile, engine)
        if small is not None:
            said = say([_small_for_language(profile, small)], self.texts.get)
            self.call_from_thread(self.notify, said, severity="warning")

    def server_to_try_again(self: WorkstationApp) -> bool:
        """Whether no model is ready because a desk PC's office server was not reached when its
        profile loaded: Enter on a message, and F6's Ctrl+R, then connect again."""
        return self.engine is None and self.loading is None and self.load_failed and self.profile is not None \
            and self.profile.backend == "openai"

    def summarize_when_connected(self: WorkstationApp, start_over: bool) -> None:
        """F6's Ctrl+R with the office server not reached at the start: connect again, and the
        summary starts once it answers (it said "press Enter on a message to try again", from F6,
        though the server was back)."""
        assert self.profile is not None
        self.notify(self.texts("summarize.retrying_server", url=self.profile.remote.base_url), severity="warning")
        self._summary_when_connected = start_over
        self._begin_load(self.profile)

    @on(EngineExited)
    def _engine_exited(self: WorkstationApp, event: EngineExited) -> None:
        """The model's process ended while nothing was asked of it (a reply going on fails, and
        ``_failed`` takes it from there)."""
        if not self.generating:
            self._engine_lost(event.engine, event.error)

    def _engine_lost(self: WorkstationApp, engine: Any, err: WorkstationError) -> None:
        """``engine`` cannot go on: its process stopped (``EngineStopped``), or its model file
        changed on disk. Said in a sentence, and the profile loaded again; a process that stops
        a second time before a reply has come is left stopped, with what to do (a model that
        does not fit the memory would be killed again and again). Before, the app found a
        process killed while idle only when a message was sent, which then went unanswered."""
        if engine is None or engine is not self.engine or self.profile is None:
            return  # (said already: the turn's failure and the watch can both tell)
        self.engine = None
        how = err.how if isinstance(err, EngineStopped) else None
        self._engine_stops += 1  # (a model file that keeps changing, a download still writing it, counts too)
        if self._engine_stops > 1:
            self.engine_problem = self.texts("chat.engine_stopped_again", how=say([how], self.texts.get),
                                             profiles=self.key_for("profile.menu")) if how is not None else \
                f"{self.texts.error(err)} {self.texts('chat.load_again_with', profiles=self.key_for('profile.menu'))}"
            self._send_when_connected = None  # (the message stays in the box)
            _close_quietly(engine)
            self.notify(self.engine_problem, title=self.texts("error.title"), severity="error", timeout=30)
            self.update_status()
            return
        said = self.texts.error(err) if how is None else self.texts("chat.engine_stopped",
                                                                       how=say([how], self.texts.get))
        self.notify(said, title=self.texts("error.title"), severity="error", timeout=15)
        self._reloading = True
        self._begin_load(self.profile, old_engine=engine)

    # --- profiles -------------------------------------------------------------------------
    def action_profiles(self: WorkstationApp) -> None:
        def chosen(profile: Profile | None) -> None:
            if profile is not None:
                self.switch_profile(profile)

        self._back_to_chat()  # (in place of F4 or F5, as they replace each other)
        # (on the profile that holds the attached document whole, where its line names one)
        self.push_screen(ProfileMenu(self.profile, self.fit_check, also=self.started_profile,
                                     chosen=self.document_holder()), chosen)

    # --- the API server alongside the chat ----------------------------------------------------
    def action_serve(self: WorkstationApp) -> None:
        """Start or stop the OpenAI-compatible API on 127.0.0.1 for the current profile. While
        it runs the model is loaded once, in the server, and the chat is one of its clients."""
        t = self.texts
        if self.generating or self.loading is not None:
            self.notify(self.busy_text() if self.generating else t("chat.loading"), severity="warning")
            return
        profile = self.profile
        if profile is None or profile.backend != "llama":
            self.notify(t("serve.local_only"), severity="warning")
            return
        old_engine, self.engine, self.engine_info = self.engine, None, None
        old_api, self.api = self.api, None
        self.loading = profile
        self.load_fraction = 0.0
        self.update_status()
        self._serve(profile, old_engine, old_api)

    def _load_bar(self: WorkstationApp, profile: Profile) -> Callable[[float], None]:
        """What a load of ``profile`` says its progress with (from its thread): the bar moves at
        most ten times a second, its end always shown. Each share redrew the status bar, which
        took 4 ms of the app's CPU: a load's every percent took half a second from the load."""
        said_at = [-LOAD_BAR_EVERY_S]

        def said(fraction: float) -> None:
            now = time.monotonic()
            if fraction >= 1.0 or now - said_at[0] >= LOAD_BAR_EVERY_S:
                said_at[0] = now
                self.post_message(LoadProgress(profile, fraction))
        return said

    def _open_engine(self: WorkstationApp, profile: Profile, progress: Callable[[float], None]) -> Any:
        """``open_engine`` for the chat: a profile whose engine crashed loading onto a GPU this
        session goes to the CPU at once (each load tried the GPU again: a crash, a second load)."""
        engine = open_engine(profile, progress=progress, keep_state=True, cpu_only=profile.ref in self._on_cpu)
        if ("engine.gpu_crashed", {}) in getattr(engine, "load_notes", []):
            self._on_cpu.add(profile.ref)
        return engine

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def _serve(self: WorkstationApp, profile: Profile, old_engine: Any, old_api: Any) -> None:
        _close_quietly(old_engine)  # free the memory first: the server loads the model again
        reason = ""
        if old_api is not None:
            old_api.stop()
        else:
            try:
                api, engine = integrations.start_api_server(profile, self.api_port)
            except Exception as err:  # noqa: BLE001 - a sentence, and the chat comes back
                reason = self.texts.error(err, foreign=True)
            else:
                self.post_message(ProfileLoaded(engine, profile, api=api))
                return
        try:
            engine = self._open_engine(profile, self._load_bar(profile))
        except Exception as err:  # noqa: BLE001
            self.post_message(EngineFailed(f"{reason} {self.texts.error(err)}".strip(), during="load"))
            return
        if reason:
            self.post_message(ProfileLoaded(engine, profile, restored=True, reason=reason, serve_failed=True))
        else:
            self.post_message(ProfileLoaded(engine, profile, serve_stopped=old_api is not None))

    def switch_profile(self: WorkstationApp, profile: Profile) -> None:
        """Close the running engine, start ``profile``'s; on failure the old one comes back."""
        if self.generating:
            self.notify(self.busy_text(), severity="warning")
            return
        if self.loading is not None:
            self.notify(self.texts("chat.loading"), severity="warning")
            return
        old_engine, old_profile = self.engine, self.profile
        self.engine = None
        self.engine_info = None
        self.profile = profile
        self._engine_stops = 0  # (chosen again after it stopped twice: it may be loaded again once more)
        self._chosen_profile = True  # its load ends this session's Ctrl+E settings (not Ctrl+G's)
        self._begin_load(profile, old_engine, old_profile)

    def _begin_load(
        self, profile: Profile, old_engine: Any = None, old_profile: Profile | None = None
    ) -> None:
        self.loading = profile
        self.load_fraction = 0.0
        self.chat_screen.set_load_progress(0.0)
        self.update_status()
        old_api, self.api = self.api, None
        self._load(profile, old_engine, old_profile, old_api)

    @work(thread=True, exclusive=True, exit_on_error=False, group="load")
    def _load(
        self, profile: Profile, old_engine: Any, old_profile: Profile | None, old_api: Any = None
    ) -> None:
        if old_engine is not None and old_profile is not None:
            try:
                _preflight(profile, integrations.memory_freed_by_switch(old_profile, old_engine))
            except WorkstationError as err:  # the running engine was never touched
                self.post_message(
                    ProfileLoaded(old_engine, old_profile, restored=True, reason=self.texts.error(err), api=old_api)
                )
                return
        _close_quietly(old_engine)
        if old_api is not None:  # switching profile ends serving the old one
            old_api.stop()

        notes = load_notes(profile)
        try:
            engine = self._open_engine(profile, self._load_bar(profile))
        except Exception as err:  # noqa: BLE001 - WorkstationError or a spawn failure
            reason = self.texts.error(err, foreign=True)
            if old_profile is not None and old_engine is not None:
                try:
                    engine = self._open_engine(old_profile, self._load_bar(old_profile))
                except Exception as err2:  # noqa: BLE001
                    # (the same profile chosen again fails as it did: its sentence once, not twice)
                    if (again := self.texts.error(err2, foreign=True)) != reason:
                        reason = f"{reason} {again}"
                else:
                    self.post_message(ProfileLoaded(engine, old_profile, restored=True, reason=reason,
                                                    serve_stopped=old_api is not None))
                    return
            self.post_message(EngineFailed(reason, during="load", unreachable=isinstance(err, BackendUnreachable)))
            return
        if self.texts.lang != "en" and (small := small_model(profile, engine)) is not None:
            # (the default model answered a Turkish question in made-up words; F6 said so of documents)
            notes = [*notes, _small_for_language(profile, small)]
        # (the API served from the old profile stopped with it: said)
        self.post_message(ProfileLoaded(engine, profile, notes=notes, switch_stopped_api=old_profile
                                        if old_api is not None else None))

    @on(LoadProgress)
    def _load_progress(self: WorkstationApp, event: LoadProgress) -> None:
        self.load_fraction = event.fraction
        self.chat_screen.set_load_progress(event.fraction)
        self.update_status()

    @on(ProfileLoaded)
    def _loaded(self: WorkstationApp, event: ProfileLoaded) -> None:
        if not self.is_running:
            event.engine.close()
            return
        self.engine = event.engine
        self._reloading, self.engine_problem = False, None
        watch = getattr(event.engine, "watch", None)  # (a process of its own: its end is noticed at once)
        if callable(watch):
            engine = event.engine
            watch(lambda error: self.post_message(EngineExited(engine, error)))
        chosen, self._chosen_profile = self._chosen_profile and not event.restored, False
        if chosen:  # (each conversation's next reply is its first after the switch)
            self._switched_at, self._answered_since_switch = time.time(), set()
        for tag in self._forget_after_load:  # the old engine has saved what it held by now
            self._forget_cells(self.engine, tag)
        self._forget_after_load.clear()
        loaded = event.profile
        if not event.restored and self.loading is loaded and self.profile is not None \
                and self.profile.source != loaded.source:
            # saved as the user's own copy in F3's E as it loaded, or put back (load_settings._saved):
            # that file is the one in use (F3 listed the file it left too, marked in use)
            loaded = under_file_of(loaded, self.profile)
        self.profile = loaded
        if chosen and self.session_sampling is not None:  # the conversation's own, on the new profile's
            self.notify(self.texts("sampling.kept", changes=self._sampling_said(self.session_sampling)), timeout=8)
        ref = loaded.ref
        with contextlib.suppress(WorkstationError):  # the next start without -p loads it (a full disk: not)
            self.store.remember(LAST_PROFILE, ref)
        self.unreachable = self.load_failed = False
        self.not_answering = ""
        self.api = event.api
        self.engine_info = event.engine.info()
        self.loading = None
        self.chat_screen.set_load_progress(None)
        self._know_small_model(loaded, event.engine)
        self._document_tokens.clear()  # counted by another model's tokens, against another context
        self._holders.clear()  # (said against the profile it was too long for)
        if self.pending_document is not None:  # attached before a model was there (a draft restored at the start):
            self._attach_document(self.pending_document)  # measured now, not first said too long after Enter
        # (not written on the open conversation: its next reply does that, in send; a load with no
        # reply after it made a conversation say it "was with" a profile that never answered in it)
        if event.restored:
            self.notify(
                self.texts("serve.failed" if event.serve_failed else "profiles.failed",
                           reason=event.reason, name=event.profile.key),
                title=self.texts("error.title"), severity="error", timeout=15, kind=LOAD_NOTICE,
            )
            if event.serve_stopped:  # (the switch stopped the API before the new profile failed)
                self.notify(self.texts("serve.stopped", name=loaded.title(self.texts.lang)))  # (beside the failure)
        elif event.api is not None:
            started = ("serve.started" if not event.api.protected else
                       "serve.started_keys" if integrations.people_keys_exist() else "serve.started_shared_key")
            self.notify(self.texts(started, url=event.api.url), timeout=10, kind=LOAD_NOTICE)
        elif event.serve_stopped:
            self.notify(self.texts("serve.stopped", name=loaded.title(self.texts.lang)), kind=LOAD_NOTICE)
        elif event.switch_stopped_api is not None:  # F3 while serving: the API went with the old profile
            self.notify(self.texts("serve.stopped_by_switch", old=event.switch_stopped_api.title(self.texts.lang),
                                   name=loaded.title(self.texts.lang), serve=self.key_for("api.serve")), kind=LOAD_NOTICE)
        elif self.screen.query(StatusBar):  # its line says it ("ready │ office-cpu · its model"): no notice
            # over the chat's lines for seconds, only "Loading the profile …" put away (or a failed load's)
            self.put_away(LOAD_NOTICE)
        else:  # (F6, F11: no status line)
            self.notify(self.texts("profiles.loaded", name=loaded.title(self.texts.lang)), kind=LOAD_NOTICE)
        other, self._other_profile_said = self._other_profile_said, None
        if other is not None and other[0] == self.conversation_id and not event.restored \
                and other[1] not in (loaded.ref, loaded.key):
            self.notify(self.texts("conv.other_profile", saved=other[1], now=event.profile.key), timeout=8)
        notes = [*event.notes, *getattr(event.engine, "load_notes", [])]  # (the engine's: its CPU fallback)
        notes = unsaid_notes(notes, self.store)  # where the text goes: once for each server
        if hasattr(event.engine, "load_notes"):
            event.engine.load_notes.clear()  # said once, whichever way it was loaded
        if notes:  # as `profiles check` says them: a context past the trained length, …
            self.notify(" ".join(say([n], self.texts.get) for n in notes), severity="warning")
        self.update_status()
        self._quiet_failure = False
        if event.restored:  # (the profile chosen did not load: the message stays in the box)
            self._send_when_connected = None
        else:
            self.send_waiting()
        start_over, self._summary_when_connected = self._summary_when_connected, None
        if start_over is not None and not event.restored and isinstance(self.screen, SummarizeScreen):
            self.call_later(self.screen.action_run, start_over)  # (F6 left meanwhile: Ctrl+R there starts it)
