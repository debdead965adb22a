"""The model manager: installed models with metadata, the catalog, download, add, delete."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Header,
    Label,
    ProgressBar,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.data_table import ColumnKey
from textual.worker import get_current_worker

from workstation.core.catalog import file_size_text
from workstation.core.errors import WorkstationError
from workstation.core.installed_models import added_phrase, delete_model, file_state
from workstation.core.letters import shortened
from workstation.core.model_download import UnfinishedDownload, remove_unfinished
from workstation.core.model_info import read_model_info
from workstation.core.model_profile import make_profile, running
from workstation.core.paths import models_dir
from workstation.core.phrases import part_percent
from workstation.core.profile_lookup import profiles_using
from workstation.tui import integrations
from workstation.tui.integrations import ModelFit, ModelRow, Suggestion
from workstation.tui.messages import Progress, TaskFailed
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.screens.dialogs import ConfirmDialog
from workstation.tui.toasts import LOAD_NOTICE
from workstation.tui.widgets.progress import LocalProgressBar
from workstation.tui.widgets.screen_footer import ScreenFooter

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


def server_model(app: WorkstationApp) -> str:
    """A desk PC's office server's model as F4 and F5 name it (its name as the server gives it,
    else the profile's remote.model, else "the one it offers first")."""
    profile = app.profile
    model = (app.engine_info.model_name if app.engine_info else "") or (profile.remote.model if profile else "")
    return model or app.texts("models.server_model_unknown")

class ModelsListed(Progress):
    pass


class DetailsMeasured(Message):
    """An installed model's details with its context in words by its own tokenizer's figure."""

    def __init__(self, path: Path, details: str) -> None:
        super().__init__()
        self.path = path
        self.details = details


HERE = "here"  # the key of the lists' "On this PC" column (``_mark_cell``)


class FitFound(Message):
    """Whether a model fits this PC (``model_fit_parts``: its sentence "" where that cannot be worked out)."""

    def __init__(self, row: ModelRow, fit: ModelFit, generation: int = 0) -> None:
        super().__init__()
        self.row = row  # the row itself: an installed file and its catalog row apart
        self.fit = fit
        self.generation = generation  # the list it was worked out for (``ModelsScreen._generation``)


class FitsDone(Message):
    """Every listed model's fit is worked out: the suggestion can be made."""

    def __init__(self, generation: int = 0) -> None:
        super().__init__()
        self.generation = generation


class ModelsScreen(AppScreen, Screen[None]):
    OPENED_BY = "models"
    FIGURES_HELP = "models.terms"  # F1: what Q4_K_M, 268M and layers in the details mean
    # the app pushes the same screen each time: a download outlives leaving F4 (Esc left it
    # running out of sight, and F4 again showed no bar and refused p with "being downloaded")
    KEEP_ALIVE = True
    BINDINGS = [
        Binding("escape", "app.pop_screen", "back", id="models.back"),
        Binding("u", "use", "use", id="models.use"),
        Binding("p", "pull", "download", id="models.pull"),
        Binding("a", "add", "add file", id="models.add"),
        Binding("d", "delete", "delete", id="models.delete"),
        Binding("r", "reload", "refresh", id="models.refresh"),
        # the tabs took the arrows only once reached with Shift+Tab, which nothing said
        Binding("left,right", "other_list", "other list", id="models.tabs", show=False, priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.installed: list[ModelRow] = []
        self.catalog: list[ModelRow] = []
        self.busy = False
        self.pulling = ""  # the catalog model being downloaded ("" when none)
        self.left = False  # popped (Esc, F4), not only covered by a dialog
        # each row (by itself, not its name: a damaged installed file's row got its catalog row's
        # error sentence) -> whether it fits this PC, once worked out
        self.fits: dict[ModelRow, ModelFit] = {}
        self.suggestion: Suggestion | None = None  # the model suggested for this PC, once every fit is known
        self._wanted: ModelRow | None = None  # the highlighted row: the fits' worker works it out next
        # the list's generation, one more each time it comes: a cancelled worker's fit of the list
        # before (a model since deleted, pulled) is not put in the fresh one
        self._generation = 0
        self._select_path: Path | None = None  # a model just added: the cursor goes on it once listed

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        yield Header()
        # a desk PC's profile runs on the office server: said first, as U leaves it for a model here
        yield Label("", id="model-server", markup=False)
        # which model suits this PC, once every row's fit is known (F4 had no answer to it)
        yield Label("", id="model-suggest", markup=False)
        with TabbedContent(id="model-tabs"):
            with TabPane(t("models.installed"), id="tab-installed"):
                yield DataTable(id="installed", cursor_type="row", zebra_stripes=True)
            with TabPane(t("models.catalog"), id="tab-catalog"):
                yield DataTable(id="catalog", cursor_type="row", zebra_stripes=True)
        # 80x24 cut its last lines: they scroll, with the arrows once Tab reaches it (the hint says
        # so where they do not all show; only a mouse's wheel scrolled them)
        with VerticalScroll(id="model-detail-box"):
            yield Static("", id="model-detail", markup=False)
        yield Label("", id="model-task", markup=False)
        yield LocalProgressBar(total=1.0, id="pull-progress")
        yield ScreenFooter()

    def on_mount(self) -> None:
        self.query_one("#pull-progress").display = False
        self._say_server()
        self._focus_list()  # the arrows move in the list at once (not the tabs)
        # Tab said where the details go on past the box, as it lays them out (a new model, or size)
        self.watch(self.query_one("#model-detail-box"), "show_vertical_scrollbar", lambda _shown: self._hint(), init=False)

        self.action_reload()

    def on_screen_suspend(self) -> None:
        self.left = self not in self.app.screen_stack  # Esc, not a dialog over it
        if self.left:  # (the column's worker went on down the list behind the screen left)
            self.workers.cancel_group(self, "models-fit")

    def _say_server(self) -> None:
        """The line at the top: this PC uses the office server and its model (F4 listed this PC's
        models as if one of them ran, and U left the server without a word); nothing for a
        profile that runs a model here."""
        line = self.query_one("#model-server", Label)
        app, t = self.wapp, self.wapp.texts
        profile = app.profile
        line.display = profile is not None and profile.backend != "llama"
        if profile is None or profile.backend == "llama":
            return
        line.update(t("models.server_in_use", model=server_model(app)))

    def on_screen_resume(self) -> None:
        self._say_server()  # (the profile may have changed since F4 was last open)
        if self.left:  # F4 again: a model pulled or added elsewhere meanwhile is listed
            self.left = False
            self._focus_list()  # the arrows in the list again (they were on the tabs or details left last)
            self.action_reload()

    def on_resize(self) -> None:
        if self.installed or self.catalog:  # the last columns shortened to the new width
            self._fill(keep_cursor=True)
        self._say_suggestion()

    def _fill(self, keep_cursor: bool = False) -> None:
        """Both lists, their last column (details, licence; the box under them says it whole)
        shortened to the parts or words that fit, or left out where not even a few do: at 80
        columns they ended "can read up to abo" and "Llama 3.1 Community Lic"."""
        t = self.wapp.texts
        for table_id, labels, keys, rows in (
                ("installed", (t("models.col_name"), t("models.col_size"), t("models.col_here"), t("models.col_details")),
                 ("name", "size", HERE, "details"),
                 [(row.name, t.number(row.size_text), self._mark(row), row.details or "–") for row in self.installed]),
                ("catalog", (t("models.col_name"), t("models.col_size"), t("models.col_state"), t("models.col_here"),
                             t("models.col_licence")),
                 ("name", "size", "state", HERE, "licence"),
                 [(row.name, t.number(row.size_text), self._state(row), self._mark(row), row.details) for row in self.catalog])):
            table = self.query_one(f"#{table_id}", DataTable)
            at = table.cursor_row
            table.clear(columns=True)
            pad = 2 * table.cell_padding
            widths = [max(cell_len(text) for text in column) + pad for column in zip(labels, *rows, strict=True)]
            width = self.size.width - table.styles.scrollbar_size_vertical  # (its scroll bar, if any)
            room = width - pad - sum(widths[:-1])
            last = room >= max(cell_len(labels[-1]), 10)
            # "On this PC" (the one before the last) left out too where even without the last the
            # row went past the screen's edge (60 columns): the box under the list says it whole
            keep = len(labels) if last else len(labels) - 1 if sum(widths[:-1]) <= width else len(labels) - 2
            for label, key in zip(labels[:keep], keys, strict=False):
                table.add_column(label, key=key)
            for i, cells in enumerate(rows):  # (keyed by place: ``_mark_cell`` puts a row's mark in its cell)
                table.add_row(*cells[:keep - 1] if last else cells[:keep],
                              *([shortened(cells[-1], room, whole=True)] if last else []), key=str(i))
            if keep_cursor and rows:
                table.move_cursor(row=min(at, len(rows) - 1))

    def _mark_cell(self, row: ModelRow) -> None:
        """``row``'s "On this PC" cell again, its fit just known: in its own cell where the mark fits
        the column's width, both lists again (``_fill``) only where it is wider. Each fit refilled
        both lists, and the columns shifted as the marks came in."""
        for table_id, rows in (("installed", self.installed), ("catalog", self.catalog)):
            at = next((i for i, r in enumerate(rows) if r is row), None)
            if at is None:
                continue
            table = self.query_one(f"#{table_id}", DataTable)
            column = table.columns.get(ColumnKey(HERE))
            if column is None:
                continue  # (the column left out on a narrow screen: the details box says it)
            mark = self._mark(row)
            if cell_len(mark) > column.content_width:
                self._fill(keep_cursor=True)
                return
            table.update_cell(str(at), HERE, mark)

    def _mark(self, row: ModelRow) -> str:
        """The "On this PC" cell: how the model does here, as the details box says it ("…" until known)."""
        suggested = self.suggestion is not None and self.suggestion.is_row(row)
        return integrations.fit_mark(self.fits.get(row), self.wapp.texts, suggested)

    def _state(self, row: ModelRow) -> str:
        """A catalog model's state: installed, not, part downloaded, downloading."""
        t = self.wapp.texts
        return (t("models.installed_yes") if row.installed else t("models.installed_no") if row.unfinished is None
                else t("models.installed_running") if row.unfinished.running
                else t("models.installed_part", done=row.downloaded_text(t)))

    def relabel(self) -> None:
        """F9 while the list shows: its tabs, columns, rows (sizes, details) and the line under
        it in the new language (they stayed in the old one, the columns out of line)."""
        t = self.wapp.texts
        tabs = self.query_one(TabbedContent)
        tabs.get_tab("tab-installed").label = t("models.installed")  # type: ignore[assignment]
        tabs.get_tab("tab-catalog").label = t("models.catalog")  # type: ignore[assignment]
        self.action_reload()

    @work(thread=True, exclusive=True, exit_on_error=False, group="models-list")
    def action_reload(self) -> None:
        t = self.wapp.texts
        try:  # (the list at once: in Turkish each model's vocabulary was read first, seconds on a PC
            # with several large models; each one's own words a token said as it is measured, below)
            installed = integrations.installed_models(t, measure=False)
            catalog = integrations.catalog_models(t)
        except WorkstationError as err:
            self.post_message(TaskFailed(t.error(err)))
            return
        self.post_message(ModelsListed(0, None, data=(installed, catalog)))
        for row in installed:
            if get_current_worker().is_cancelled:
                return
            details = integrations.measured_details(row, t)
            if details is not None and details != row.details and row.path is not None:
                self.post_message(DetailsMeasured(row.path, details))

    @on(DetailsMeasured)
    def _details_measured(self, event: DetailsMeasured) -> None:
        event.stop()
        row = next((r for r in self.installed if r.path == event.path), None)
        if row is None:
            return
        row.details = event.details
        self._fill(keep_cursor=True)
        if self._highlighted() is row:
            self._show_detail()

    @on(ModelsListed)
    def _listed(self, event: ModelsListed) -> None:
        event.stop()
        self.installed, self.catalog = event.data
        self._fill(keep_cursor=True)  # (Down pressed while it came was undone: the cursor went back to the first)
        if self._select_path is not None:  # a model just added (or found added already): the cursor on it
            target, self._select_path = self._select_path, None
            self._put_cursor_on(target)
        self.fits.clear()  # a model pulled, added or deleted changes what fits beside it
        self._generation += 1
        self.suggestion = None
        self._say_suggestion()
        self._show_detail()
        self._work_out_fits()  # the column fills in, row by row (the list shown first)

    def _put_cursor_on(self, target: Path) -> None:
        """The installed list shown, its cursor on the model in file ``target``."""
        at = next((i for i, row in enumerate(self.installed) if row.path is not None
                   and (row.path == target or row.path.resolve() == target.resolve())), None)
        if at is None:
            return
        self.query_one(TabbedContent).active = "tab-installed"
        table = self.query_one("#installed", DataTable)
        table.move_cursor(row=at)
        table.focus()

    # --- the highlighted model, in full ----------------------------------------------------
    def _highlighted(self) -> ModelRow | None:
        if self._active() == "tab-catalog":
            return self._selected("catalog", self.catalog)
        return self._selected("installed", self.installed)

    @on(DataTable.RowHighlighted)
    @on(TabbedContent.TabActivated)
    def _show_detail(self) -> None:
        """Under the table: the highlighted model's details uncut (the table cuts them on a
        narrow terminal), the catalog's description, and whether it fits this PC."""
        row = self._highlighted()
        detail = self.query_one("#model-detail", Static)
        if row is None:
            detail.update("")
            return
        t = self.wapp.texts
        lines = [f"{row.name} · {t.number(row.size_text)} · {row.details}"]
        # whether it runs here before what the catalog says of it: the lines are few (an 80x24
        # terminal cut the speed, a 60x20 one the verdict, when the description came first)
        if row in self.fits:
            if self.fits[row].text:
                lines.append(self.fits[row].text)
            if self.suggestion is not None and self.suggestion.is_row(row):
                lines.append(self.suggestion.reason(t))
        else:
            lines.append(t("models.fit_checking"))
            self._wanted = row  # the worker going down the list works it out next
            if not any(w.group == "models-fit" and not w.is_finished for w in self.workers):
                self._work_out_fits()  # (done with the list, and this one's fit forgotten since)
        description = row.description.get(t.lang) or row.description.get("en")
        if description:
            lines.append(description)
        detail.update("\n".join(lines))
        self._hint()

    def _hint(self) -> None:
        """On the line under the details (an 80x24 terminal cut them off at their end): what U,
        or p and d, do, and Tab where the details go on past the box."""
        row = self._highlighted()
        if self.busy or row is None:
            return
        t = self.wapp.texts
        hint = t("models.use_hint" if row.for_chat else "models.use_hint_not_chat") if row.installed else self._part_hint(row)
        if self.query_one("#model-detail-box", VerticalScroll).show_vertical_scrollbar:
            hint = f"{hint} {t('models.details_key')}".strip()
        self.query_one("#model-task", Label).update(hint)

    def _part_hint(self, row: ModelRow) -> str:
        """What is here of a catalog model's download that stopped half-way, and what p and d do."""
        d, t = row.unfinished, self.wapp.texts
        if d is None:
            return ""
        have = t.number(file_size_text(d.have))
        if d.running:
            return t("models.part_running", name=row.name, have=have)
        return t("models.part_hint", name=row.name, have=have, done=row.downloaded_text(t))

    @work(thread=True, exclusive=True, exit_on_error=False, group="models-fit")
    def _work_out_fits(self) -> None:
        """Every listed model's fit, one after the other (the highlighted one first, where it is
        not known yet), each posted as it is known: the column fills in, the details box says it.
        Cancelled when F4 is left, or the list comes again."""
        worker = get_current_worker()
        # U loads it in place of the loaded model: that one's memory is free for it
        freed = integrations.memory_freed_by_switch(self.wapp.profile, self.wapp.engine)
        texts, replies, current = self.wapp.texts, self.wapp.store.path, self.wapp.profile
        rows = [*self.installed, *self.catalog]
        generation = self._generation
        done: set[ModelRow] = {row for row in rows if row in self.fits}
        while not worker.is_cancelled:
            wanted = self._wanted
            row = wanted if wanted is not None and wanted in rows and wanted not in done \
                else next((r for r in rows if r not in done), None)
            if row is None:
                self.post_message(FitsDone(generation))
                return
            done.add(row)
            # (the context the profile in use gives it said beside the fit's: F3's figure)
            fit = integrations.model_fit_parts(row, texts, freed, replies, current)
            if not worker.is_cancelled:
                self.post_message(FitFound(row, fit, generation))

    @on(FitFound)
    def _fit_found(self, event: FitFound) -> None:
        if event.generation != self._generation:
            return  # (worked out for the list before this one: a cancelled worker's last)
        self.fits[event.row] = event.fit
        self._mark_cell(event.row)
        if self._highlighted() is event.row:
            self._show_detail()

    @on(FitsDone)
    def _fits_done(self, event: FitsDone) -> None:
        if event.generation != self._generation or not all(row in self.fits for row in [*self.installed, *self.catalog]):
            return  # (a list come since: its own worker says it)
        self.suggestion = integrations.suggested_model([*self.installed, *self.catalog], self.fits)
        self._say_suggestion()
        self._fill(keep_cursor=True)
        self._show_detail()

    def _say_suggestion(self) -> None:
        """The line above the lists: the model suggested for this PC, while it is worked out that it
        is, or that none fits."""
        t = self.wapp.texts
        line = self.query_one("#model-suggest", Label)
        # under 30 lines (80x24) its line took the details box's last lines: the ★ in the column
        # and the suggested model's details say it there
        line.display = self.size.height >= 30
        if self.suggestion is not None:
            line.update(self.suggestion.line(t))
        elif self.fits and all(row in self.fits for row in [*self.installed, *self.catalog]):
            line.update(t("models.suggest_none"))
        else:
            line.update(t("models.suggest_checking"))

    def action_other_list(self) -> None:
        """Left or Right: the other tab (installed, catalog), its list ready for the arrows."""
        tabs = self.query_one(TabbedContent)
        tabs.active = "tab-catalog" if tabs.active == "tab-installed" else "tab-installed"
        self._focus_list()

    def _focus_list(self) -> None:
        """The keyboard on the open tab's list, where Up and Down move at once (not the tabs)."""
        tabs = self.query_one(TabbedContent)
        self.query_one("#catalog" if tabs.active == "tab-catalog" else "#installed", DataTable).focus()

    def _active(self) -> str:
        return self.query_one(TabbedContent).active

    def _selected(self, table_id: str, rows: list[ModelRow]) -> ModelRow | None:
        table = self.query_one(f"#{table_id}", DataTable)
        if not rows or table.cursor_row < 0 or table.cursor_row >= len(rows):
            return None
        return rows[table.cursor_row]

    # --- use -----------------------------------------------------------------------------
    def action_use(self) -> None:
        """U: chat with the highlighted model. The profile running it is loaded as F3 loads one
        (the one in use first, then the default); a model no profile runs gets one made for it,
        as ``profiles new`` makes it. Before, a model pulled or added here could not be used
        without writing a profile's YAML by hand, and nothing here said so."""
        t, app = self.wapp.texts, self.wapp
        row = self._highlighted()
        if row is None or self.busy:
            return
        if not row.installed or row.path is None:
            self.notify(t("models.use_pull_first", name=row.name), severity="warning")
            return
        if app.generating or app.loading is not None:  # said before a profile is made, not after
            # (the chat's "press Esc" closed this screen here, and the reply went on)
            busy = t("models.use_busy") if app.generating and app.summarizing is None else app.busy_text()
            self.notify(busy if app.generating else t("chat.loading"), severity="warning")
            return
        current = app.profile
        if current is not None and current.backend != "llama":  # the server is left: said, and how to go back
            said_server = " " + t("models.server_left", profile=current.key)
        else:
            said_server = ""
        try:  # the profile in use runs it (even one with a draft, or one that fits no more beside itself);
            # one whose load failed is loaded again (U was a dead end after it)
            if current is not None and current.backend == "llama" and app.engine is not None \
                    and not app.load_failed and current.key in profiles_using(row.path, drafts=False):
                self.notify(t("models.in_use", name=row.name, profile=current.key))
                return
            found = running(row.path)
            profile = found[0] if found else make_profile(row.path)
        except WorkstationError as err:
            self.notify(t.error(err), severity="error", timeout=10)
            return
        said = (t("models.use_existing", name=row.name, profile=profile.key) if found else
                t("models.use_made", name=row.name, profile=profile.key, file=str(profile.source)))
        # (a model not made for chat, a base model, is said by the load's notes, as F3's load says it:
        # said here too, the same warning showed twice, in two toasts at once)
        said += said_server
        self.app.pop_screen()  # the chat, where the load's progress shows
        app.switch_profile(profile)
        # "Loaded" takes the place of "Loading the profile …", never of a notice saying how to go
        # back or where the profile made is kept (it went a second later, read by no one)
        app.notify(said, timeout=15 if said_server else None, kind=LOAD_NOTICE if found and not said_server else "")

    # --- pull ----------------------------------------------------------------------------
    def action_pull(self) -> None:
        t = self.wapp.texts
        if self._active() != "tab-catalog":
            self.query_one(TabbedContent).active = "tab-catalog"
            self.notify(t("models.pick_catalog"))
            return
        row = self._selected("catalog", self.catalog)
        if row is None or self.busy:
            return
        if row.installed:
            self.notify(t("models.already", name=row.name))
            return
        # asked first, with its size, licence and the disk's free space (p began a 4.9 GB download at once)
        try:
            free = shutil.disk_usage(models_dir() if models_dir().exists() else Path.home()).free
        except OSError:
            free = None
        question = t("models.pull_rest_q" if row.unfinished is not None else "models.pull_q", name=row.name,
                     size=t.number(row.size_text), licence=row.details or "?",
                     free=t.number(file_size_text(free)) if free else "?", done=row.downloaded_text(t))

        def answered(yes: bool | None) -> None:
            if yes:
                self._start_pull(row)

        self.app.push_screen(ConfirmDialog(question, t("models.pull_yes"), t("dialog.cancel"), t.yes_no_keys(),
                                           enter_is_yes=True), answered)

    def _start_pull(self, row: ModelRow) -> None:
        t = self.wapp.texts
        if self.busy:
            return
        self.busy = True
        self.pulling = row.name
        self.query_one("#model-task", Label).update(t("models.pulling", name=row.name))
        bar = self.query_one("#pull-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self.wapp.show_download(row.name)
        self._pull(row.name)

    @work(thread=True, exclusive=True, exit_on_error=False, group="models-pull")
    def _pull(self, name: str) -> None:
        try:
            integrations.pull_model(name, lambda done, total: self.post_message(Progress(done, total)))
        except WorkstationError as err:
            self.post_message(TaskFailed(self.wapp.texts.error(err)))
            return
        except Exception as err:  # noqa: BLE001 - one sentence, the screen stays usable
            self.post_message(TaskFailed(self.wapp.texts("error.pull_failed", what=self.wapp.texts.error(err, foreign=True))))
            return
        self.post_message(Progress(1, 1, label="done"))

    @on(Progress)
    def _progress(self, event: Progress) -> None:
        if isinstance(event, ModelsListed):
            return
        bar = self.query_one("#pull-progress", ProgressBar)
        bar.update(total=event.total, progress=event.done)
        if event.label != "done" and self.pulling:  # 1% to 99% as a load's share is said (it floored to 0%
            # while bytes came); "downloading NAME…" before the first of them, the line gone once it ends
            self.wapp.show_download(self.pulling, part_percent(event.done / event.total)
                                    if event.total and event.done else None)
        if event.label == "done":
            self.wapp.show_download(None)
            self.busy = False
            bar.display = False
            self.query_one("#model-task", Label).update(self.wapp.texts("models.pulled"))
            if self.app.screen is not self:  # left meanwhile: said where they are
                self.app.notify(self.wapp.texts("models.pulled_away", name=self.pulling), timeout=10)
            self.pulling = ""
            self.action_reload()

    @on(TaskFailed)
    def _failed(self, event: TaskFailed) -> None:
        event.stop()
        self.busy = False
        self.pulling = ""
        self.wapp.show_download(None)
        self.query_one("#pull-progress").display = False
        self.query_one("#model-task", Label).update("")
        self.notify(event.reason, severity="error", timeout=10)

    # --- add and delete ------------------------------------------------------------------
    def action_add(self) -> None:
        # a file that is no GGUF model is said in the dialog (the header read; the copy after)
        self.wapp.pick_file(self.wapp.texts("models.add_title"), "model", lambda path, _info: self._add(path),
                            load=read_model_info)

    @work(thread=True, exclusive=True, exit_on_error=False, group="models-add")
    def _add(self, path: Path) -> None:
        try:
            added = integrations.add_model(path)
            key, values = added_phrase(path, added)
        except WorkstationError as err:
            self.post_message(TaskFailed(self.wapp.texts.error(err)))
            return
        except OSError as err:
            self.post_message(TaskFailed(f"{path} cannot be copied ({err.strerror or err})."))
            return
        # said as 'models add' says it (the name the list gives it, where it is; the same file
        # installed already: as which model), and the cursor put on it once listed: the same file
        # added again left the list as it was, the model it is unsought among the others
        self.app.call_from_thread(self._show_added, added.path, self.wapp.texts(key, **values))

    def _show_added(self, target: Path, said: str) -> None:
        self._select_path = target
        self.notify(said, timeout=10)
        self.action_reload()

    def action_delete(self) -> None:
        t = self.wapp.texts
        rows = self.installed if self._active() == "tab-installed" else self.catalog
        table = "installed" if self._active() == "tab-installed" else "catalog"
        row = self._selected(table, rows)
        if row is not None and row.unfinished is not None:
            self._remove_part(row, row.unfinished)
            return
        if row is None or row.path is None or not row.installed:
            return
        path = row.path
        seen = file_state(path)  # (the file as asked about: another put in its place meanwhile stays)

        def confirmed(yes: bool | None) -> None:
            if yes:
                try:
                    delete_model(path, seen)
                except WorkstationError as err:
                    self.notify(self.wapp.texts.error(err), severity="error")
                    self.action_reload()
                    return
                self.notify(t("models.deleted", name=row.name))
                self.action_reload()

        question = (t("models.unlink_q", name=row.name, target=str(path.resolve())) if path.is_symlink()
                    else t("models.delete_q", name=row.name, size=row.size_text))  # as the list names it
        users = profiles_using(path)
        if users:  # the bare question deleted the default model that most profiles run
            question += " " + t("models.delete_used", profiles=", ".join(users))
        info = self.wapp.engine_info
        if info is not None and Path(info.model_path).resolve() == path.resolve():
            question += " " + t("models.delete_loaded")
        self.app.push_screen(
            ConfirmDialog(question, t("dialog.delete"), t("dialog.cancel"), t.yes_no_keys()),
            confirmed,
        )

    def _remove_part(self, row: ModelRow, part: UnfinishedDownload) -> None:
        """D on a catalog model whose download stopped half-way: its part removed, asked first
        (one being downloaded elsewhere now is refused in a sentence: nothing removed)."""
        t = self.wapp.texts

        def confirmed(yes: bool | None) -> None:
            if not yes:
                return
            try:
                remove_unfinished(part)
            except WorkstationError as err:
                self.notify(t.error(err), severity="error")
            else:
                self.notify(t("models.part_removed", name=row.name))
            self.action_reload()

        question = t("models.remove_part_q", name=row.name, have=t.number(file_size_text(part.have)))
        self.app.push_screen(ConfirmDialog(question, t("dialog.delete"), t("dialog.cancel"), t.yes_no_keys()), confirmed)
