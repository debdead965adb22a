"""Where things live: the checkout's models/ and profiles/, and the user's data directory
(conversations, caches and the user's own profiles)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from platformdirs import user_data_dir

PACKAGE_DIR = Path(__file__).resolve().parent.parent
PROJECT_DIR = PACKAGE_DIR.parent


def models_dir() -> Path:
    """The folder GGUF models are kept in (``WORKSTATION_MODELS`` overrides it)."""
    return Path(os.environ.get("WORKSTATION_MODELS", PROJECT_DIR / "models"))


SHIPPED_PROFILES = PROJECT_DIR / "profiles"


def profiles_dir() -> Path:
    """The folder of the profiles shipped with the app (this checkout's profiles/)."""
    return SHIPPED_PROFILES


def given_profile_folders() -> list[Path]:
    """The profiles given to the user, not theirs to change, the first found by name winning:
    an office's folder (``WORKSTATION_PROFILES``), then the shipped ones. The office's folder
    adds to the shipped ones: used in their place, it had to be a copy of profiles/ and never
    got the profiles an update ships."""
    office = os.environ.get("WORKSTATION_PROFILES", "").strip()
    shipped = profiles_dir()
    if not office or typed_path(office).resolve() == shipped.resolve():
        return [shipped]
    return [typed_path(office), shipped]


def extra_model_dirs() -> list[Path]:
    """The folders ``WORKSTATION_MODEL_DIRS`` adds to models/ (os.pathsep-separated)."""
    return [typed_path(extra.strip()) for extra in os.environ.get("WORKSTATION_MODEL_DIRS", "").split(os.pathsep)
            if extra.strip()]


def office_folder_problem() -> list[tuple[str, dict[str, str]]]:
    """The office's folders (``WORKSTATION_PROFILES``, each of ``WORKSTATION_MODEL_DIRS``)
    named but not there, as sentences (``phrases.say``); [] where they are there or not named.
    A typo in one left the office's profiles, or a shared drive's models, out without a word."""
    office = os.environ.get("WORKSTATION_PROFILES", "").strip()
    said = [] if not office or typed_path(office).is_dir() else [("profiles.office_missing", {"path": office})]
    # the separator this OS reads there (";" on Windows, where ":" is a drive's own: "C:\\models")
    return said + [("models.dir_missing", {"path": str(folder), "sep": os.pathsep}) for folder in extra_model_dirs()
                   if not folder.is_dir()]


def user_profiles_dir() -> Path:
    """The user's own profiles: those ``profiles new`` and F4's U make, and any written by hand.
    They live in the data folder, not in the checkout: there an update that ships a profile of
    the same name stopped ``git pull`` ("untracked working tree files would be overwritten"),
    and a checkout installed read-only for everyone took none."""
    return data_dir() / "profiles"


def profile_folders() -> list[Path]:
    """Where a profile is looked for by name, the first found winning: the user's own, then
    an office's (``WORKSTATION_PROFILES``), then the shipped ones. A data folder that cannot be
    used leaves the others (a listing goes on; making a profile says why)."""
    from workstation.core.errors import WorkstationError

    try:
        return [user_profiles_dir(), *given_profile_folders()]
    except WorkstationError:
        return given_profile_folders()


def data_dir() -> Path:
    """Per-user data: conversations, bench results (``WORKSTATION_DATA`` overrides it). The
    folder is its owner's alone (0700): conversations, saved KV caches and an audit trail with
    content hold what people wrote. The default folder is made so again if it was looser; a
    folder named by WORKSTATION_DATA keeps the mode its owner gave it."""
    chosen = os.environ.get("WORKSTATION_DATA")
    path = typed_path(chosen) if chosen else Path(user_data_dir("workstation", appauthor=False))
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as err:  # a file of that name, /proc/…, no permission: one sentence, not FileExistsError
        from workstation.core.atomic import write_problem
        from workstation.core.errors import WorkstationError

        why = (("file.not_a_folder", {"folder": str(path)}) if path.exists() and not path.is_dir()
               else write_problem(path, err))
        raise WorkstationError(said=[("data.unusable", {"path": str(path), "why": why})]) from None
    _refuse_root_in_anothers(path)
    if not chosen:
        _tighten(path, 0o700)
    return path


def _refuse_root_in_anothers(path: Path) -> None:
    """Root at work in a data folder that belongs to another user (the service's
    /var/lib/workstation, with ``sudo keys add``; a person's, under ``sudo -E``) made files
    there only root can open (0600): the service then would not start ("The key file ... cannot
    be opened"), or the person's app lost its conversations. Say whose folder it is, and how to
    run the command as them, before anything is written. ``WORKSTATION_ALLOW_ROOT=1`` lets root
    work there: in a container, with a folder of the host's user mounted, that user may not exist
    (no ``sudo -u``), and the refusal left no way through."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or os.environ.get("WORKSTATION_ALLOW_ROOT") == "1":
        return
    try:
        owner = path.stat().st_uid
    except OSError:
        return
    if owner == 0:
        return
    import pwd
    import sys

    from workstation.core.errors import WorkstationError
    from workstation.core.invocation import cli, shell_word

    try:
        user = as_user = pwd.getpwuid(owner).pw_name
    except KeyError:  # a user id with no name here (sudo -u '#1001' takes it)
        user, as_user = f"id {owner}", f"#{owner}"
    typed = cli(" ".join(shell_word(word) for word in sys.argv[1:]))
    advice = f"sudo -u {shell_word(as_user)} env WORKSTATION_DATA={shell_word(str(path))} {typed}"
    raise WorkstationError(said=[("data.other_owner", {"path": str(path), "user": user, "command": advice})])


def kld_dir() -> Path:
    """Where KL divergence reference logits are kept (``WORKSTATION_KLD_CACHE`` overrides it)."""
    env = os.environ.get("WORKSTATION_KLD_CACHE")
    return Path(env) if env else data_dir() / "kld"


def cache_dir() -> Path:
    """Downloads and build caches shared by checkouts (``XDG_CACHE_HOME``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = base / "workstation"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _shell_words(text: str) -> list[str]:
    """``text`` split as a POSIX shell would; [] where it is no shell's words (an apostrophe
    in a name between quotes that do not escape it: the quotes are stripped as before)."""
    import shlex

    try:
        return shlex.split(text)
    except ValueError:
        return []


def _there(text: str) -> bool:
    try:
        return Path(text).expanduser().exists()
    except (RuntimeError, OSError):
        return False


def typed_path(text: str | os.PathLike[str]) -> Path:
    """A path a person typed or set, ``~`` and ``~user`` expanded where they can be; as typed
    where not (``~nobody/x`` raised RuntimeError: the caller's "not found" says it instead).
    A path pasted from a file manager is taken as it meant: in quotes ('/a/b c.pdf', as
    GNOME's and KDE's copy a name with spaces), as a shell writes it (``'John'\\''s notes.pdf'``,
    ``Q3\\ report.pdf``: a terminal's drag and drop) or as a ``file://`` address."""
    if isinstance(text, str):
        text = text.strip()
        if os.name != "nt" and (text[:1] in "'\"" or "\\" in text) and not _there(text):
            # (a backslash is Windows' separator; a name that is there as typed is taken as typed:
            # a\b.txt was read as ab.txt)
            words = _shell_words(text)
            if len(words) == 1 and (_there(words[0]) or Path(words[0]).expanduser().parent.is_dir()):
                text = words[0]
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        if text.startswith("file://"):
            from urllib.parse import unquote, urlparse

            text = unquote(urlparse(text).path) or text
    path = Path(text)
    try:
        return path.expanduser()
    except RuntimeError:  # no such user, or no home directory to expand to
        return path


def own_file(path: Path) -> None:
    """``path`` made, or kept, its owner's alone (0600): in a data folder of mode 755 given by
    WORKSTATION_DATA the usage file and the audit trail (everyone's prompts, with
    --audit-content) were 644; one made so before is tightened too. SQLite's -wal and -shm
    copy the database's mode."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        _tighten(path, 0o600)


def own_folder(path: Path) -> None:
    """``path`` made, or kept, its owner's alone (0700), as ``own_file``."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    _tighten(path, 0o700)


def _tighten(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):  # not ours to change: it stays as it is
        st = path.stat()
        if st.st_mode & 0o077 and st.st_uid == os.getuid():
            path.chmod(mode)
