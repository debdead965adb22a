"""Pick a file from the folders on this PC (Ctrl+O's document, F6's document, F4's GGUF file):
a folder tree that shows only the files the caller can use, and a line to type a path into,
as an office app's Open dialog. Returns the chosen path; what it holds is the caller's to read
(and to say what is wrong with)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DirectoryTree, Input, Label, Tree

from workstation.core.documents import SUPPORTED_SUFFIXES
from workstation.tui.screens.app_screen import AppScreen

KINDS: dict[str, tuple[str, ...]] = {  # what a picker shows and lets pick, by kind
    "document": SUPPORTED_SUFFIXES,  # what the document reader reads
    "model": (".gguf",),
}


class FileTree(DirectoryTree):
    """Folders and the files with one of ``suffixes``; hidden ones (.cache, .venv) left out."""

    BINDINGS = [Binding("backspace", "up", "the folder above", show=False)]

    def __init__(self, path: Path, suffixes: Iterable[str], **kwargs: object) -> None:
        self.suffixes = frozenset(s.lower() for s in suffixes)
        super().__init__(path, **kwargs)  # type: ignore[arg-type]

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [p for p in paths
                if not p.name.startswith(".") and (self._safe_is_dir(p) or p.suffix.lower() in self.suffixes)]

    def action_up(self) -> None:
        here = Path(self.path).expanduser().resolve()
        if here.parent != here:
            self.path = here.parent


class FilePicker(AppScreen, ModalScreen[Path | None]):
    """``title``, a path line and the tree of ``start`` (a folder). Enter on a file, a click on
    it, or a file's path typed and Enter picks it; a folder typed and Enter shows that folder;
    Backspace in the tree goes to the folder above; Esc gives None."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    def __init__(self, title: str, start: Path, kind: str) -> None:
        """``kind``: what may be picked, a key of ``KINDS`` ("document", "model")."""
        super().__init__(classes="dialog-screen")
        self.title_text = title
        self.start = _existing_folder(start)
        self.kind = kind
        self.suffixes = KINDS[kind]

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        with Vertical(classes="dialog wide", id="file-picker"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield Input(_folder_text(self.start), placeholder=t("picker.path"), id="picker-path")
            yield FileTree(self.start, self.suffixes, id="picker-tree")
            yield Label(t("picker.hint", kinds=t(f"picker.kind.{self.kind}")), classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one(FileTree).focus()

    @property
    def folder(self) -> Path:
        """The folder the tree shows now."""
        return Path(self.query_one(FileTree).path)

    @on(Tree.NodeHighlighted, "#picker-tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:  # type: ignore[type-arg]
        """The path line follows the tree: Tab then Enter picks what is highlighted."""
        entry = event.node.data
        if entry is not None and self.query_one(FileTree).has_focus:
            path = Path(entry.path)
            self.query_one("#picker-path", Input).value = _folder_text(path) if path.is_dir() else str(path)

    @on(DirectoryTree.FileSelected, "#picker-tree")
    def _file_selected(self, event: DirectoryTree.FileSelected) -> None:
        event.stop()
        self.dismiss(Path(event.path))

    @on(Input.Submitted, "#picker-path")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        raw = event.value.strip()
        if not raw:
            return
        path = Path(raw).expanduser()
        if not path.is_absolute():  # a name typed alone is in the folder shown
            path = self.folder / path
        if path.is_dir():
            self.query_one(FileTree).path = path
            event.input.value = _folder_text(path)
            self.query_one(FileTree).focus()
        else:
            self.dismiss(path)  # a file, or none: the caller's reader says what is wrong

    def action_cancel(self) -> None:
        self.dismiss(None)


def _existing_folder(path: Path) -> Path:
    """``path`` if it is a folder, else the nearest folder above it that is there."""
    path = path.expanduser().absolute()
    for folder in (path, *path.parents):
        if folder.is_dir():
            return folder
    return Path.home()


def _folder_text(path: Path) -> str:
    """A folder as the path line shows it: with a slash at the end, for a file name to follow."""
    text = str(path)
    return text if text.endswith(("/", "\\")) else text + "/"
