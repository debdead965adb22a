"""A local profile's load settings (F3, then E), as LM Studio's "model load settings": the
context, the longest reply, the K/V cache types, the GPU layers and speculative decoding, with the fit verdict of
the settings as chosen beside them (the planner's, as F3 works it out) and the speed estimate.
Saving writes only the settings changed into the profile's file (``profile_saving.save_profile``);
a profile shipped with the app is saved as the user's own copy, which is used in its place."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Select
from textual.widgets._select import SelectOverlay
from textual.widgets.option_list import Option

from workstation.core.catalog import human_bytes
from workstation.core.engine_api import answer_reserve
from workstation.core.errors import ProfileError, WorkstationError
from workstation.core.language_words import words_figures
from workstation.core.paths import given_profile_folders, user_profiles_dir
from workstation.core.phrases import context_basis, context_words, holds_words
from workstation.core.profile_check import MAX_CONTEXT, MIN_CONTEXT, check_sampling, context_allowed
from workstation.core.profile_folders import REMOVED_FOLDER, free_path, set_aside
from workstation.core.profile_lookup import load_profile_file, model_file
from workstation.core.profile_saving import save_profile
from workstation.core.profiles import KV_CACHE_TYPES, KVCache, Profile, kv_words, under_file_of
from workstation.core.speed_estimate import FULL_KV_TYPES
from workstation.tui.i18n import Texts
from workstation.tui.integrations import memory_freed_by_switch, speed_estimate
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.screens.sampling import read_number
from workstation.tui.toasts import LOAD_NOTICE
from workstation.tui.widgets.line_input import LineInput

if TYPE_CHECKING:
    from workstation.core.hardware import GpuInfo
    from workstation.core.memory_plan import FreedMemory
    from workstation.tui.screens.profile_menu import FitCheck, ProfileMenu

UNQUANTIZED_V = ("f16", "f32", "bf16")  # the V cache types that work without flash attention
# how exact each K/V type keeps the context (q8_0: +0.15% perplexity here; 4 bits lose more; any other: 'less')
KV_QUALITY = {"f32": "exact", "f16": "exact", "bf16": "near", "q8_0": "near", "q5_0": "bit_less", "q5_1": "bit_less"}


def why_not_editable(entry: Profile | ProfileError) -> str | None:
    """The locale key of why ``entry`` has no load settings to change here; None: it has."""
    if isinstance(entry, ProfileError):
        return "load.broken"
    if entry.backend != "llama":
        return "load.remote"
    if entry.source is None or entry.source.suffix.lower() not in (".yaml", ".yml"):
        return "load.no_file"
    return None


def shipped(profile: Profile) -> bool:
    """Whether the profile's file is one shipped with the app or the office's (not the user's to
    overwrite)."""
    return profile.source is not None and any(profile.source.resolve().parent == folder.resolve()
                                              for folder in given_profile_folders())


def shipped_original(profile: Profile) -> Path | None:
    """The shipped file that ``profile``, the user's own copy of it, is used in place of (same
    name, in the user's profiles folder); None where it is no such copy."""
    if profile.source is None or shipped(profile) or profile.source.resolve().parent != user_profiles_dir().resolve():
        return None
    return next((folder / profile.source.name for folder in given_profile_folders()
                 if (folder / profile.source.name).is_file()), None)


def target_file(profile: Profile) -> Path:
    """Where saving writes: the profile's own file, or for a shipped one the user's copy of it in
    the user's profiles folder (same name: used in its place), never over another file there."""
    assert profile.source is not None
    if not shipped(profile):
        return profile.source
    return free_path(user_profiles_dir(), profile.source.name)


def copy_titles(profile: Profile) -> dict[str, str]:
    """The names a shipped profile's copy is saved with, marked as the user's own ("… (my copy)",
    in Turkish "… (kopyam)"): under the shipped name, F3 could not tell the copy from the one
    that came with the app, and a name saying "8K context" said it of a copy set to 32,768."""
    titles = {}
    for name, lang in (("name", "en"), ("name_tr", "tr")):
        title = getattr(profile, name)
        marked = Texts(lang)("load.copy_name", name=title)
        if title and not title.endswith(marked.removeprefix(title)):  # (not marked twice)
            titles[name] = marked
    return titles


def _changed_words(original: Profile, settings: Profile, t: Texts) -> str:
    """What ``settings`` changed of ``original``'s, where it changes what a description says of a
    profile (its model, its context, its K/V cache: how much it reads at once, in what memory), in
    ``t``'s language: "the context 6,000 (it was 8,192)"; empty where none of those changed."""
    said = [t(f"load.changed_{name}", new=new, old=old) for name, old, new in (
        ("model", original.model, settings.model),
        ("context", f"{original.context:,}", f"{settings.context:,}"),
        ("kv_k", original.kv_cache.k, settings.kv_cache.k),
        ("kv_v", original.kv_cache.v, settings.kv_cache.v)) if old != new]
    return t("load.copy_description", changes=t.series(said, most=len(said))) if said else ""


def copy_descriptions(profile: Profile, settings: Profile) -> dict[str, str]:
    """The descriptions a copy of a shipped profile is saved with, by setting name, where they
    change: the shipped one's says what it is for as shipped ("8K context: reads twice as much of a
    document at once"), and a copy set to 6,000 said that beside its own "reads up to about 4,500
    words". A copy whose model, context or K/V cache differ from the shipped profile's is described
    by what changed ("Your copy of the profile that came with the app, with the context 6,000 (it was
    8,192)"); set back as shipped, by the shipped description again. A description the user wrote
    (neither the shipped one nor one said here) is theirs, kept as it is."""
    original_file = profile.source if shipped(profile) else shipped_original(profile)
    if original_file is None:
        return {}
    try:
        original = profile if shipped(profile) else load_profile_file(original_file)
    except WorkstationError:
        return {}  # (a shipped file unreadable: nothing to compare with)
    descriptions = {}
    for name, lang in (("description", "en"), ("description_tr", "tr")):
        shipped_words, now = getattr(original, name), getattr(profile, name)
        if not original.description:  # (nothing claimed; Turkish with none of its own: said in Turkish too)
            continue
        t = Texts(lang)
        if now in (shipped_words, _changed_words(original, profile, t)):  # (not the user's own)
            wanted = _changed_words(original, settings, t) or shipped_words
            if wanted != now:
                descriptions[name] = wanted
    return descriptions


class WordedSelect(Select[str]):
    """A choice whose list says each choice in words beside its name ("q4_0  quarter size, less
    exact"), the box showing the name alone (it has 12 columns, the help beside it says the rest)."""

    def __init__(self, options: list[tuple[str, str]], words: dict[str, str], **kwargs: Any) -> None:
        self.words = words
        super().__init__(options, **kwargs)

    def _setup_options_renderables(self) -> None:  # (Textual's own, with the words after each name)
        overlay = self.query_one(SelectOverlay)
        overlay.clear_options()
        width = max((len(prompt) for prompt, _value in self._options), default=0)
        overlay.add_options([Option(f"{prompt:<{width}}  {self.words.get(value, '')}".rstrip())
                             for prompt, value in self._options])


class SettingsVerdict(Message):
    def __init__(self, asked: int, verdict: str, speed: str) -> None:
        super().__init__()
        self.asked = asked
        self.verdict = verdict
        self.speed = speed


class LoadSettings(AppScreen, ModalScreen[Profile | None]):
    """The settings, one a line; Ctrl+S saves them (Enter in a box moves on) and returns
    the profile as saved; Ctrl+R, on the user's own copy of a shipped profile, removes the copy
    (asked first) and returns the shipped one; Esc leaves without saving (``None``)."""

    FIGURES_HELP = "load.terms"  # F1: what the rows' names and choices mean (K, q8_0, GPU layers)
    # F1: the keys its fields and choices take, before its own (F1 listed Ctrl+R alone, read as F3's)
    PART_KEYS = (("tab", "load.next"), ("enter", "load.open"))
    BINDINGS = [Binding("ctrl+s", "save", "save", id="load.save", show=False),
                Binding("escape", "cancel", "cancel", id="load.cancel", show=False),
                Binding("ctrl+r", "reset", "shipped settings", id="load.reset", show=False),
                # at 80x24 a long verdict ends below the dialog, and the focus is in a field: these
                # scroll it (no key reached its last lines, nor the speed under it)
                Binding("pagedown", "page(1)", "scroll", id="load.scroll", show=False),
                Binding("pageup", "page(-1)", "scroll", id="load.scroll", show=False)]

    def __init__(self, profile: Profile, fit_check: FitCheck, freed: FreedMemory | None = None,
                 gpus: list[GpuInfo] | None = None, trained: int | None = None, n_layers: int | None = None,
                 in_use: bool = False) -> None:
        """``freed``: the loaded model's memory, counted as free as F3 counts it (saving the
        profile in use loads it again, and a switch closes the loaded model first). ``in_use``:
        the profile is the one in use (a change saved loads its model again)."""
        super().__init__(classes="dialog-screen")
        self.profile = profile
        self.in_use = in_use
        self.fit_check = fit_check
        self.freed = freed
        self.gpus = gpus or []
        self.trained = trained
        self.n_layers = n_layers
        self._asked = 0  # the verdict shown is the last one asked for (typing asks for several)
        self.put_aside: Path | None = None  # where Ctrl+R moved the user's copy
        self._follow = False  # a new verdict is brought into sight, as the dialog grows with it too
        self._basis = context_basis()  # (the model's own, once compose reads its file)

    # --- what is shown ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        t, p = self.wapp.texts, self.profile
        with Vertical(classes="dialog wide", id="load-settings"):
            yield Label(t("load.title", name=p.title(t.lang)), classes="dialog-title", markup=False)
            if shipped(p):
                where = t("load.shipped", file=str(target_file(p)))
            else:
                where = t("load.own_copy" if shipped_original(p) else "load.file", file=str(p.source))
            yield Label(where, id="load-file", markup=False)
            # docked at the dialog's foot: in sight as the settings and the verdict scroll (at 80x24 it
            # opened scrolled to the verdict, its key line to save or leave by above the dialog's top);
            # what Enter does where the focus is (``_keys_line``)
            yield Label(t(self._keys_key(box=True)), id="load-keys", classes="dialog-hint", markup=False)
            yield Label("", id="load-problem", classes="dialog-problem", markup=False)
            with Horizontal(classes="load-row"):
                yield Label(t("load.context"), classes="load-name", markup=False)
                yield LineInput(t.number(f"{p.context:,}"), id="load-context", compact=True, restrict=r"[0-9.,]*")
                # what the model was made for, in words ("trained for 8,192" said tokens to office staff)
                # (by the model's own figure in the UI's language, as F3 says the context beside it)
                self._basis = context_basis(t.get, words_figures(t.get, t.lang, model_file(p), measure=False))
                yield Label(self._context_help(p.context, p.sampling.max_tokens), id="load-context-help",
                            classes="load-help", markup=False)
            # the longest reply (sampling.max_tokens): F6's summary cut short and a reply cut at its limit
            # sent the user into the profile's file to raise it; said in words, as the context's help is
            with Horizontal(classes="load-row"):
                yield Label(t("sampling.max_tokens"), classes="load-name", markup=False)
                yield LineInput(t.number(f"{p.sampling.max_tokens:,}"), id="load-max-tokens", compact=True,
                                restrict=r"[0-9.,]*")
                yield Label(self._reply_help(p.sampling.max_tokens, p.context), id="load-max-tokens-help", classes="load-help",
                            markup=False)
            for part in ("k", "v"):
                with Horizontal(classes="load-row"):
                    yield Label(t(f"load.kv_{part}"), classes="load-name", markup=False)
                    allowed = [c for c in KV_CACHE_TYPES if part == "k" or p.flash_attn != "off" or c in UNQUANTIZED_V]
                    yield WordedSelect([(c, c) for c in allowed], {c: self._kv_choice(c) for c in allowed},
                                       value=getattr(p.kv_cache, part), allow_blank=False, compact=True,
                                       id=f"load-kv-{part}")
                    yield Label(self._kv_help(getattr(p.kv_cache, part), p.gpu_layers), id=f"load-kv-{part}-help",
                                classes="load-help", markup=False)
            with Horizontal(classes="load-row"):
                yield Label(t("load.gpu_layers"), classes="load-name", markup=False)
                if self.gpus:
                    yield Select(self._layer_choices(), value=p.gpu_layers, allow_blank=False, compact=True,
                                 id="load-gpu-layers")
                yield Label(self._gpu_help(p.gpu_layers), id="load-gpu-help", classes="load-help", markup=False)
            with Horizontal(classes="load-row"):
                yield Label(t("load.speculative"), classes="load-name", markup=False)
                modes = ["off", "lookup", *(["draft"] if p.speculative.draft_model else [])]
                yield Select([(t(f"load.spec_{m}"), m) for m in modes], value=p.speculative.mode, allow_blank=False,
                             compact=True, id="load-spec")
                yield Label(t(f"load.spec_help_{p.speculative.mode}"), id="load-spec-help", classes="load-help",
                            markup=False)
            yield Label(t("profiles.fit_checking"), id="load-verdict", markup=False)
            yield Label("", id="load-speed", markup=False)

    def _keys_key(self, box: bool) -> str:
        """The key line's text key: in a box (the context, the longest reply) Enter moves on, on a
        choice it opens the list; Ctrl+R only where the profile is the user's copy of a shipped one."""
        return ("load.keys_reset" if shipped_original(self.profile) else "load.keys") + ("_box" if box else "")

    @on(events.DescendantFocus)
    def _keys_line(self, event: events.DescendantFocus) -> None:
        """The key line says what Enter does in the field that has the focus now: it said "Enter:
        open a choice" while the focus was in the context box, where Enter saved the profile and
        loaded the model again (and it now moves on)."""
        if isinstance(event.widget, (Input, Select)):
            self.query_one("#load-keys", Label).update(self.wapp.texts(self._keys_key(isinstance(event.widget, Input))))

    def _layer_choices(self) -> list[tuple[str, int | str]]:
        t, now = self.wapp.texts, self.profile.gpu_layers
        choices: list[tuple[str, int | str]] = [(t("load.layers_auto"), "auto"), (t("load.layers_all"), "all"),
                                                (t("load.layers_none"), 0)]
        n = self.n_layers or 0
        numbers = {n * q // 4 for q in (1, 2, 3)} - {0} if n else set()
        if isinstance(now, int) and now:
            numbers.add(now)
        choices += [(t("load.layers_n", n=k, total=n) if n else str(k), k) for k in sorted(numbers)]
        return choices

    def _context_help(self, context: int | None, reply: int | None) -> str:
        """What the context typed holds in words, a conversation's and a message's (the reply's
        room kept: ``holds_words``, as F3's line, F4 and an attached document's refusal say it,
        short to fit its row), and the model's own limit where the context is over it: "the
        model's limit: about 6,100 words" alone stood beside 4,096 where F3 said the profile reads
        about 3,100 and a message held less."""
        t = self.wapp.texts
        if not context:
            return t("load.context_help")
        sampling = dataclasses.replace(self.profile.sampling, max_tokens=reply) if reply else self.profile.sampling
        # (short: the row has one line at 80 columns; the model's limit said where the context is over it)
        holds = holds_words(context, context - answer_reserve(sampling, context), self._basis, t.get, short=True)
        return t("load.context_help_trained", holds=holds, words=context_words(self.trained, self._basis, t.get)) \
            if self.trained and context > self.trained else holds

    def _reply_help(self, tokens: int | None, context: int | None) -> str:
        """The longest reply in words, by the model's own figure as the context's beside it ("about
        750 words"; it said the language's 770 beside the model's); the plain help where none is
        typed yet. Longer than the context: said (20,000 stood as "about 15,000 words" beside a
        context of 4,096, a reply of which stops where the context is full)."""
        t = self.wapp.texts
        if not tokens:
            return t("load.reply_help_none")
        words = context_words(tokens, self._basis, t.get)
        if context and tokens >= context:
            return t("load.reply_help_over", words=words, context=context_words(context, self._basis, t.get))
        return t("load.reply_help", words=words)

    def _kv_help(self, kind: str, layers: object) -> str:
        """What the K or V cache type chosen means: its memory and how exact it keeps the context
        ("context memory half size, nearly exact"); the same two words stood beside every choice.
        With ``layers`` (the GPU layers chosen) on the CPU, a quantized type's cost too: "nearly
        exact" stood beside q8_0 where bench measured its replies 0.79x as fast (on a GPU with
        flash attention it is close to free)."""
        t = self.wapp.texts
        key = "load.kv_help_cpu" if kind not in FULL_KV_TYPES and (not self.gpus or layers == 0) else "load.kv_help"
        return t(key, size=kv_words(KVCache(kind, kind), t.get, usual=True),
                 quality=t(f"load.kv_quality_{KV_QUALITY.get(kind, 'less')}"))

    def _kv_choice(self, kind: str) -> str:
        """A K/V type in words, as its list and F1 say it: its size beside full size (``kv_words``)
        and how exact it keeps the conversation ("half size, nearly exact"); the list said
        "f32 f16 q4_0 q4_1 …" with no words, and F1 explained three of them."""
        t = self.wapp.texts
        return t("load.kv_help", size=kv_words(KVCache(kind, kind), t.get, usual=True),
                 quality=t(f"load.kv_quality_{KV_QUALITY.get(kind, 'less')}"))

    def figures_help(self) -> str:
        """F1's words on the settings, every K/V type among them in words (``_kv_choice``)."""
        t = self.wapp.texts
        return t("load.terms", kv_types="; ".join(f"{c} {self._kv_choice(c)}" for c in KV_CACHE_TYPES))

    def _gpu_help(self, layers: int | str) -> str:
        """What the GPU layers chosen mean for the user: where the model runs, how fast."""
        t = self.wapp.texts
        if not self.gpus:
            return t("load.no_gpu")
        if layers in ("auto", "all", 0):
            free = human_bytes(sum(g.vram_free for g in self.gpus))
            return t(f"load.layers_help_{'none' if layers == 0 else layers}", free=free)
        return t("load.layers_help_n")

    def on_mount(self) -> None:
        self.translate_bindings()  # (F1's words for its keys, in the UI's language: F3 opens it, not the app's _show)
        self.query_one("#load-problem", Label).display = False
        self.query_one("#load-context", Input).focus()
        # (the dialog grows with a longer verdict a refresh or two after it is shown: brought into
        # sight before then, it was scrolled as far as the shorter one let it, not at all)
        self.watch(self.query_one("#load-settings", Vertical), "virtual_size", self._grown, init=False)
        self._recheck()

    # --- the settings as chosen ---------------------------------------------------------------
    def chosen(self) -> dict[str, Any]:
        """The settings as the dialog has them, by dotted name; ProfileError (in the dialog's words)
        for a context that is no number or out of range."""
        t = self.wapp.texts
        typed = self.query_one("#load-context", Input).value.strip()
        try:
            context = int(read_number(typed, True, t.get("number.thousands") or ","))
        except ValueError:
            raise ProfileError(t("load.context_not_number", value=typed)) from None
        if not context_allowed(context):
            raise ProfileError(t("load.context_range", low=MIN_CONTEXT, high=f"{MAX_CONTEXT:,}"))
        values: dict[str, Any] = {"context": context, "sampling.max_tokens": self._max_tokens()}
        for part in ("k", "v"):
            values[f"kv_cache.{part}"] = self.query_one(f"#load-kv-{part}", Select).value
        if self.gpus:
            values["gpu_layers"] = self.query_one("#load-gpu-layers", Select).value
        values["speculative.mode"] = self.query_one("#load-spec", Select).value
        return values

    def _max_tokens(self) -> int:
        """The longest reply typed, checked by the profile's own sampling check (as Ctrl+E's
        dialog and a profile file are); ProfileError in the dialog's words."""
        t = self.wapp.texts
        typed = self.query_one("#load-max-tokens", Input).value.strip()
        name = t("sampling.max_tokens")
        if not typed:
            raise ProfileError(t("sampling.empty", name=name))
        try:
            tokens = int(read_number(typed, True, t.get("number.thousands") or ","))
        except ValueError:
            raise ProfileError(t("sampling.not_a_number", name=name, value=typed)) from None
        check_sampling(dataclasses.replace(self.profile.sampling, max_tokens=tokens),
                       lambda field: t(f"sampling.{field}"))
        return tokens

    def changes(self) -> dict[str, Any]:
        """The settings chosen that differ from the profile's (only those are written)."""
        p = self.profile
        before = {"context": p.context, "sampling.max_tokens": p.sampling.max_tokens, "kv_cache.k": p.kv_cache.k,
                  "kv_cache.v": p.kv_cache.v, "gpu_layers": p.gpu_layers, "speculative.mode": p.speculative.mode}
        return {name: value for name, value in self.chosen().items() if value != before[name]}

    def candidate(self) -> Profile:
        """The profile with the settings as chosen (planned, never written)."""
        values, p = self.chosen(), self.profile
        return dataclasses.replace(
            p, context=values["context"], gpu_layers=values.get("gpu_layers", p.gpu_layers),
            kv_cache=KVCache(values["kv_cache.k"], values["kv_cache.v"]),
            sampling=dataclasses.replace(p.sampling, max_tokens=values["sampling.max_tokens"]),
            speculative=dataclasses.replace(p.speculative, mode=values["speculative.mode"]))

    def _problem(self, text: str | None) -> None:
        problem = self.query_one("#load-problem", Label)
        problem.update(text or "")
        problem.display = bool(text)
        if text:  # (above the settings: scrolled away at 80x24 once the verdict was brought into sight)
            self._follow = False
            self.call_after_refresh(problem.scroll_visible, animate=False, immediate=True)

    @on(Input.Changed)
    @on(Select.Changed)
    def _changed(self) -> None:
        if self.gpus:  # (the help beside a choice says what the choice made does)
            self.query_one("#load-gpu-help", Label).update(self._gpu_help(self.query_one("#load-gpu-layers", Select).value))
        mode = self.query_one("#load-spec", Select).value
        self.query_one("#load-spec-help", Label).update(self.wapp.texts(f"load.spec_help_{mode}"))
        layers = self.query_one("#load-gpu-layers", Select).value if self.gpus else 0
        for part in ("k", "v"):
            kind = self.query_one(f"#load-kv-{part}", Select).value
            self.query_one(f"#load-kv-{part}-help", Label).update(self._kv_help(str(kind), layers))
        try:
            reply: int | None = self._max_tokens()
        except ProfileError:
            reply = None
        try:
            context: int | None = int(read_number(self.query_one("#load-context", Input).value.strip(), True,
                                                  self.wapp.texts.get("number.thousands") or ","))
        except ValueError:
            context = None
        self.query_one("#load-max-tokens-help", Label).update(self._reply_help(reply, context))
        self.query_one("#load-context-help", Label).update(self._context_help(context, reply))
        self._recheck()

    def _recheck(self) -> None:
        try:
            candidate = self.candidate()
        except ProfileError as err:
            self._problem(self.wapp.texts.error(err))
            return
        self._problem(None)
        self._asked += 1
        self.query_one("#load-verdict", Label).update(self.wapp.texts("profiles.fit_checking"))
        self._verdict(candidate, self._asked)

    @work(thread=True, exclusive=True, exit_on_error=False, group="load-settings")
    def _verdict(self, candidate: Profile, asked: int) -> None:
        t = self.wapp.texts
        verdict = self.fit_check(candidate, t, self.freed, place="in_load") or t("profiles.fit_unknown")
        self.post_message(SettingsVerdict(asked, verdict, speed_estimate(candidate, t, self.freed, self.wapp.store.path)))

    @on(SettingsVerdict)
    def _verdict_found(self, event: SettingsVerdict) -> None:
        if event.asked != self._asked:  # (one for settings changed since)
            return
        self.query_one("#load-verdict", Label).update("\n".join(p for p in (event.verdict, self._reread_note()) if p))
        self.query_one("#load-speed", Label).update(event.speed)
        self._follow = True
        self.call_after_refresh(self._verdict_in_sight)

    def _reread_note(self) -> str:
        """Where saving the settings as chosen loads the profile in use again (any of them changed),
        what that costs the open conversation (``reread_note``: a long one is read again), said in
        the verdict while they are chosen: said only once saved, it came after the choice."""
        if not self.in_use:
            return ""
        try:
            changed = bool(self.changes())
        except ProfileError:
            return ""
        return self.wapp.reread_note() if changed else ""

    def _grown(self) -> None:
        if self._follow:
            self.call_after_refresh(self._verdict_in_sight)

    def on_resize(self) -> None:
        """A terminal made smaller brings the verdict's end into sight again (with the longest reply's
        row, 80x20 left its last line below the dialog: nothing scrolled it there)."""
        if self._follow:
            self.call_after_refresh(self._verdict_in_sight)

    def _verdict_in_sight(self) -> None:
        """The verdict's last line and the speed scrolled into sight (at 80x24 a long "does not
        fit" ended below the dialog), the field being changed kept in sight before them."""
        dialog = self.query_one("#load-settings", Vertical)
        dialog.scroll_to_widget(self.query_one("#load-speed", Label), animate=False, immediate=True)
        if self.focused is not None:
            dialog.scroll_to_widget(self.focused, animate=False, immediate=True)

    def action_page(self, direction: int) -> None:
        self._follow = False
        dialog = self.query_one("#load-settings", Vertical)
        dialog.scroll_to(y=dialog.scroll_y + direction * max(1, dialog.scrollable_content_region.height - 1),
                         animate=False, immediate=True)

    # --- keys ---------------------------------------------------------------------------------
    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        """Enter in a box moves on to the next setting, as Tab does; only Ctrl+S saves. Enter in
        the context box saved the profile and loaded its model again with settings only being
        tried, from a user who pressed it to go on (a form's Enter, as in LM Studio's load
        settings, where only the Load button applies them)."""
        event.stop()
        self.focus_next()

    def action_save(self) -> None:
        t = self.wapp.texts
        try:
            changes = self.changes()
            if not changes:
                self.notify(t("load.unchanged"))
                self.dismiss(None)
                return
            if shipped(self.profile):  # the copy's name says it is the user's own
                changes |= copy_titles(self.profile)
            changes |= copy_descriptions(self.profile, self.candidate())  # (no claim that is no longer true)
            saved = save_profile(self.profile, target_file(self.profile), changes)
        except WorkstationError as err:
            self._problem(t.error(err))
            return
        self.dismiss(saved)

    def action_reset(self) -> None:
        """Ctrl+R on the user's own copy of a shipped profile: the copy put aside (``set_aside``:
        kept in the ``removed`` folder, no profile there; it was deleted, with no way back), once
        asked; the shipped profile is used again (LM Studio's "reset to default")."""
        from workstation.core.profile_lookup import load_profile_file
        from workstation.tui.screens.dialogs import ConfirmDialog

        t, copy = self.wapp.texts, self.profile.source
        original = shipped_original(self.profile)
        if original is None or copy is None:
            self.notify(t("load.reset_shipped" if shipped(self.profile) else "load.reset_none"))
            return

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                self.put_aside = set_aside(copy) if copy.exists() else None
            except OSError as err:
                self._problem(t("load.reset_failed", file=str(copy), error=err.strerror or str(err)))
                return
            try:
                self.dismiss(load_profile_file(original))
            except ProfileError as err:
                self._problem(t.error(err))

        question = t("load.reset_q", file=str(copy), folder=str(copy.parent / REMOVED_FOLDER))
        self.app.push_screen(ConfirmDialog(question, t("load.reset_yes"), t("dialog.cancel"), t.yes_no_keys()), answered)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _model_shape(profile: Profile) -> tuple[int | None, int | None]:
    """The model's trained context and its offloadable layers, from its file or, not downloaded
    yet, the catalog's published shape (as F3 plans it); (None, None) where neither is known."""
    from workstation.core.catalog import resolve_model_path
    from workstation.core.gpu_layers import offloadable_layers
    from workstation.core.model_info import read_model_info
    from workstation.core.model_shapes import catalog_model

    path = resolve_model_path(profile.model)
    try:
        shaped = catalog_model(profile.model) if not path.exists() else None
        info = shaped[0] if shaped is not None else read_model_info(path, check=False)
    except WorkstationError:
        return None, None
    return info.context_length or None, offloadable_layers(info.n_layer)


def open_load_settings(menu: ProfileMenu, index: int) -> None:
    """F3's E on the profile at ``index``: its load settings, or one sentence on why it has none
    here. Saved, the menu's row shows the profile as saved (and its verdict); the profile in use
    is loaded again with them."""
    entry = menu.entries[index]
    t = menu.wapp.texts
    why = why_not_editable(entry)
    if why is not None or not isinstance(entry, Profile):
        # (a broken file asks to be mended: it stays to be read; the others ask for nothing)
        # (a profile that has nothing here to change: a plain note, not a box titled "Warning")
        broken = why in (None, "load.broken")
        menu.notify(t(why or "load.broken"), severity="warning" if broken else "information",
                    timeout=10 if broken else None)
        return
    menu.run_worker(lambda: _push(menu, index, entry), thread=True, group="load-settings", exit_on_error=False)


def _push(menu: ProfileMenu, index: int, profile: Profile) -> None:
    """(In a thread: NVML and the model file's header are read first.)"""
    from workstation.core import hardware

    try:
        gpus = hardware.gpus()
    except Exception:  # noqa: BLE001 - no driver: no GPU, as everywhere
        gpus = []
    trained, layers = _model_shape(profile)
    app = menu.wapp  # the loaded model's memory counted as free, as F3's verdicts count it
    freed = menu.freed if menu.freed is not None else memory_freed_by_switch(app.profile, app.engine)
    screen = LoadSettings(profile, menu.fit_check, freed, gpus=gpus, trained=trained, n_layers=layers,
                          in_use=menu._is_current(profile))

    def show() -> None:
        if menu.app.screen is menu:  # (not once F3 is closed, nor twice for E pressed twice)
            menu.app.push_screen(screen, lambda saved: _saved(menu, index, profile, saved, screen.put_aside))

    menu.app.call_from_thread(show)


def _saved(menu: ProfileMenu, index: int, old: Profile, saved: Profile | None, put_aside: Path | None = None) -> None:
    from workstation.tui.screens.profile_menu import same_file

    if saved is None:
        return
    app, t = menu.wapp, menu.wapp.texts
    if shipped(saved) and not shipped(old):  # Ctrl+R: the user's copy removed
        said = (t("load.reset_done", file=str(put_aside), folder=str(put_aside.parent.parent)) if put_aside
                else t("load.reset_gone", file=str(old.source)))
    else:
        said = t("load.saved_copy" if saved.source != old.source else "load.saved", file=str(saved.source))
    if app.started_profile is not None and same_file(app.started_profile, old):
        app.started_profile = saved  # (a shipped file, its copy used in its place now: not listed twice)
    if menu._is_current(old):
        if app.generating or app.loading is not None:
            if app.profile is not None and saved.source != old.source:
                # its file is the copy now (or, put back, the shipped one): F3 listed the file it left
                # as well, marked as the one in use, and Enter on it loaded the old settings again
                # (a load under way keeps it: the app's ProfileLoaded)
                app.profile = menu.current = under_file_of(app.profile, saved)
            menu.notify(" ".join(p for p in (said, t("load.reload_later"), app.reread_note()) if p), timeout=12)
        else:
            menu.close(saved)  # loaded again, as Enter loads it (F3 on top by then: ``close``)
            # where the copy is kept is not the load's news: it stays its reading time (it went as
            # the load ended, the path read by no one), as F4's notice of a profile it made
            # (the model loaded again holds none of the open conversation: a long one is read again)
            app.notify(" ".join(p for p in (said, t("load.reloading"), app.reread_note()) if p),
                       kind="" if saved.source != old.source else LOAD_NOTICE)
            return
    else:
        menu.notify(said)
    menu.entries[index] = saved
    menu.verdicts.pop(index, None)
    menu.on_cpu.pop(index, None)
    menu.query_one(OptionList).replace_option_prompt(str(index), menu._prompt(index, saved))

    def verdict() -> None:
        menu.post_message(menu.found(index, saved))

    menu.run_worker(verdict, thread=True, group="fit", exit_on_error=False)
