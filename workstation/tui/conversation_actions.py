"""What is done to a conversation as a whole: renamed (F2), deleted (F8) with the model's cells
kept for it, exported (F7), and its replies or their code copied."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.widgets import ListView

from workstation.core.atomic import named_output
from workstation.core.conversation_export import export_file_name
from workstation.core.conversation_titles import clean_title, one_line
from workstation.core.errors import WorkstationError
from workstation.core.kept_summary import forget_summary_asked_in
from workstation.core.kv_state import NOT_KEPT, KvStateStore
from workstation.core.letters import shortened
from workstation.core.paths import typed_path
from workstation.core.profile_folders import free_path
from workstation.core.store import ConversationStore
from workstation.tui.app_part import AppPart
from workstation.tui.documents_of import is_document_of
from workstation.tui.screens.dialogs import ConfirmDialog, TextPrompt
from workstation.tui.screens.file_picker import start_folder
from workstation.tui.screens.summarize import SummarizeScreen
from workstation.tui.widgets.conversation_list import ConversationItem
from workstation.tui.widgets.message_view import MessageView, code_blocks

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


class ConversationActions(AppPart):
    """The conversation's own actions: rename, delete, export, copy."""

    def _conversation_acted_on(self: WorkstationApp, pick: str, none: str) -> int | None:
        """The conversation F2, F7 and F8 act on: in the list, the one highlighted (F2 renamed
        and F7 saved the open one, whichever the list was walked to: F8 alone took the
        highlighted one), else the open one. None, said (``pick``: the list's line is no
        conversation; ``none``: none is open), where there is none."""
        listed = self.chat_screen.sidebar.query_one("#conversations", ListView)
        if self.focused is listed:
            item = listed.highlighted_child
            other = item.conversation_id if isinstance(item, ConversationItem) else None
            if other is None:  # the new conversation's draft, or "N more": no conversation
                self.notify(self.texts(pick), severity="warning")
                return None
            if other != self.conversation_id:
                try:
                    self.store.get(other, with_messages=False)
                except WorkstationError as err:  # deleted meanwhile in another window
                    self.notify(self.texts.error(err), severity="warning")
                    self.run_worker(self.refresh_sidebar(), exit_on_error=False)
                    return None
                return other
        if self.conversation_id is None:
            self.notify(self.texts(none), severity="warning")
            return None
        if self._open_gone():  # deleted elsewhere: said, not a fall ("no conversation number 1")
            self.run_worker(self._lost_open_conversation(), exit_on_error=False)
            return None
        return self.conversation_id

    def action_rename_conversation(self: WorkstationApp) -> None:
        conv_id = self._conversation_acted_on("conv.pick_to_rename", "conv.none_open")
        if conv_id is None:
            return
        current = self.store.get(conv_id, with_messages=False).title

        async def renamed(title: str | None) -> None:
            if title:
                try:
                    self.store.rename(conv_id, title)
                except WorkstationError as err:  # another conversation's name, or only spaces
                    self.notify(self.texts.error(err), severity="error")
                    return
                await self.refresh_sidebar()

        def taken(title: str) -> str | None:  # another conversation's name: said in the dialog, left open
            try:
                self.store.check_title_free(clean_title(title), but=conv_id)  # as rename cleans it
            except WorkstationError as err:
                return self.texts.error(err)
            return None

        self.push_screen(TextPrompt(self.texts("conv.rename_title"), current, hint=self.texts("dialog.enter_esc"),
                                    check=taken, empty=self.texts("conv.title_empty", title=current)),  # (it kept the
                         renamed)  # old title without a word)

    def action_delete_conversation(self: WorkstationApp) -> None:
        if self.loading is not None:  # the old engine, closing, saves its cells: wait for it
            self.notify(self.texts("chat.loading"), severity="warning")
            return
        conv_id = self._conversation_acted_on("conv.pick_to_delete", "conv.none_open")
        if conv_id is None:
            return
        if conv_id == self.conversation_id and self.generating:  # (another, highlighted in the list, may go)
            self.notify(self.texts("chat.busy"), severity="warning")
            return
        self._ask_to_delete(conv_id, self.store.get(conv_id, with_messages=False).title, self.cells_tag(conv_id))

    def _ask_to_delete(self: WorkstationApp, conv_id: int, title: str, tag: str) -> None:
        """Asked, then the conversation goes with its draft, its KV cells and a summary asked
        about in it; the open one is followed by a new one, another (F8 in the list) leaves
        the open one as it is."""
        async def confirmed(yes: bool | None) -> None:
            if not yes:
                return
            try:  # (a full disk: SQLite needs room to delete too)
                stuck = self.store.delete(conv_id)
            except WorkstationError as err:
                self.notify(self.texts.error(err), severity="error", timeout=15)
                return
            self._forget_cells(self.engine, tag)
            kept = self._kept.get(SummarizeScreen)  # a summary asked about here goes too
            if isinstance(kept, SummarizeScreen):
                await kept.forget_if_asked_in(conv_id)
            else:
                forget_summary_asked_in(self.store, conv_id)
            if conv_id == self.conversation_id:
                await self.clear_search()
                await self.action_new_conversation()
            self._drafts.pop(conv_id, None)
            await self.refresh_sidebar()
            self.notify(self.texts("conv.deleted", title=title))
            for kept_copy in stuck:  # (its text may still be readable there: said, as F8 promised it gone)
                self.notify(self.texts("conv.copy_kept", path=str(kept_copy)), severity="warning", timeout=20)

        typed = self.chat_screen.input_text() if conv_id == self.conversation_id else \
            (self._drafts.get(conv_id) or ("", None))[0]
        self.push_screen(
            ConfirmDialog(self.texts("conv.delete_q", title=title) + (  # its draft goes too: said (it went unsaid)
                " " + self.texts("conv.delete_draft") if typed.strip() else "") + (  # what F8 cannot reach, said
                " " + self.texts("conv.delete_server_keeps", server=self.profile.remote.server_name)
                if self.profile is not None and self.profile.backend != "llama" and self.api is None else ""),
                self.texts("dialog.delete"),
                          self.texts("dialog.cancel"), self.texts.yes_no_keys()),
            confirmed,
        )

    @work(thread=True, exit_on_error=False, group="forget")
    def _forget_cells(self: WorkstationApp, engine: Any, tag: str) -> None:
        """A deleted conversation's KV cells go too: in the engine (they would be saved when
        it closes) and on disk, whichever profile saved them (a state holds the text). In a
        thread: the engine may first finish writing a state of it."""
        if tag == NOT_KEPT:  # a conversation in memory only: nothing on disk, and the cells
            return  # of that tag are the other conversations' too
        if engine is not None:
            try:
                engine.forget(tag)
            except (WorkstationError, OSError):
                pass  # an engine that died saves nothing more; the files go below
        try:
            KvStateStore().forget(tag)  # states saved by other profiles' models
        except (OSError, WorkstationError) as err:
            self.call_from_thread(
                self.notify, self.texts("conv.cells_kept", reason=self.texts.error(err)), severity="warning"
            )

    @work(thread=True, exit_on_error=False, group="forget")
    def _forget_deleted_cells(self: WorkstationApp, store_path: Path) -> None:
        """At start: the saved KV states of conversations deleted since (see forget_deleted)."""
        try:
            store = ConversationStore(store_path)  # (one of its own: a store is for one thread)
            try:
                KvStateStore().forget_deleted(store.identity, store_path,
                                              lambda cid, made: store.title_of(cid, made) is not None)
            finally:
                store.close()
        except (OSError, WorkstationError):
            pass  # tried again at the next start

    def _reply_views(self: WorkstationApp) -> list[MessageView]:
        """The chat's replies with text, the last one last (Ctrl+Y's and Alt+Y's); none: said."""
        replies = [v for v in self.chat_screen.message_views() if v.role == "assistant" and v.content.strip()]
        if not replies:
            self.notify(self.texts("chat.no_reply_to_copy"), severity="warning", kind="copy")
        return replies

    def _last_reply_view(self: WorkstationApp) -> MessageView | None:
        """The chat's last reply with text, or None, said."""
        replies = self._reply_views()
        return replies[-1] if replies else None

    def _copy_hint(self: WorkstationApp) -> str:
        """What a copy's notice ends with (Ctrl+Y's and Alt+Y's): the terminal may drop what the
        app copies (OSC 52), and the notice cannot know; inside tmux (TMUX set), whose default
        ``set-clipboard external`` drops it, the line that lets it through."""
        hint = self.texts("chat.copy_hint", save=self.key_for("conv.export"))
        return hint + " " + self.texts("chat.copy_hint_tmux") if os.environ.get("TMUX") else hint

    def action_copy_reply(self: WorkstationApp) -> None:
        """The last reply to the clipboard (the terminal's, OSC 52): a reply could be copied
        only with the mouse, where the terminal lets a selection through, or by F7's file.
        Pressed again, the reply before it, shown in the chat, and so on round to the last (as
        Alt+Y goes through code blocks): yesterday's letter, a few replies up, could not be."""
        replies = self._reply_views()
        if not replies:
            return
        newest, last = replies[-1].content, self._reply_copied
        back = last[1] + 1 if last is not None and last[0] == newest and last[1] + 1 < len(replies) else 0
        self._reply_copied = (newest, back)
        view = replies[-1 - back]
        text = view.content.strip()
        self.copy_to_clipboard(text)
        again = self.texts("chat.copied_again", again=self.key_for("chat.copy")) if len(replies) > 1 else ""
        if back:
            view.scroll_visible(top=True)
            self.notify(self.texts("chat.copied_earlier", n=f"{len(text):,}", text=shortened(one_line(text), 40))
                        + " " + again + " " + self._copy_hint(), kind="copy")
        else:  # (said in its language by texts: not twice)
            self.notify(self.texts("chat.copied", n=f"{len(text):,}") + (" " + again if again else "")
                        + " " + self._copy_hint(), kind="copy")

    def action_copy_code(self: WorkstationApp) -> None:
        """The last reply's last code block to the clipboard, without its fences (LM Studio's and
        ChatGPT's copy button on a block); pressed again, the block before it, round to the last."""
        view = self._last_reply_view()
        if view is None:
            return
        if self.generating and view is self.reply_view:  # (its last block may be half-written)
            self.notify(self.texts("chat.code_still_written", stop=self.key_for("chat.stop")), severity="warning",
                        kind="copy")
            return
        reply = view.content
        blocks = code_blocks(reply)
        if not blocks:
            self.notify(self.texts("chat.no_code_to_copy", reply_key=self.key_for("chat.copy")), severity="warning",
                        kind="copy")
            return
        last = self._code_copied
        index = (last[1] - 1) % len(blocks) if last is not None and last[0] == reply else len(blocks) - 1
        self._code_copied = (reply, index)
        block = blocks[index]
        code = block.code.rstrip("\n")
        self.copy_to_clipboard(code)
        n_lines = code.count("\n") + 1
        lines = (self.texts("chat.code_line_one") if n_lines == 1 else
                 self.texts("chat.code_lines", n=f"{n_lines:,}"))
        what = f"{block.language}, {lines}" if block.language else lines
        if len(blocks) == 1:
            copied = self.texts("chat.code_copied_one", what=what)
        else:
            copied = self.texts("chat.code_copied", n=self.texts.number(str(index + 1)),
                                of=self.texts.number(str(len(blocks))), what=what, again=self.key_for("chat.copy_code"))
        self.notify(copied + " " + self._copy_hint(), kind="copy")

    def action_export_conversation(self: WorkstationApp) -> None:
        conv_id = self._conversation_acted_on("conv.pick_to_export", "conv.nothing")
        if conv_id is None:
            return
        title = self.store.get(conv_id, with_messages=False).title
        # in the folder a document was last opened from (picked or typed in F6) (the app's own folder, where a launcher
        # starts it, was offered: a file no one looks for there); at first, Documents (``start_folder``)
        folder = start_folder(self.last_folder)
        default = free_path(folder, export_file_name(title))  # another export of this name: a new file, not over it

        def write(path: Path) -> None:
            try:
                written = self.store.export_markdown(conv_id, path, self.texts.get, self.counted_tables())
            except WorkstationError as err:
                self.notify(self.texts.error(err), severity="error")
                return
            self.notify(self.texts("conv.exported", path=str(written)))

        def chosen(typed: str | None) -> None:
            if not typed:
                return
            path = typed_path(typed)
            if not path.is_file():
                write(path)
                return
            t = self.texts
            self.push_screen(  # a file that is there (an earlier export, or a document) is not lost unasked;
                ConfirmDialog(t("conv.export_replace_q", name=path.name), t("dialog.replace"), t("dialog.cancel"),
                              t.yes_no_keys()),  # not replaced, the name is asked again (all was to type again)
                lambda yes: write(path) if yes else ask(typed) if yes is False else None,  # (Esc: leaves)
            )

        def unwritable(typed: str) -> str | None:  # a folder not there, a folder named: said, the dialog left open
            try:
                named_output(typed)
            except WorkstationError as err:
                return self.texts.error(err)
            path = typed_path(typed)
            if is_document_of(path, self.store, conv_id, self._attached_paths):
                # (offered to be replaced: Enter's default kept it; the command line refuses it too)
                return self.texts("conv.export_is_document", name=path.name)
            return None

        def ask(value: str) -> None:
            self.push_screen(TextPrompt(self.texts("conv.export_title"), value, hint=self.texts("dialog.enter_esc"),
                                        check=unwritable, whole=lambda typed: self.texts("conv.export_whole_path",
                                                                                       path=typed)), chosen)

        ask(str(default))
