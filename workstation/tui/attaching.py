"""A document going with the next message: picked (Ctrl+O), read, measured against the model's
room, said under the box, and taken off (the message's own form: ``attachment``)."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work

from workstation.core.document_changes import (
    DocumentComparison,
    changes_record,
    looks_like_versions,
    recorded_changes,
)
from workstation.core.documents import FILE_KIND_WORDS
from workstation.core.engine_api import answer_reserve
from workstation.core.phrases import (
    WordsBasis,
    context_basis,
    context_words,
    part_percent,
    rounded_words,
    say,
    words_in,
)
from workstation.core.profiles import Profile, Sampling
from workstation.core.summary_chunks import facts_length, own_text
from workstation.tui import integrations
from workstation.tui.app_part import AppPart
from workstation.tui.messages import (
    AttachedFileFound,
    AttachmentMeasured,
    AttachmentNotMeasured,
    DocumentRead,
    HolderFound,
    TableFactsRead,
    VersionsWeighed,
)
from workstation.tui.screens.file_picker import FilePicker, start_folder
from workstation.tui.screens.summarize import SummarizeScreen

if TYPE_CHECKING:
    from workstation.core.table_facts import SheetFacts
    from workstation.tui.app import WorkstationApp
    from workstation.tui.i18n import Texts


MAX_DOCUMENT_CHARS = 200_000
# the store's app_state: the documents last attached (JSON, oldest first), each its path and its
# text's mark (``text_mark``); an older build's, its path alone
ATTACHED_KEY = "attached"
KEPT_PATHS = 50  # of them
KeptDocument = tuple[Path, str]  # a document attached: its path, and its text's mark ('': not known)
# what the attached document is compared with: the earlier version attached before it (its path and
# text), or the changes the program found between them before (Up put back a message that had them)
Compared = tuple[Path, str] | DocumentComparison


@dataclass(frozen=True)
class Holder:
    """Another of the user's profiles that holds a document too long for this one whole
    (``holding_profile``): ``profile``, the tokens of the document a message there holds
    (``room``), and what they are said in words by (``basis``)."""

    profile: Profile
    room: int
    basis: WordsBasis


def text_mark(text: str) -> str:
    """A document's text as attached, marked: the file of a message's document is known by it (of
    two files of one name, the newest kept was taken, whatever its text)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def recalled_paths(value: str | None) -> list[KeptDocument]:
    """The documents ``ATTACHED_KEY`` kept (none where nothing was, or it cannot be read)."""
    try:
        kept = json.loads(value) if value else []
    except ValueError:
        return []
    found: list[KeptDocument] = []
    for item in kept if isinstance(kept, list) else []:
        if isinstance(item, str) and item:  # (an older build's: its path alone)
            found.append((Path(item), ""))
        elif isinstance(item, dict) and isinstance(item.get("path"), str) and item["path"]:
            found.append((Path(item["path"]), str(item.get("text") or "")))
    return found


def with_kept(documents: list[KeptDocument], added: KeptDocument) -> list[KeptDocument]:
    """``documents`` (oldest first) with ``added`` the newest, once, the newest KEPT_PATHS in all."""
    return [d for d in documents if d[0] != added[0]][-(KEPT_PATHS - 1):] + [added]


def kept_text(documents: list[KeptDocument]) -> str:
    """``documents`` as ``ATTACHED_KEY`` keeps them."""
    return json.dumps([{"path": str(p), "text": mark} if mark else str(p) for p, mark in documents])


def older_name(compared: Compared) -> str:
    """The name of the earlier version ``compared`` is of ("Lease_v1.docx")."""
    return compared.older if isinstance(compared, DocumentComparison) else compared[0].name


def kept_compared(compared: Compared, document: tuple[Path, str]) -> str:
    """``compared`` as a draft keeps it beside ``document`` (JSON): the earlier version's path and
    text, as the draft keeps its document's, or the changes found; and the document's mark."""
    kept: dict[str, Any] = {"document": text_mark(document[1])}
    if isinstance(compared, DocumentComparison):
        kept["changes"] = changes_record(compared)
    else:
        kept.update(path=str(compared[0]), text=compared[1])
    return json.dumps(kept)


def recalled_compared(value: str | None, document: tuple[Path, str] | None) -> Compared | None:
    """What ``kept_compared`` kept, where it was kept beside ``document`` (its text the same);
    None otherwise, or where it cannot be read."""
    try:
        kept = json.loads(value) if value else None
    except ValueError:
        return None
    if not isinstance(kept, dict) or document is None or kept.get("document") != text_mark(document[1]):
        return None
    if isinstance(kept.get("path"), str) and kept["path"] and isinstance(kept.get("text"), str):
        return Path(kept["path"]), kept["text"]
    comparison = recorded_changes(kept.get("changes"))
    return comparison if comparison is not None and comparison.newer == document[0].name else None


class Attachments(AppPart):
    """The document attached to the next message."""

    def action_attach(self: WorkstationApp) -> None:
        self.pick_file(self.texts("chat.attach_title"), "document",
                       lambda path, read: self.post_message(DocumentRead(str(path), *read)),
                       load=integrations.read_document_text)  # a file that is no document: said in the dialog

    def action_detach(self: WorkstationApp) -> None:
        """Take the attached document off the next message (it could only be sent or replaced)."""
        if self.pending_document is not None:
            name = self.pending_document[0].name
            self._attach_document(None)
            self.notify(self.texts("chat.detached", name=name))

    def pick_file(self: WorkstationApp, title: str, kind: str, chosen: Callable[..., object],
                  load: Callable[[Path], Any] | None = None, folders: bool = False) -> None:
        """The Open dialog (Ctrl+O, F6, F4's add), starting where the last pick was (at first,
        Documents, else home: ``start_folder``).
        ``chosen(path)``, or with ``load`` (see FilePicker) ``chosen(path, loaded)``; ``folders``:
        a folder may be picked too (F6)."""
        picker = FilePicker(title, start_folder(self.last_folder), kind, load, folders=folders)

        async def picked(path: Path | None) -> None:
            if path is not None:
                self.remember_folder(path)
                done = chosen(path) if load is None else chosen(path, picker.loaded)
                if inspect.isawaitable(done):
                    await done

        self.push_screen(picker, picked)

    def remember_folder(self: WorkstationApp, document: Path) -> None:
        """The folder ``document`` was opened from: where the Open dialog and F7 start next, this
        start and the next. Picked in the dialog or typed in F6's box (a typed path did not count,
        and F7 offered another folder than the one README names)."""
        folder = document.absolute().parent
        self.last_folder = folder
        self.store_write(lambda: self.store.remember("folder", str(folder)))  # where the next start's dialog opens

    @on(DocumentRead)
    def _document_read(self: WorkstationApp, event: DocumentRead) -> None:
        whole = event.text.rstrip()  # as the message holds it (its trailing blank lines go), so counted
        text = whole
        path = Path(event.path)
        self._attached_paths.add(path)
        if len(text) > MAX_DOCUMENT_CHARS:
            text = text[:MAX_DOCUMENT_CHARS]
            # said on the attachment line, which stays while it is attached (a toast said it too, for
            # 15 s over the chat, the line under it saying the same)
            self._document_sizes[path] = len(whole)
        else:
            self._document_sizes.pop(path, None)
        self._remember_attached(path, text)
        self._document_notes[path] = event.notes
        self._document_facts[path] = event.facts
        before = self.pending_document
        self._attach_document((path, text))
        if before is not None and before[0] != path:
            # a second version of it ("what changed?") or another document: weighed off the screen's
            # thread (two long texts' words compared held the screen up to a second), said then
            self._weighing = (before, (path, text))
            self._weigh_versions(before, (path, text))
        self.chat_screen.focus_prompt()

    @work(thread=True, exclusive=True, exit_on_error=False, group="versions")
    def _weigh_versions(self: WorkstationApp, before: tuple[Path, str], document: tuple[Path, str]) -> None:
        """Whether ``document`` is a second version of ``before`` (``looks_like_versions``)."""
        try:
            alike = looks_like_versions(before[0].name, before[1], document[0].name, document[1])
        except Exception:  # noqa: BLE001 (not weighed: one document goes with a message, as before)
            alike = False
        self.post_message(VersionsWeighed(before, document, alike))

    @on(VersionsWeighed)
    def _versions_weighed(self: WorkstationApp, event: VersionsWeighed) -> None:
        if self._weighing != (event.before, event.document):  # (another attached meanwhile: weighed anew)
            return
        self._weighing = None
        if self.pending_document == event.document:  # (not taken off meanwhile)
            before, name = event.before, event.document[0].name
            if event.alike:
                # a second version of it: both kept, the program lists the changes (it took the
                # first's place, and the small model invented the changes)
                self.notify(self.texts("chat.doc_compared", name=name, old=before[0].name))
                self._attach_document(event.document, compared_with=before)
            else:  # one document goes with a message: said
                self.notify(self.texts("chat.doc_replaced", name=name, old=before[0].name), severity="warning")
        self.send_waiting()  # Enter pressed while they were weighed (``send``): sent now, compared or not

    def counted_tables(self: WorkstationApp) -> list[SheetFacts]:
        """The tables of the documents attached in this run of the app, as the program counted them
        (a message shows their facts in the UI's language: ``MessageView._said``)."""
        return [facts for tables in self._document_facts.values() for facts in tables]

    def _remember_attached(self: WorkstationApp, path: Path, text: str) -> None:
        """``path`` kept among the documents last attached, with its ``text``'s mark, for the next
        start too: a message's document put back by Up after a restart is found by its name and
        its text there (it was a bare name, no file, and its tables' facts were counted no more:
        no "Counted by the program" line)."""
        added = (path.absolute(), text_mark(text))

        def merged(value: str | None) -> str:  # (with what another window kept meanwhile: its paths stay)
            return kept_text(with_kept(recalled_paths(value), added))

        written = self.store_write(lambda: self.store.remember_merged(ATTACHED_KEY, merged))
        self._attached_before = recalled_paths(written) if written is not None \
            else with_kept(self._attached_before, added)

    def attach_again(self: WorkstationApp, name: str, text: str, compared_with: Compared | None = None) -> None:
        """A message's document of ``name`` put back (Up), its words as they were sent: attached at
        once under its name (sent now, they go as they were), then its file looked for off the
        screen's thread (a big workbook read on it held the screen): found, the file takes its
        place, its tables' facts known; not found, that is said. ``compared_with``: the changes
        the program found between it and its earlier version for that message, which go again."""
        provisional = (Path(name), text)
        self.finding_attached = provisional
        self._attach_document(provisional, measure=False, compared_with=compared_with)  # (measured once its file is known)
        self._find_attached_file(provisional, list(self._attached_before))

    @work(thread=True, exclusive=True, exit_on_error=False, group="find-attached")
    def _find_attached_file(self: WorkstationApp, document: tuple[Path, str], kept: list[KeptDocument]) -> None:
        """The file ``document`` (a name, a text) was attached from: the newest of ``kept`` of
        that name whose text is the document's now (of two files of one name, the newest was
        taken, whatever its text, and its table counted for the question). Those kept with
        another text's mark are not read; one kept by an older build (no mark) is. Its tables'
        facts, read with it, go with it (not read again). None: no file has it (moved, changed)."""
        name, text = document[0].name, document[1]
        mark = text_mark(text)
        for path, kept_mark in reversed(kept):
            if path.name != name or kept_mark not in (mark, "") or not path.is_file():
                continue
            try:
                read, _notes, facts = integrations.read_document_text(path)
            except Exception:  # noqa: BLE001 (unreadable now: not the file it was)
                continue
            if read.rstrip()[:MAX_DOCUMENT_CHARS] == text:
                self.post_message(AttachedFileFound(document, path, facts))
                return
        self.post_message(AttachedFileFound(document, None, []))

    @on(AttachedFileFound)
    def _attached_file_found(self: WorkstationApp, event: AttachedFileFound) -> None:
        if self.finding_attached == event.document:
            self.finding_attached = None
        if self.pending_document != event.document:  # (taken off or replaced meanwhile: as it went)
            if self.engine is not None and self.loading is None:  # (Enter's wait was for it: not sent later)
                self._send_when_connected = None
            return
        if event.path is None:  # (its words go as they were; its tables are counted no more: said)
            self.notify(self.texts("chat.document_not_found", name=event.document[0].name,
                                   attach=self.key_for("chat.attach")), severity="warning", timeout=10)
            self._attach_document(event.document, measure=True)
        else:
            self._document_facts.setdefault(event.path, event.facts)
            self._attach_document((event.path, event.document[1]))
        self.send_waiting()  # Enter pressed while it was looked for (``send``): sent now, its facts known

    def _attach_document(self: WorkstationApp, document: tuple[Path, str] | None, *, measure: bool = True,
                         compared_with: Compared | None = None) -> None:
        """``document`` goes with the next message (None: nothing attached); part of the draft,
        saved with it. Measured where it is not yet (``measure``: False where its measuring has
        just failed, said on its line: measured again the next time). ``compared_with``: the
        earlier version it was attached after, or the changes found (the message carries their
        changes); kept while the same document stays attached (its name and text: Up's, found
        in its file), gone with it."""
        changed = document != self.pending_document
        before = self.pending_document
        if compared_with is not None:
            self.compared_with = compared_with
        elif document is None or before is None or document[1] != before[1] or document[0].name != before[0].name:
            self.compared_with = None
        attached = (document is None) != (self.pending_document is None)
        self.pending_document = document
        if attached:
            self.refresh_bindings()  # Ctrl+R (remove it) in the footer and F1 while one is attached
        if changed and self._draft_shown:
            self.draft_edited()
        if document is None:
            self.chat_screen.set_attachment(None)
            return
        t, remove, name = self.texts, self.key_for("chat.detach"), document[0].name
        whole = self._document_sizes.get(document[0], 0)
        measured = self._document_tokens.get(document)
        measuring = measure and measured is None and self.engine is not None and self.profile is not None
        if measuring:  # (tried again: its line says so once it has failed again)
            self._not_measured.pop(document, None)
        words = words_in(document[1])  # (its words counted, as wc -w does and Chinese too: each line says these)
        room = self._attachment_room(measured) if measured is not None else (True, "", 0)
        summarized = self.attached_summary(document)
        facts = facts_length(document[1])  # (the document's own characters said: not the program's facts about it)
        own = len(document[1]) - facts
        own_words = words_in(own_text(document[1]))
        line = (
            # F6 has summarized it: the message asks about the summary in its place (each message
            # flashed and was refused, the document still attached, "Ctrl+R removes it" the only way)
            t("chat.attached_summary", name=name, n=rounded_words(words), remove=remove) if summarized and summarized[1]
            # ... but the file changed since: that summary is of what it was (it was sent as the document's)
            else t("chat.attached_summary_old", name=name, n=rounded_words(words),
                   summarize=self.key_for("summarize.open"), remove=remove) if summarized and room is None
            else t("chat.attached_too_long", name=name, n=rounded_words(words), summarize=self.key_for("summarize.open"),
                   ctx=_message_words(measured, words, self._reserve(measured[1]), t),
                   remove=remove) + self.holder_text(document) if measured is not None and room is None
            # it fits a message, not the room this conversation has left: the model would forget
            # the conversation's start or cut its reply, and nothing said so before Enter
            else t("chat.attached_no_room", name=name, n=rounded_words(words), left=room[1],
                   new=self.key_for("conv.new"), remove=remove) if measured is not None and room is not None and not room[0]
            # in words, as every other line of a document's says its size (it said "(6,737 characters)"
            # until the model had measured it, then "about 1,100 words"); the whole file's estimated
            # from the part read
            else t("chat.attached_cut", name=name, n=rounded_words(own_words),
                   total=rounded_words(own_words * (whole - facts) / max(own, 1)), remove=remove)
            if whole > len(document[1])
            # a CSV or a sheet by its rows and columns ("about 17 words" of 8 rows × 5 columns: a
            # line's cells joined by commas count as one word)
            else t("chat.attached_table", name=name, rows=table.rows, columns=len(table.columns) + table.more_columns,
                   remove=remove) if (table := _one_table(document[0], self._document_facts.get(document[0], [])))
            else t("chat.attached", name=name, n=rounded_words(own_words), remove=remove)
        )
        if self.compared_with is not None:  # (the notice fades: its line says it while it is attached)
            line += " " + t("chat.attached_compared", old=older_name(self.compared_with))
        if measured is not None and room is not None and room[0]:  # how much of the room it takes
            line += " " + t("chat.attached_room", share=room[2])
        elif measured is None and document in self._not_measured:  # its measuring failed: why, and what now
            line += " " + self._not_measured_text(document)
        # and what its reader left out: a workbook's hidden sheets, its cells past the limit
        notes = self._document_notes.get(document[0], [])
        if notes:
            line += " " + " ".join(say([n], t.get) for n in notes)
        self.chat_screen.set_attachment(line)
        if measuring and self.engine is not None and self.profile is not None:
            self._measure_attachment(self.engine, document, self.session_sampling or self.profile.sampling)
        if document[0] not in self._document_facts and document[0].is_file():
            self._recount_facts(document)

    @work(thread=True, exclusive=True, exit_on_error=False, group="facts")
    def _recount_facts(self: WorkstationApp, document: tuple[Path, str]) -> None:
        """The facts of ``document``'s tables, counted again from its file where it is as it was
        attached (its text the same): put back from a draft after a restart, or by Up, its
        tables' facts were in the app's memory no more, and a question about its total got no
        counted line under the reply. A file changed or gone: none (its figures may not be the text's),
        and that said too: each attach (a turn's room changing, F9) read the whole file again."""
        try:
            text, _notes, facts = integrations.read_document_text(document[0])
        except Exception:  # noqa: BLE001 (unreadable now: the text attached goes all the same, without the line)
            text, facts = None, []
        if text is None or text.rstrip()[:MAX_DOCUMENT_CHARS] != document[1]:
            facts = []
        self.post_message(TableFactsRead(document[0], facts))

    @on(TableFactsRead)
    def _table_facts_read(self: WorkstationApp, event: TableFactsRead) -> None:
        self._document_facts.setdefault(event.path, event.facts)

    def attached_summary(self: WorkstationApp, document: tuple[Path, str]) -> tuple[str, bool] | None:
        """The summary F6 has made of ``document`` (whole, not stopped) where the document itself
        does not fit the room this conversation has (``_attachment_room``), and whether it is of
        the file as it is now (``SummarizeScreen.made_of``: its size and time): the message asks
        about it in the document's place only then. None where it fits, or F6 has none of it."""
        measured = self._document_tokens.get(document)
        room = self._attachment_room(measured) if measured is not None else (True, "", 0)
        screen = self._kept.get(SummarizeScreen)  # (opened once at least: it holds the last summary)
        if (room is not None and room[0]) or not isinstance(screen, SummarizeScreen) or screen.running:
            return None
        current = screen.made_of(document[0])
        return None if current is None else (screen.summary, current)

    def attachment_too_long(self: WorkstationApp, document: tuple[Path, str]) -> bool:
        """``document`` is measured, and more than a message of this profile can hold."""
        measured = self._document_tokens.get(document)
        return measured is not None and self._attachment_room(measured) is None

    def attachment_measuring(self: WorkstationApp, document: tuple[Path, str]) -> bool:
        """``document`` is not measured yet, and is being (an engine measures it): whether F6's
        summary goes in its place (``attached_summary``) is not known until it is. Not where its
        measuring failed (``_not_measured``): it said "still being measured" for ever."""
        return document not in self._document_tokens and document not in self._not_measured \
            and self.engine is not None

    def _not_measured_text(self: WorkstationApp, document: tuple[Path, str]) -> str:
        """Why ``document`` could not be measured, and what happens now, in a sentence."""
        reason = self.texts.error(self._not_measured[document], foreign=True).rstrip()
        if not reason.endswith((".", "!", "?")):
            reason += "."
        return self.texts("chat.not_measured", name=document[0].name, reason=reason)

    def _attachment_room(self: WorkstationApp, measured: tuple[int, int, int]) -> tuple[bool, str, int] | None:
        """Whether a document of ``measured`` tokens (as a message, the context, its own) fits the
        room the open conversation has left beside a reply (the whole context before a turn), that
        room in the words the line under the box says it in, and the share of it the document
        takes (of its tokens: its words in the app's words per token read "540 of the 2,700 words
        left" of a 610-word memo, and in its own they contradicted the line under the box);
        None: it fits no message of this profile."""
        tokens, n_ctx, own = measured
        reserve = self._reserve(n_ctx)
        if tokens > n_ctx - reserve:
            return None
        left = self.context_left()
        left = n_ctx - (tokens - own) if left is None else left  # (before a turn: less the instructions)
        basis = self.words_basis() or context_basis(self.texts.get)  # (the model's, once read)
        return (own <= left - reserve, basis.count(max(0, left)),
                part_percent(own / max(1, left)))

    def changes_room(self: WorkstationApp, document: tuple[Path, str]) -> int | None:
        """The tokens a message with ``document`` has left beside it for the program's list of its
        changes from an earlier version (``document_changes.for_the_model``): the room this
        conversation has, less the reply's and the document's (``_attachment_room``'s rule); None
        where it is not measured."""
        measured = self._document_tokens.get(document)
        if measured is None:
            return None
        tokens, n_ctx, own = measured
        left = self.context_left()
        left = n_ctx - (tokens - own) if left is None else left  # (before a turn: less the instructions)
        return max(0, left - self._reserve(n_ctx) - own)

    def _reserve(self: WorkstationApp, n_ctx: int) -> int:
        """The tokens of a context of ``n_ctx`` kept for the reply (``answer_reserve``): a
        message holds the rest, with the instructions."""
        sampling = self.session_sampling or (self.profile.sampling if self.profile is not None else Sampling())
        return answer_reserve(sampling, n_ctx)

    @work(thread=True, exclusive=True, exit_on_error=False, group="measure")
    def _measure_attachment(self: WorkstationApp, engine: Any, document: tuple[Path, str], sampling: Sampling) -> None:
        """Whether the document can go with a message at all, said when it is attached: a long
        one was refused only after Enter, in a toast. Counted as a message of its own (the
        question and the conversation come on top)."""
        try:
            n_ctx = engine.info().n_ctx
            room = n_ctx - answer_reserve(sampling, n_ctx)
            tokens = engine.count_prompt([{"role": "user", "content": document[1]}])
            # its own, in a conversation: less the instructions and the message's frame, counted once
            # there ("Meeting at ten." took "about 26" of the words left, SmolLM2's system prompt in them)
            frame = engine.count_prompt([{"role": "user", "content": ""}])
        except Exception as err:  # noqa: BLE001 (the model or the office server failed: said, not "measuring" for ever)
            self.post_message(AttachmentNotMeasured(document, err))
            return
        self.post_message(AttachmentMeasured(document, tokens, room, n_ctx, max(1, tokens - frame)))

    @on(AttachmentMeasured)
    def _attachment_measured(self: WorkstationApp, event: AttachmentMeasured) -> None:
        measured = (event.tokens, event.n_ctx, event.own)
        self._document_tokens[event.document] = measured
        self._not_measured.pop(event.document, None)
        if self._attachment_room(measured) is None and event.document not in self._holders \
                and self.profile is not None:  # too long here: which other profile holds it whole
            self._find_holder(self.profile, self.engine, event.document, measured, self.session_sampling)
        if self.pending_document == event.document:
            self._attach_document(event.document)  # its line says it now

    @work(thread=True, exclusive=True, exit_on_error=False, group="holder")
    def _find_holder(self: WorkstationApp, current: Profile, engine: Any, document: tuple[Path, str],
                     measured: tuple[int, int, int], sampling: Sampling | None) -> None:
        """``holding_profile`` for ``document`` (in a worker: it plans, and may read a tokenizer)."""
        try:
            holder = holding_profile(current, self.started_profile, engine, document, measured, sampling, self.texts)
        except Exception:  # noqa: BLE001 (none named: the line says what it said before)
            holder = None
        self.post_message(HolderFound(document, holder, current))

    @on(HolderFound)
    def _holder_found(self: WorkstationApp, event: HolderFound) -> None:
        if event.document not in self._document_tokens or event.searched_for is not self.profile:
            # (measured against another profile since: found again there; a search of the profile
            # switched from, ending after the switch, could name the profile now loaded: review28)
            return
        self._holders[event.document] = event.holder
        if self.pending_document == event.document and event.holder is not None:
            self._attach_document(event.document)  # its line names it now

    def holder_text(self: WorkstationApp, document: tuple[Path, str]) -> str:
        """The words naming the profile that holds ``document``
        whole where it is too long for this one, and how to switch to it; "" where none does."""
        holder = self._holders.get(document)
        if holder is None:
            return ""
        t = self.texts
        return " " + t("chat.attached_holder", profile=holder.profile.title(t.lang),
                       words=context_words(holder.room, holder.basis, t.get), press=self.key_for("profile.menu"))

    def document_holder(self: WorkstationApp) -> Profile | None:
        """The profile F3 opens on: the one that holds the attached document whole, where it is
        too long for this one (``holder_text`` names it); None otherwise."""
        document = self.pending_document
        if document is None or not self.attachment_too_long(document):
            return None
        holder = self._holders.get(document)
        return holder.profile if holder is not None else None

    def attached_room(self: WorkstationApp, profile: Profile) -> tuple[str, int, float] | None:
        """The attached document's name, the words of it a message of ``profile`` holds, and its
        words a token, where
        it is measured and ``profile`` runs the model it was measured by (its tokens are those):
        the figure its refusal says (``_message_words``), for F3 to say beside its general one."""
        from workstation.core.profile_check import with_own_sampling
        from workstation.core.profile_lookup import model_file

        document = self.pending_document
        measured = self._document_tokens.get(document) if document is not None else None
        current = self.profile
        if document is None or measured is None or current is None or current.backend != "llama" \
                or profile.backend != "llama" or model_file(profile) != model_file(current):
            return None
        tokens, _n_ctx, own = measured
        # (the conversation's own settings, Ctrl+E's, on top of THIS profile's, as they would be after a switch:
        # the loaded profile's with them gave another profile's entry its reply room)
        sampling = with_own_sampling(profile.sampling, self.own_sampling) or profile.sampling
        room = max(0, profile.context - answer_reserve(sampling, profile.context) - (tokens - own))
        basis = document_basis(measured, words_in(document[1]), self.texts)
        return document[0].name, int(room * basis.per_token), basis.per_token

    @on(AttachmentNotMeasured)
    def _attachment_not_measured(self: WorkstationApp, event: AttachmentNotMeasured) -> None:
        """Said under the box and in a notice (F6 may be the screen shown); the document stays
        attached, measured again the next time it is attached (a turn, F9, a model loaded)."""
        self._not_measured[event.document] = event.error
        if self.pending_document == event.document:
            self._attach_document(event.document, measure=False)  # its line says it now
            self.notify(self._not_measured_text(event.document), severity="warning", timeout=12)


def _one_table(path: Path, tables: list[SheetFacts]) -> SheetFacts | None:
    """The one table a CSV file or a workbook of one sheet is, by which its size is said; else None."""
    kind = FILE_KIND_WORDS.get(path.suffix.lower())
    return tables[0] if len(tables) == 1 and kind in ("picker.kind_csv", "picker.kind_sheet") else None


def _message_words(measured: tuple[int, int, int], words: int, reserve: int, t: Texts) -> str:
    """The words of this document a message of this profile holds (``measured``: the document as
    a message, the context, its own tokens; the context less ``reserve`` for the reply and the
    message's frame with the instructions), by the document's own words a token: the app's English
    three quarters said 3,100 of a 4,096 context beside F6's first part of the same document of
    3,200 words. Fewer than the document's ``words``, as it is too long: the whole context said
    "about 2,600 words: more than a message can hold, which reads up to about 3,000 words of it"."""
    tokens, n_ctx, own = measured
    room = max(0, n_ctx - reserve - (tokens - own))
    return context_words(room, document_basis(measured, words, t), t.get)


def document_basis(measured: tuple[int, int, int], words: int, t: Texts) -> WordsBasis:
    """A document's own words a token (``measured``: as a message, the context, its own tokens),
    which the refusal, the profile holding it (``holding_profile``) and F3 say its room by: the
    UI language's where it has no words. One basis for all three: the refusal said "holds 3,500 of
    this document" and F3 "a message up to about 2,300" of the same profile."""
    own = measured[2]
    return WordsBasis(words / own, "document") if own > 0 and words > 0 else context_basis(t.get)


def holding_profile(current: Profile, also: Profile | None, engine: Any, document: tuple[Path, str],
                    measured: tuple[int, int, int], sampling: Sampling | None, t: Texts) -> Holder | None:
    """Which of the profiles F3 lists (``listed_profiles``) holds ``document`` whole, where it is
    too long for a message of ``current`` (``measured`` there: the document as a message, the
    context, its own tokens): a local one, its model here, whose message room by the rule this
    one's is measured by (the context less ``answer_reserve`` and the message's frame) holds the
    document's tokens, and which the planner says fits this PC (``plan_for_profile``, as F3's
    verdict; the loaded model's memory counted free, as a switch closes it). The same model
    first (its tokens are the ones measured), then the least memory. Another model's tokens are
    estimated from the document's words by its figure for the UI's language: its tokenizer is
    another. None: none does (a secretary summarized a letter the "Long documents" profile held
    whole, and asked the small model's invented summary for a figure the letter had)."""
    from workstation.core.errors import WorkstationError
    from workstation.core.language_words import model_figures
    from workstation.core.profile_lookup import model_file
    from workstation.core.profile_plan import plan_for_profile
    from workstation.tui.screens.profile_menu import listed_profiles, same_file

    if current.backend != "llama":  # (a desk PC's: its office's server says what it reads)
        return None
    tokens, _n_ctx, own = measured
    frame = tokens - own  # (the instructions and the message's frame, counted once)
    words = words_in(document[1])
    loaded = model_file(current)
    freed = integrations.memory_freed_by_switch(current, engine)
    found: list[tuple[tuple[bool, int], Holder]] = []
    for entry in listed_profiles(current, also):
        if not isinstance(entry, Profile) or entry.backend != "llama" or same_file(entry, current):
            continue
        try:
            plan = plan_for_profile(entry, freed=freed)  # (its model or draft not here: it raises)
        except WorkstationError:
            continue
        if not plan.fits:
            continue
        same = model_file(entry) == loaded
        if same:  # by the document's own words a token, as this profile's line says its room
            basis = document_basis(measured, words, t)
            needed = own
        else:
            basis = context_basis(t.get, model_figures(model_file(entry), t.get))
            needed = math.ceil(words / basis.per_token)
        room = entry.context - answer_reserve(sampling or entry.sampling, entry.context) - frame
        if needed <= room:
            found.append(((not same, plan.total_bytes), Holder(entry, room, basis)))
    return min(found, key=lambda f: f[0])[1] if found else None
