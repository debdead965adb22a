"""Where profile files are: the user's own folder, the office's and the shipped one, a name's
file in the first that holds one (a user's own hides a shipped one of its name), whose a
profile is, and a copy put aside in the removed folder."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

from workstation.core.letters import alphabetical
from workstation.core.paths import given_profile_folders, profile_folders

if TYPE_CHECKING:
    from workstation.core.profiles import Profile


def profile_paths(directory: Path | None = None) -> list[Path]:
    """The profile files of ``directory``, else of every profile folder by name: a user's own
    file hides a shipped one of the same name, as ``-p NAME`` loads the user's."""
    found: dict[str, Path] = {}
    for folder in [directory] if directory else profile_folders():
        for path in folder.glob("*.yaml"):
            if path.is_file():
                found.setdefault(path.stem, path)
    return sorted(found.values(), key=lambda p: alphabetical(p.name))


def named_profile_file(name: str) -> Path | None:
    """The file ``name`` (``fast.yaml``) in the first profile folder holding one: the user's
    own, then the shipped ones."""
    for folder in profile_folders():
        if (folder / name).is_file():
            return folder / name
    return None


def free_path(folder: Path, name: str) -> Path:
    """``folder / name``, or where a file of that name is there already ``stem-2.yaml``,
    ``stem-3.yaml``...: the first that is no file yet (nothing of the user's is written over)."""
    stem, suffix = Path(name).stem, Path(name).suffix
    for n in itertools.count(1):
        path = folder / (name if n == 1 else f"{stem}-{n}{suffix}")
        if not path.exists() and not path.is_symlink():
            return path
    raise AssertionError  # (unreachable)


REMOVED_FOLDER = "removed"  # in the user's profiles folder: copies put aside, listed as no profile


def set_aside(path: Path) -> Path:
    """A profile file of the user's moved into the ``removed`` folder beside it, where it is no
    profile any longer but is kept (moved back, it is used again); where it went. OSError as it is."""
    folder = path.parent / REMOVED_FOLDER
    folder.mkdir(exist_ok=True)
    kept = free_path(folder, path.name)
    path.rename(kept)
    return kept


def link_path(path: Path) -> Path:
    """A link's own path, one way however it was typed ("../desk/m.gguf", a folder reached by a
    link): its folder resolved, its name as it is (not the file it points to)."""
    return path.absolute().parent.resolve() / path.name


def whose(profile: Profile) -> dict[str, object]:
    """Whether the profile is the user's own (in the data folder, which an update leaves alone)
    and the shipped file of its name it stands in for: a user's file of a shipped name is the
    one ``-p NAME`` loads, and nothing else in the listing said the shipped one was hidden.
    ``from``: whose it is, "yours", "office" (the office's folder, ``WORKSTATION_PROFILES``) or
    "shipped": the listing did not say which came from the office's folder (``profiles list``
    and F3 say it from this)."""
    folder = profile.source.parent.resolve() if profile.source else None
    given = given_profile_folders()
    own = folder is not None and all(folder != f.resolve() for f in given) and any(
        folder == f.resolve() for f in profile_folders())
    office = folder is not None and len(given) > 1 and folder == given[0].resolve()
    hidden = next((f / profile.source.name for f in given if (f / profile.source.name).is_file()), None) \
        if own and profile.source else None
    return {"own": own, "from": "yours" if own else "office" if office else "shipped",
            "hides_shipped": str(hidden) if hidden else None}
