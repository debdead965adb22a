"""Pick a file from the folders on this PC (Ctrl+O's document, F6's document, F4's GGUF file):
a folder tree that shows only the files the caller can use, and a line to type a path into,
as an office app's Open dialog. Returns the chosen path; what it holds is the caller's to read
(and to say what is wrong with)."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DirectoryTree, Input, Label, Static, TextArea, Tree
from textual.widgets.directory_tree import DirEntry
from textual.widgets.tree import TreeNode

from workstation.core.documents import SUPPORTED_SUFFIXES, name_is_text, shown_name
from workstation.core.errors import WorkstationError
from workstation.core.letters import alphabetical
from workstation.core.paths import typed_path
from workstation.tui.glyphs import UNICODE
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.widgets.line_input import LineInput

KINDS: dict[str, tuple[str, ...]] = {  # what a picker shows and lets pick, by kind
    "document": SUPPORTED_SUFFIXES,  # what the document reader reads
    "model": (".gguf",),
}
def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # no right to look: the reader says so
        return True


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # no right to look
        return False


def usable_paths(paths: Iterable[Path], suffixes: frozenset[str]) -> list[Path]:
    """The folders and the files with one of ``suffixes`` (lower case) of ``paths``, hidden ones
    left out, and links to nothing (picked, "There is no …": it was listed as a file to read)."""
    return [p for p in paths if not p.name.startswith(".")
            and ((p.suffix.lower() in suffixes and _exists(p)) or _is_folder(p))]


class FileTree(DirectoryTree):
    """The folders and the files with one of ``suffixes`` in one folder (its own line left out:
    the path line says it); hidden ones (.cache, .venv) left out. Backspace: the folder above."""

    BINDINGS = [Binding("backspace", "up", "the folder above", show=False)]

    def __init__(self, path: Path, suffixes: Iterable[str], **kwargs: object) -> None:
        self.suffixes = frozenset(s.lower() for s in suffixes)
        self._left = ""  # the folder Backspace went up from, for the cursor to land on
        super().__init__(path, **kwargs)  # type: ignore[arg-type]
        self.show_root = False  # Enter on it folded the whole list away

    def on_mount(self) -> None:
        """Folders and files marked as the terminal can draw them (``app.glyphs``): Textual's
        📁 and 📄 were '??' both on the Linux console and under LANG=C."""
        shapes = getattr(self.app, "glyphs", UNICODE)
        self.ICON_NODE, self.ICON_NODE_EXPANDED, self.ICON_FILE = shapes.folder, shapes.folder_open, shapes.file

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return usable_paths(paths, self.suffixes)

    def _populate_node(self, node: TreeNode[DirEntry], content: Iterable[Path]) -> None:
        """The folders, then the files, each in the alphabet's order (``alphabetical``): Textual
        sorts by ``name.lower()``, which put Ç Ğ Ö Ş Ü ı after z and I apart from i, and has no
        hook for another key."""
        super()._populate_node(node, sorted(content, key=lambda p: (not _is_folder(p), alphabetical(p.name))))
        for child in node.children:  # a name that is no UTF-8 (lat\xfc.txt) drew as lat\udcfc.txt, past the frame
            if child.data is not None and not name_is_text(child.data.path.name):
                child.set_label(shown_name(child.data.path.name))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:  # type: ignore[type-arg]
        """A folder's list is in (at first, or after Backspace): the cursor on its first line
        where that is a folder, so Enter and the arrows work at once (without a root line there
        was no cursor). Never on a file no one chose: a folder typed and Enter, then Enter again,
        attached the folder's first file (the path line had followed the cursor to it); there
        the first Down lands on it."""
        if event.node is self.root and self.cursor_line < 0 and self.root.children:
            left = [n for n in self.root.children if n.data is not None and Path(n.data.path).name == self._left]
            self._left = ""
            if left:  # up from a folder: the cursor on it, as a file manager does
                self.move_cursor(left[0])
            elif self.root.children[0].allow_expand:
                self.cursor_line = 0
        elif event.node is not self.root and event.node.data is not None and isinstance(self.screen, FilePicker):
            # a folder opened in place (Enter on it): an empty one said why, as the folder shown is
            # (it opened with nothing under it and no word)
            self.screen.look_inside(Path(event.node.data.path))

    def action_select_cursor(self) -> None:
        """Enter: the line under the cursor picked or opened; with none yet (a folder whose first
        line is a file is listed without one, ``on_tree_node_expanded``) it did nothing and said
        nothing, and the user pressed it again: the dialog says how to choose a file."""
        picker = self.screen
        if self.cursor_line < 0 and self.root.children and isinstance(picker, FilePicker):
            picker.choose_first()
            return
        super().action_select_cursor()

    def action_up(self) -> None:
        """Out of the folder the cursor is in: a folder opened in the list closes, with the
        cursor on it (it went two levels up, above the folder shown); at the top of the list,
        the folder above the one shown."""
        node = self.cursor_node
        if node is not None and node.parent is not None and node.parent is not self.root:
            folder = node.parent
            folder.collapse()
            self.move_cursor(folder)
            return
        here = Path(os.path.normpath(Path(self.path).absolute()))  # a linked folder's own parent
        if here.parent != here:
            self._left = here.name
            self.path = here.parent


def _starts_a_path(text: str) -> bool:
    return text.startswith(("/", "~", "\\")) or (len(text) > 2 and text[1:3] in (":\\", ":/"))


class PathLine(LineInput):
    """The dialog's path line: a whole path pasted takes the place of the folder written there
    (it went after it: /docs//docs/plan.txt); so does one typed after a path just refused.
    ``pasted``: its next change is a paste's (the list follows a folder pasted without its slash)."""

    pasted = False

    def on_key(self, event: events.Key) -> None:  # before Input's own, which would add the key
        self.pasted = False
        picker = self.screen
        if isinstance(picker, FilePicker) and picker.typed_for_box_below(event):
            return
        char = event.character
        if (isinstance(picker, FilePicker) and picker.refused is not None and picker.refused == self.value
                and char in ("/", "~") and self.cursor_position == len(self.value)):
            # "/tmp/nope" said not to be there, then "/tmp/docs" typed: it became /tmp/nope/tmp/docs
            event.prevent_default()
            event.stop()
            self.put(char)

    def on_paste(self, event: events.Paste) -> None:  # before Input's own, which would insert it
        pasted = event.text.strip().splitlines()[0] if event.text.strip() else ""
        self.pasted = bool(pasted)  # (a name pasted goes in by Input's own: its change is the paste's too)
        if _starts_a_path(pasted):
            event.prevent_default()
            event.stop()
            self.put(pasted)


class FilePicker(AppScreen, ModalScreen[Path | None]):
    """``title``, a path line and the tree of ``start`` (a folder). Enter on a file, a click on
    it, or a file's path typed and Enter picks it; a folder typed and Enter shows that folder;
    Backspace in the tree goes to the folder above; Esc gives None."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False),
                # F6's dialog for a folder: the folder shown summarized from wherever the focus is (its
                # button under the list took three Tabs, and nothing said so); priority: the path line's own
                Binding("ctrl+s", "pick_folder", "summarize this folder", show=False, priority=True)]
    FOLDER_KEY = "Ctrl+S"  # the key above, as the button and the hint name it
    # the list has the focus from the first key (the path line, first in the dialog, took the keys
    # typed at once after Ctrl+O: "/tmp/x.txt" went after the start folder, "/work//tmp/x.txt")
    AUTO_FOCUS = "#picker-tree"

    def __init__(self, title: str, start: Path, kind: str, load: Callable[[Path], Any] | None = None,
                 folders: bool = False) -> None:
        """``kind``: what may be picked, a key of ``KINDS`` ("document", "model"). ``load``: read
        the file picked before the dialog closes (in a thread); what it raises (a photo named
        .txt, a text file named .gguf) is said in the dialog, which stays for another pick, and
        what it returns is ``loaded``. ``folders``: a folder may be picked too (F6 summarizes
        every document in one), by the button under the list: the folder the path line names."""
        super().__init__(classes="dialog-screen")
        self.folders = folders
        self.title_text = title
        self.start = start
        self.suffixes = KINDS[kind]
        self.load = load
        self.loaded: Any = None
        self._typing = False  # keys typed in the list are on their way to the path line
        self.refused: str | None = None  # the path line as it was when what it named was refused
        self._reading: Path | None = None  # the file picked, being read by ``load``
        self._box_below: Input | TextArea | None = None  # the text box typed in when the dialog was opened
        self._line_leads = False  # the list follows a folder typed in the path line: the line stays as typed
        self._choosing = False  # the line under the list says how to choose a file (``choose_first``)
        self._said_inside: Path | None = None  # the folder opened in place the line under the list says is empty
        self._said_empty: Path | None = None  # the folder shown the line under the list says has nothing to open

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        with Vertical(classes="dialog wide", id="file-picker"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            # select_on_focus off: a Backspace to mend one letter emptied the line
            yield PathLine(_folder_text(self.start), placeholder=t("picker.path"), id="picker-path",
                           select_on_focus=False)
            yield FileTree(self.start, self.suffixes, id="picker-tree")
            yield Static("", id="picker-problem", markup=False)
            hint = t("picker.hint", kinds=t.file_kinds(self.suffixes))
            if self.folders:
                hint += " · " + t("picker.hint_folder", shortcut=self.FOLDER_KEY)
            yield Label(hint, classes="dialog-hint", markup=False)
            if self.folders:
                yield Button(t("picker.use_folder", shortcut=self.FOLDER_KEY), id="picker-folder")

    def on_mount(self) -> None:
        tree = self.query_one(FileTree)
        self.watch(tree, "path", self._folder_shown, init=False)
        self._problem("")
        self._look(self.start)
        tree.focus()
        stack = self.app.screen_stack
        below = stack[-2].focused if len(stack) > 1 and stack[-1] is self else None
        self._box_below = below if isinstance(below, (Input, TextArea)) else None

    def typed_for_box_below(self, event: events.Key) -> bool:
        """Whether ``event`` is a key typed for the text box the dialog was opened from (the chat's
        message box), put there: a key read while the file picked is read (the pick is made, the
        question comes next: it went into the path line, "There is no '…/docs/Who has…'", and was
        lost when the dialog closed on the document read). Characters and Backspace go into that
        box; Enter is held back (it picked the file under the list's cursor, unseen); other keys
        are the dialog's. Keys typed after Ctrl+O before the dialog is drawn are the dialog's: a
        path typed at once went into the message box, and Enter opened the start folder."""
        box = self._box_below
        if box is None or not box.is_attached or self._reading is None:
            return False
        if event.key == "backspace":
            box.action_delete_left()
        elif event.is_printable and event.character:
            if isinstance(box, Input):
                box.insert_text_at_cursor(event.character)
            else:
                box.insert(event.character)
        elif event.key != "enter":
            return False
        event.stop()
        event.prevent_default()
        return True

    def on_key(self, event: events.Key) -> None:
        """Typing in the list types in the path line (it had to be reached with Tab first,
        which nothing said): a name goes after the folder shown; a / or ~ starts a path."""
        if self.typed_for_box_below(event):
            return
        tree = self.query_one(FileTree)
        char = event.character
        # (while typing on: a key sent to the list before the line took the focus reaches here
        # with the line focused; it was dropped, and "/tmp/x.txt" typed at once left "/")
        if not (tree.has_focus or self._typing) or not event.is_printable or not char or (char == " " and not self._typing):
            return  # a space starts nothing (the list's own key), but goes into a name being typed
        event.stop()
        event.prevent_default()
        line = self.query_one("#picker-path", PathLine)
        if self._typing:  # the keys after the first reach the list until the line has the focus
            line.put(line.value + char)
        else:
            line.put(char if char in "/~" else _folder_text(Path(tree.path)) + char)
            self._typing = True
        line.focus()

    def on_paste(self, event: events.Paste) -> None:
        """A path pasted while the list has the focus goes to the path line (it was lost)."""
        pasted = event.text.strip().splitlines()[0] if event.text.strip() else ""
        if not pasted:
            return
        event.stop()
        line = self.query_one("#picker-path", PathLine)
        line.pasted = True
        line.put(pasted if _starts_a_path(pasted) else _folder_text(self.folder) + pasted)
        line.focus()

    @on(events.DescendantFocus)
    def _focused(self, event: events.DescendantFocus) -> None:
        if isinstance(event.widget, FileTree):
            self._typing = False  # back in the list: the next key starts a new path

    def _problem(self, text: str, error: bool = True) -> None:
        """A path typed that is not there, or a file that is not what it should be, said inside
        the dialog (it closed it, and the app said so once the dialog was gone); ``error``
        False: a word on what is going on (reading a file)."""
        problem = self.query_one("#picker-problem", Static)
        self._choosing = False
        self._said_empty = None
        problem.update(text)
        problem.display = bool(text)
        problem.set_class(not error, "-busy")
        self.refused = self.query_one("#picker-path", Input).value if text and error else None

    def choose_first(self) -> None:
        """Enter in the list with no file chosen yet: how to choose one (the arrows), said until one is."""
        self._problem(self.wapp.texts("picker.choose_first"), error=False)
        self._choosing = True

    @property
    def folder(self) -> Path:
        """The folder the tree shows now."""
        return Path(self.query_one(FileTree).path)

    def _folder_shown(self, path: str | Path) -> None:
        """The path line says the folder the tree shows (after Backspace, a folder picked); one
        typed there is left as typed: the keys typed after its slash were in the line before the
        list followed it (a busy PC), and putting the folder back erased them (the file's name)."""
        if not self._line_leads:
            self.query_one("#picker-path", PathLine).put(_folder_text(Path(path)))  # (the next key typed goes at its end)
        self._problem("")
        self._look(Path(path))

    @on(Input.Changed, "#picker-path")
    def _typing_folder(self, event: Input.Changed) -> None:
        """A folder typed with its slash at the end is shown in the list at once, as a file
        dialog's list follows the path typed (it waited for Enter, and the list showed the
        folder left while a name in another was typed). A folder pasted, whole, is shown too, with
        its slash or without (a file manager's copy has none): the list stayed where it was."""
        line = event.input
        said = self._said_empty
        # typed: in the line, or in the list on their way to it (``_typing``): keys typed fast (tmux, a
        # quick typist) reach the list before the line has the focus, and "/tmp/x/usb/" typed so was
        # not followed: the list and "Nothing to open in this folder" of the folder left stayed until Enter
        typed = line.has_focus or self._typing
        if said is not None and typed and not _names_folder(event.value, said):
            self._problem("")  # (what the line under the list said of the folder left stayed until Enter)
        if isinstance(line, PathLine) and line.pasted:
            line.pasted = False
        elif not typed or not event.value.endswith(("/", "\\")):
            return
        try:
            path = typed_path(event.value.strip())
        except (OSError, RuntimeError, ValueError):  # (~no_such_user/: said on Enter)
            return
        if not path.is_absolute():
            path = self.folder / path
        tree = self.query_one(FileTree)
        if _is_folder(path) and Path(os.path.normpath(path)) != Path(os.path.normpath(tree.path)):
            self._line_leads = True
            try:
                tree.path = path
            finally:
                self._line_leads = False

    @work(thread=True, exclusive=True, exit_on_error=False, group="picker-look")
    def _look(self, folder: Path) -> None:
        """An empty list says why: nothing usable in the folder, or a folder that cannot be
        opened (the tree showed a blank list: it swallows the error)."""
        note = empty_folder_note(folder, frozenset(s.lower() for s in self.suffixes))
        if note is not None:
            self.app.call_from_thread(self._empty_folder, folder, *note)

    @work(thread=True, exclusive=True, exit_on_error=False, group="picker-look-inside")
    def look_inside(self, folder: Path) -> None:
        """A folder opened in the list (in place, under its line): said as ``_look`` says the folder
        shown, where it is empty."""
        note = empty_folder_note(folder, frozenset(s.lower() for s in self.suffixes))
        if note is not None:
            self.app.call_from_thread(self._empty_folder, folder, *note, inside=True)

    def _opened_inside(self, folder: Path) -> bool:
        """Whether ``folder`` is open in the list now, under the cursor (``look_inside``)."""
        node = self.query_one(FileTree).cursor_node
        return (node is not None and node.data is not None and node.is_expanded
                and Path(node.data.path) == folder)

    def _empty_folder(self, folder: Path, key: str, error: bool, values: dict[str, Any], inside: bool = False) -> None:
        problem = self.query_one("#picker-problem", Static)
        shown = self._opened_inside(folder) if inside else self.folder == folder
        if shown and not problem.display:  # still shown; nothing else said
            t = self.wapp.texts
            words = {k: t.series(v) if isinstance(v, list) else v for k, v in values.items()}
            self._problem(t(key, **words), error=error)
            self._said_inside = folder if inside else None
            self._said_empty = None if inside else folder

    @on(Tree.NodeHighlighted, "#picker-tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:  # type: ignore[type-arg]
        """The path line follows the files highlighted in the tree (Tab then Enter picks one);
        on a folder's line it says the folder shown, for a name to be typed after it."""
        entry, tree = event.node.data, self.query_one(FileTree)
        if self._choosing:  # (chosen: how to choose is said no more)
            self._choosing = False
            self._problem("")
        if self._said_inside is not None and (entry is None or Path(entry.path) != self._said_inside):
            self._said_inside = None  # (a folder opened in place said empty: said no more past it)
            self._problem("")
        if entry is not None and tree.has_focus:
            opens = event.node.allow_expand  # a folder: no look at the disk here
            # (the file's name in sight: a long folder's path showed its start, the name cut off)
            self.query_one("#picker-path", PathLine).put(_folder_text(Path(tree.path)) if opens else str(entry.path))

    @on(DirectoryTree.FileSelected, "#picker-tree")
    def _file_selected(self, event: DirectoryTree.FileSelected) -> None:
        event.stop()
        self._pick(Path(event.path))

    @on(Input.Submitted, "#picker-path")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        raw = event.value.strip()
        if not raw:
            return
        path = typed_path(raw)
        if not path.is_absolute():  # a name typed alone is in the folder shown
            path = self.folder / path
        if _is_folder(path):
            self.query_one(FileTree).path = path
            self.query_one(FileTree).focus()
        elif _exists(path):
            self._pick(path)  # what it holds is the caller's reader's to say
        elif len(named := self._named(path)) == 1:  # "note0001" for the only note0001.txt there
            self._pick(named[0])
        elif named:  # report.docx and report.txt for "report": which one is asked ("There is no …" was not so)
            self._problem(self.wapp.texts("picker.which", name=path.name,
                                          files=self.wapp.texts.series([p.name for p in named], most=len(named))),
                          error=False)
        elif path.is_symlink():  # as the command line says it (it was "there is no …")
            from workstation.core.documents import link_target

            self._problem(self.wapp.texts("doc.broken_link", name=path.name, target=link_target(path)))
        else:  # "pick from the list" only where the list has something to pick
            listed = bool(self.query_one(FileTree).root.children)
            self._problem(self.wapp.texts("picker.missing" if listed else "picker.missing_empty", path=str(path)))

    def _named(self, path: Path) -> list[Path]:
        """The files there named ``path``'s name with an extension the dialog opens, by name (a name
        typed without it: "There is no '…/note0001'" beside note0001.txt); none where it has one."""
        if path.suffix.lower() in self.suffixes:
            return []
        try:
            found = usable_paths(path.parent.glob(f"{glob.escape(path.name)}.*"), frozenset(s.lower() for s in self.suffixes))
        except OSError:
            return []
        return sorted(p for p in found if p.stem == path.name and not _is_folder(p))

    def _pick(self, path: Path) -> None:
        # once: a second Enter or click on its way would close the screen below; a second Enter
        # on the file being read read it again
        if not self.is_current or path == self._reading:
            return
        if self.load is None:
            self.close(path)
            return
        self._problem(self.wapp.texts("picker.reading", name=path.name), error=False)
        self._reading = path
        self._load(path)

    @work(thread=True, exclusive=True, exit_on_error=False, group="picker-load")
    def _load(self, path: Path) -> None:
        assert self.load is not None
        try:
            loaded = self.load(path)
        except WorkstationError as err:
            self.app.call_from_thread(self._not_read, path, self.wapp.texts.error(err))
            return
        except Exception as err:  # noqa: BLE001 - one sentence in the dialog, never a traceback
            self.app.call_from_thread(self._not_read, path,
                                      f"{path.name} cannot be read: {self.wapp.texts.error(err, foreign=True)}")
            return
        self.app.call_from_thread(self._loaded, path, loaded)

    def _not_read(self, path: Path, why: str) -> None:
        if path == self._reading:  # (a file picked before the last one, read on behind it, says nothing)
            self._reading = None
            self._problem(why)

    def _loaded(self, path: Path, loaded: Any) -> None:
        # not after Esc, nor for a file picked before the last one: the thread reading it was
        # left to end, and it closed the dialog with its own file. Under a dialog opened while it
        # was read (Ctrl+Q's question, Ctrl+P's palette), once that one is closed (``close``)
        if path == self._reading and self in self.app.screen_stack:
            self._reading = None
            self.loaded = loaded
            self.close(path)

    @on(Button.Pressed, "#picker-folder")
    def pick_folder(self) -> None:
        """The folder the path line names (typed, or the one shown in the list) picked (``folders``)."""
        raw = self.query_one("#picker-path", PathLine).value.strip()
        try:
            path = typed_path(raw) if raw else self.folder
        except (OSError, RuntimeError, ValueError):
            path = self.folder
        if not path.is_absolute():
            path = self.folder / path
        if not _is_folder(path):  # (a file's name there: the folder it is in)
            path = path.parent if _is_folder(path.parent) else self.folder
        if self.is_current:
            self.close(Path(os.path.normpath(path)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.folders if action == "pick_folder" else True  # (a file's dialog: Ctrl+S is not its)

    def action_pick_folder(self) -> None:
        self.pick_folder()

    def action_cancel(self) -> None:
        self.dismiss(None)


def empty_folder_note(folder: Path, suffixes: frozenset[str]) -> tuple[str, bool, dict[str, Any]] | None:
    """Why the list of ``folder`` is empty (the text's key, whether it is an error, its values:
    a list of words is for ``Texts.series``), or None when it holds a folder or a file with one
    of ``suffixes`` (lower case)."""
    others: list[str] = []  # files of other kinds: "its files are .png"
    try:
        with os.scandir(folder) as entries:  # the first usable entry ends the look (a big network folder)
            for entry in entries:
                path = Path(entry.path)
                if usable_paths([path], suffixes):
                    return None
                if not path.name.startswith("."):
                    others.append(path.suffix.lower() or path.name)
    except PermissionError:
        return "picker.no_permission", True, {}
    except OSError as err:
        return "picker.unreadable", True, {"why": err.strerror or type(err).__name__}
    if others:
        kinds = sorted(set(others), key=lambda kind: (-others.count(kind), kind))
        return "picker.none_usable", False, {"kinds": kinds}
    return "picker.empty", False, {}


def desktop_documents(home: Path) -> list[Path]:
    """The documents folder the desktop names (``XDG_DOCUMENTS_DIR`` in user-dirs.dirs: "Belgeler",
    "Dokumente", "Evrak", whatever its language calls it; Documents and Belgeler were guessed), or
    none: not set, unreadable, or home itself (the desktop's way of saying there is none)."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    try:
        text = (config / "user-dirs.dirs").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    found = re.search(r'^\s*XDG_DOCUMENTS_DIR\s*=\s*"([^"]*)"', text, re.MULTILINE)
    if found is None:
        return []
    named = found.group(1)
    folder = home / named.removeprefix("$HOME").lstrip("/") if named.startswith("$HOME") else Path(named)
    return [] if not folder.is_absolute() or folder == home else [folder]


def start_folder(path: Path | None) -> Path:
    """Where the dialog opens: ``path`` (the last pick's folder) if it is a folder, else the
    nearest folder above it that is there (it may be gone); with none, where people keep their
    documents: Documents in their home folder, or Belgeler (its name on a Turkish desktop: the
    dialog opened elsewhere beside it); where there is none, the folder the app was
    started from (``./run.sh`` from the folder of one's papers: it opened in home, "Nothing to
    open in this folder", and a folder of one's own with nothing in it yet is still where they
    are), unless that is the program's own (where README's ./run.sh and a launcher start it: its
    README is no paper of one's) or the disk's top; else home."""
    try:
        home = Path.home()
    except RuntimeError:  # no home to be found (no HOME, no user entry)
        home = Path("/")
    if path is None:
        for documents in (*desktop_documents(home), home / "Documents", home / "Belgeler"):
            if _is_folder(documents):
                return documents
        try:
            here = Path.cwd()
        except OSError:  # the folder started from deleted since
            return home
        program = Path(__file__).resolve().parents[3]  # the folder of run.sh
        if here == Path(here.anchor):
            return home
        if here.resolve() == program or program in here.resolve().parents:  # (README's ./run.sh: never one's papers)
            return home
        return here
    try:
        path = typed_path(path).absolute()
    except OSError:  # a relative path and the folder started from deleted since
        return home
    for folder in (path, *path.parents):
        if _is_folder(folder):
            return folder
    return home


def _names_folder(typed: str, folder: Path) -> bool:
    """Whether the path line's ``typed`` is in ``folder`` (a name typed after it, or nothing yet)."""
    cut = max(typed.rfind("/"), typed.rfind("\\"))
    if cut < 0:
        return True  # (a name alone: in the folder shown)
    try:
        named = typed_path(typed[: cut + 1] or "/")
    except (OSError, RuntimeError, ValueError):
        return False
    return Path(os.path.normpath(named if named.is_absolute() else folder / named)) == Path(os.path.normpath(folder))


def _folder_text(path: Path) -> str:
    """A folder as the path line shows it: with a slash at the end, for a file name to follow."""
    text = str(path)
    return text if text.endswith(("/", "\\")) else text + "/"
