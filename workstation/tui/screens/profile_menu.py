"""Pick a profile: every profile with its fit verdict; broken files show their error."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from workstation.core.engine_api import answer_reserve
from workstation.core.errors import ProfileError, WorkstationError
from workstation.core.installed_models import model_name
from workstation.core.language_words import words_figures
from workstation.core.llama_allocation import kv_share
from workstation.core.phrases import (
    WordsBasis,
    context_basis,
    costly_note,
    holds_words,
    rounded_words,
)
from workstation.core.profile_folders import whose
from workstation.core.profile_lookup import list_profiles, load_profile_file, model_file
from workstation.core.profiles import KV_CACHE_TYPES, Profile
from workstation.tui.i18n import Texts
from workstation.tui.integrations import fit_verdict, memory_freed_by_switch, server_verdict
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.screens.load_settings import shipped_original
from workstation.tui.toasts import NOT_SENT

if TYPE_CHECKING:
    from workstation.core.memory_plan import FreedMemory

# a K/V cache's memory against the usual, as F3's line says it (the nearest of these)
KV_SHARES = {2.0: "twice", 1.0: "", 0.75: "three_quarters", 0.5: "half", 1 / 3: "third", 0.25: "quarter"}  # (K q8_0, V f16: 0.77, said as the usual)


class FitCheck(Protocol):
    """``fit_verdict``'s shape: a profile's verdict, said for ``place`` (F3's list, or its E)."""

    def __call__(self, profile: Profile, texts: Texts, freed: FreedMemory | None = None, /,
                 place: str = "in_f3") -> str | None: ...


def _read_again(profile: Profile) -> Profile | ProfileError:
    """A profile file from outside profiles/, read again; its error if it is broken now."""
    if profile.source is None:
        return profile
    try:
        return load_profile_file(Path(profile.source))
    except ProfileError as err:
        return err


def same_file(a: Profile, b: Profile) -> bool:
    if a.source is None or b.source is None:
        return a.key == b.key
    return Path(a.source).resolve() == Path(b.source).resolve()


def listed_profiles(current: str | Profile | None, also: Profile | None = None) -> list[Profile | ProfileError]:
    """The profiles F3 lists: the user's (``list_profiles``), and first the running one
    (``current``) where it was loaded from a file outside profiles/ (``-p PATH``), so that it can be
    loaded again (a desk PC's profile whose server was down when the app started); so is ``also``,
    the one the app started with, after a switch to another."""
    entries = list_profiles()
    seen: list[Profile] = []  # the started profile and the running one may be one file
    for outside in (also, current):
        if not isinstance(outside, Profile) or any(same_file(outside, o) for o in seen):
            continue
        seen.append(outside)
        if not any(isinstance(e, Profile) and same_file(e, outside) for e in entries):
            entries.insert(0, _read_again(outside))  # as the file says now (the user may have fixed it)
    return entries


class VerdictFound(Message):
    def __init__(self, index: int, verdict: str | None, on_cpu: bool | None = None, server_ctx: int = 0,
                 server_words: dict[str, float] | None = None) -> None:
        super().__init__()
        self.index = index
        self.verdict = verdict
        self.on_cpu = on_cpu  # whether its plan runs some layers on the CPU (None: not planned)
        self.server_ctx = server_ctx  # a desk PC's profile's server's context, where it said it (0: not)
        self.server_words = server_words or {}  # its model's words a token by language, where it said them


class ProfileList(OptionList):
    """The profiles, scrolled a whole profile at a time: a profile several lines tall is never
    shown without its name at the top of the list (its last lines orphaned above the highlight)."""

    @property
    def max_scroll_y(self) -> int:
        """Textual's furthest scroll, and further where the list's end stopped it inside a
        profile: with no name on top at any scroll that shows the last profiles whole, the top
        line was the middle of one (a verdict's last words above the highlight); blank lines
        follow the last profile then."""
        furthest = super().max_scroll_y
        starts = sorted(getattr(self, "_index_to_line", {}).values())
        shown = self.scrollable_content_region.height
        if not starts or shown <= 0 or self.virtual_size.height <= shown:
            return furthest
        wanted = furthest
        for index, top in self._index_to_line.items():
            end = top + self._heights.get(index, 1)
            names = [y for y in starts if y <= top and y + shown >= end]
            if names and names[0] > wanted:  # the nearest scroll with a name on top, this one whole
                wanted = names[0]
        return wanted

    def show_above_highlight(self) -> None:
        """The highlighted profile whole at the list's foot, as many whole profiles above it as
        the list holds (F3 opened with the current one at the top: the bigger-model profiles
        above it out of view, and nothing said there were any)."""
        starts = getattr(self, "_index_to_line", {})
        if self.highlighted is None or self.highlighted not in starts:
            return
        top = starts[self.highlighted]
        end, shown = top + self._heights.get(self.highlighted, 1), self.scrollable_content_region.height
        tops = [y for y in starts.values() if end - shown <= y <= top]
        if tops:
            self.scroll_to(y=min(tops), animate=False, immediate=True)

    def scroll_to_highlight(self, top: bool = False) -> None:
        super().scroll_to_highlight(top=top)
        starts = sorted(getattr(self, "_index_to_line", {}).values())  # Textual's layout of the options
        if self.highlighted is None or not starts:
            return
        highlight = self._index_to_line.get(self.highlighted)
        if highlight is None:
            return
        below = [y for y in starts if self.scroll_y <= y <= highlight]
        if below and below[0] <= self.max_scroll_y:
            self.scroll_to(y=below[0], animate=False, immediate=True)
            return
        # at the list's end the scroll stops short of the next profile's name (the top line the
        # middle of one): the nearest name above it, where the highlighted profile stays whole
        end, shown = highlight + self._heights.get(self.highlighted, 1), self.scrollable_content_region.height
        above = [y for y in starts if y <= min(highlight, self.max_scroll_y) and y + shown >= end]
        if above and above[-1] != self.scroll_y:
            self.scroll_to(y=above[-1], animate=False, immediate=True)


def one_per_line(error: str) -> str:
    """A profile file's numbered problems ("has 3 problems: (1) … (2) …") one to a line: on one
    line they ran past the screen, the last ones and what to do cut off."""
    return re.sub(r" \((\d+)\) (?=\S)", r"\n    (\1) ", error) if re.search(r" has \d+ problems: \(1\) ", error) else error


class ProfileMenu(AppScreen, ModalScreen[Profile | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel", show=False),
                Binding("e", "load_settings", "load settings", id="profiles.edit", show=False)]

    def __init__(
        self, current: str | Profile | None,
        fit_check: FitCheck = fit_verdict,
        also: Profile | None = None,
        chosen: Profile | None = None,
    ) -> None:
        """``current``: the running profile (or its key); the list is ``listed_profiles``'.
        ``chosen``: the profile highlighted at the start in the running one's place (one that holds
        an attached document too long for this one: its line under the box names it)."""
        super().__init__(classes="dialog-screen")
        self.current = current
        self.fit_check = fit_check
        self.chosen = chosen
        self.entries: list[Profile | ProfileError] = listed_profiles(current, also)
        self.verdicts: dict[int, str | None] = {}
        self.on_cpu: dict[int, bool] = {}  # by its plan, beside its verdict: where a smaller K/V is slower
        self.server_ctx: dict[int, int] = {}  # a desk PC's profile's: what its server said it reads at once
        self.server_words: dict[int, dict[str, float]] = {}  # and its model's words a token, by language
        self.freed: FreedMemory | None = None  # the loaded model's memory, which choosing a profile frees first

    def _is_current(self, entry: Profile) -> bool:
        if isinstance(self.current, Profile):
            return same_file(entry, self.current)
        return entry.key == self.current

    def _of_loaded_model(self, entry: Profile) -> bool:
        """Whether ``entry`` runs the model file of the app's profile (whose replies and tokenizer
        the open conversation's words a token were measured with)."""
        loaded = self.wapp.profile
        if loaded is not None and loaded.backend != "llama":  # a desk PC's: the same server's model
            return entry.backend == loaded.backend and entry.remote.base_url == loaded.remote.base_url \
                and entry.remote.model == loaded.remote.model
        return loaded is not None and loaded.backend == "llama" and model_file(entry) == model_file(loaded)

    def words_basis(self, entry: Profile, said: dict[str, float] | None = None) -> WordsBasis:
        """What ``entry``'s context is said in words by (``phrases.context_basis``): the loaded
        model's as the line under the box says the room left by it, else its model's figure in the
        UI's language once measured (``found``), a desk PC's as its server ``said`` it, else the language's."""
        loaded = self.wapp.words_basis() if self._of_loaded_model(entry) else None
        if loaded is not None:
            return loaded  # (the line under the box says the room left by the same)
        t = self.wapp.texts
        model = model_file(entry) if entry.backend == "llama" else None  # (a desk PC's: no model file here)
        return context_basis(t.get, words_figures(t.get, t.lang, model, said, measure=False))

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        with Vertical(classes="dialog wide", id="profile-menu"):
            yield Label(t("profiles.title"), classes="dialog-title")
            yield ProfileList(*self._options(), id="profiles")
            yield Label(t("profiles.hint"), classes="dialog-hint")

    def _prompt(self, i: int, entry: Profile | ProfileError) -> Text:
        t = self.wapp.texts
        if isinstance(entry, ProfileError):
            text = Text(t("profiles.broken"), style="bold")
            text.append(f"\n  {one_per_line(t.error(entry))}", style="italic")
            return text
        mark = f"{self.wapp.glyphs.current} " if self._is_current(entry) else "  "
        title = entry.title(t.lang)
        text = Text(f"{mark}{title}", style="bold")
        # the user's own copy of a shipped profile, told from the shipped one (they had one title),
        # where its title does not say so ("… (my copy)", as E saves one now)
        mine = shipped_original(entry) is not None and not title.endswith(t("load.copy_name", name=""))
        # and one from the office's folder (WORKSTATION_PROFILES), as `profiles list` says it
        office = not mine and whose(entry)["from"] == "office"
        key = t("profiles.key_copy", profile=entry.key) if mine else \
            t("profiles.key_office", profile=entry.key) if office else entry.key
        text.append(f"  ({key})")
        if entry.about(t.lang):
            text.append(f"\n  {entry.about(t.lang)}")
        remote = entry.backend != "llama"
        if remote:  # the server's context and K/V are not the profile's to say
            if entry.remote.model:
                text.append(f"\n  {entry.remote.model}")
            text.append(f"\n  {t('profiles.remote', url=entry.remote.base_url)}")
            if self.server_ctx.get(i):  # what its model reads at once, as a local profile's line says it
                basis = self.words_basis(entry, self.server_words.get(i))
                words = holds_words(self.server_ctx[i], self.server_ctx[i] - answer_reserve(entry.sampling, self.server_ctx[i]),
                                    basis, t.get)
                text.append(f"\n  {t('profiles.remote_detail', words=words)}{costly_note(basis, t.get)}")
        else:
            # what the context holds in words, and its memory's size in words too ("context 8,192 at
            # half size" said neither what a context is nor what was half); E's screen has the types.
            # By the words a token the line under the box says the room left by (it said room for 3,200
            # more words where this said 3,100 in all): the UI language's figure for the model's tokenizer,
            # as F4 says it, never the open conversation's replies' own (F3 said 950, 3,500, 3,100 by them)
            basis = self.words_basis(entry)
            # a conversation's and a message's (less the reply's room): one figure read as what a message
            # holds stood beside the refusal of a shorter document (``holds_words``, as F4, E and the refusal)
            words = holds_words(entry.context, entry.context - answer_reserve(entry.sampling, entry.context), basis, t.get)
            # and the attached document's own figure, as its refusal says it: its words a token are
            # its own (F3 said 2,300 where the refusal said 2,600 of the same profile, both "words")
            attached = self.wapp.attached_room(entry)
            if attached is not None and abs(attached[2] - basis.per_token) > basis.per_token / 20:
                name, n, per_token = attached
                how = "profiles.words_shorter" if per_token > basis.per_token else "profiles.words_longer"
                words += " " + t("profiles.document_room", name=name, how=t(how), n=rounded_words(n))
            share = kv_share(entry.kv_cache) if entry.kv_cache.k in KV_CACHE_TYPES and \
                entry.kv_cache.v in KV_CACHE_TYPES else 1.0
            kv = min(KV_SHARES, key=lambda s: abs(math.log(s / share)))
            # a smaller K/V is slower on a CPU, close to free on a GPU: said until its plan puts it all there
            cpu = t("profiles.detail_kv_cpu") if self.on_cpu.get(i, True) else ""
            detail = t("profiles.detail" if kv == 1 else f"profiles.detail_kv_{KV_SHARES[kv]}",
                       model=model_name(entry.model), words=words, cpu=cpu)
            if entry.speculative.mode in ("draft", "lookup"):  # (its word: "draft" said nothing in Turkish)
                detail += " · " + t(f"profiles.speculative_{entry.speculative.mode}",
                                    model=model_name(entry.speculative.draft_model or ""))
            text.append(f"\n  {detail}{costly_note(basis, t.get)}")
        if i in self.verdicts:
            verdict = self.verdicts[i] or t("profiles.fit_unknown")
        else:
            verdict = t("profiles.server_checking" if remote else "profiles.fit_checking")
        text.append(f"\n  {verdict}", style="italic")
        return text

    def _options(self) -> list[Option]:
        return [
            # a broken file's row is reached with the keys too (disabled, it was above Home, seen only
            # with a mouse wheel); Enter on it says what to mend
            Option(self._prompt(i, e), id=str(i))
            for i, e in enumerate(self.entries)
        ]

    _placed = False  # the list scrolled at the start (``ProfileList.show_above_highlight``)
    _placed_at: int | None = None  # the profile highlighted then

    def on_mount(self) -> None:
        # the chat's "Not sent: … too long … F3 …" goes as F3 opens: it sat over the profiles'
        # descriptions, the highlighted row not seen, as the person did what it said (other notices stay)
        self.wapp.put_away(NOT_SENT)
        options = next(iter(self.query(OptionList).results(OptionList)), None)
        if options is None:  # closed before it was shown (Esc and F3 at once: the app ended on an error)
            return
        options.focus()
        for i, entry in enumerate(self.entries):
            if isinstance(entry, Profile) and self._is_current(entry):
                options.highlighted = i
        for i, entry in enumerate(self.entries):
            if isinstance(entry, Profile) and self.chosen is not None and same_file(entry, self.chosen):
                options.highlighted = i
        self._check_fit()

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_list)

    def fit_list(self) -> None:
        """The list as tall as the screen leaves beside the dialog's border, title and hint (a
        share of the screen, 55vh, showed 11 lines at 80x24: a profile taller than that had its
        last lines cut off, and the arrows go a whole profile at a time)."""
        dialog, options = self.query_one("#profile-menu"), self.query_one(ProfileList)
        others = dialog.outer_size.height - options.outer_size.height
        before = options.styles.max_height
        tall = max(5, self.size.height - others)
        if others > 0 and (before is None or before.cells != tall):
            options.styles.max_height = tall
            # a list made taller keeps its scroll, which may now fall inside a profile (its name
            # above the top line): a whole profile at the top again, the highlighted one in view;
            # placed as at the start while the highlight is still where it opened (a second fit as
            # it opened, on a busy PC, kept the first fit's shorter placing: fewer profiles above)
            # (placed before the current profile was highlighted, as a busy PC may: that one's placing)
            if self._placed and self._placed_at is None:
                self._placed_at = options.highlighted
            still = self._placed and options.highlighted == self._placed_at
            self.call_after_refresh(options.show_above_highlight if still else options.scroll_to_highlight)
        if not self._placed and others > 0:  # at the start: the profiles above the current one in view too
            self._placed, self._placed_at = True, options.highlighted
            self.call_after_refresh(options.show_above_highlight)

    @work(thread=True, exclusive=True, exit_on_error=False, group="fit")
    def _check_fit(self) -> None:
        # the local plans first: a server that does not answer can take seconds to say so
        found = [(i, e) for i, e in enumerate(self.entries) if isinstance(e, Profile)]
        # the loaded model is closed before the chosen profile loads: its memory is not taken
        # (F3 said "does not fit" of a profile that fitted once the switch had closed it)
        app = self.wapp
        self.freed = memory_freed_by_switch(app.profile, app.engine)
        for i, entry in sorted(found, key=lambda f: f[1].backend != "llama"):
            self.post_message(self.found(i, entry))

    def found(self, i: int, entry: Profile) -> VerdictFound:
        """Profile ``i``'s verdict and whether its plan runs on the CPU (in a worker: it plans)."""
        from workstation.core.profile_plan import plan_for_profile
        from workstation.core.remote import check_server
        from workstation.core.speed_estimate import layers_on_cpu

        on_cpu: bool | None = None
        if entry.backend != "llama":  # its server asked once: its verdict, and what it reads at once
            check = check_server(entry)
            return VerdictFound(i, server_verdict(entry, self.wapp.texts, check),
                                server_ctx=check.n_ctx if check.ok else 0,
                                server_words=check.words_a_token if check.ok else None)
        try:  # (the header read is cached: the verdict's plan again, not a second read)
            on_cpu = layers_on_cpu(plan_for_profile(entry, not_downloaded=True, freed=self.freed))
        except WorkstationError:
            pass  # its verdict says why
        # its model's words a token in the UI's language, measured once a file here (its tokenizer
        # read: not in the UI thread); its line says its context by them once the verdict is in
        words_figures(self.wapp.texts.get, self.wapp.texts.lang, model_file(entry))
        return VerdictFound(i, self.fit_check(entry, self.wapp.texts, self.freed), on_cpu)

    @on(VerdictFound)
    def _verdict(self, event: VerdictFound) -> None:
        self.verdicts[event.index] = event.verdict
        self.server_ctx[event.index] = event.server_ctx
        self.server_words[event.index] = event.server_words
        if event.on_cpu is None:
            self.on_cpu.pop(event.index, None)
        else:
            self.on_cpu[event.index] = event.on_cpu
        entry = self.entries[event.index]
        options = self.query_one(OptionList)
        options.replace_option_prompt(str(event.index), self._prompt(event.index, entry))
        # a verdict adds lines above the highlighted profile and pushed it out of view: Enter
        # would load a profile the user cannot see
        options.scroll_to_highlight()

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        entry = self.entries[int(event.option.id or 0)]
        if isinstance(entry, Profile):
            self.dismiss(entry)
        else:
            said = one_per_line(self.wapp.texts.error(entry)).rstrip().rstrip(".")  # (in the UI's language, where it can)
            self.notify(self.wapp.texts("profiles.broken_picked", error=said), severity="warning", timeout=12)

    def action_load_settings(self) -> None:
        """E: the highlighted profile's load settings (context, K/V, GPU layers, speculation)."""
        from workstation.tui.screens.load_settings import open_load_settings

        index = self.query_one(OptionList).highlighted
        if index is not None:
            open_load_settings(self, index)

    def action_cancel(self) -> None:
        self.dismiss(None)
