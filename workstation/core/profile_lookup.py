"""Finding a profile: -p's NAME, a profile file's path or a model file (load_profile), every
profile listed (list_profiles), 'Did you mean' for a name one typo away, and the profiles that
run a model file (profiles_using) or a model by its name (profiles_running, profile_running)."""

from __future__ import annotations

import dataclasses
import errno
import functools
import os
from pathlib import Path
from typing import Any

from workstation.core.errors import ModelFileError, ProfileError, WorkstationError
from workstation.core.letters import closest_name
from workstation.core.paths import profiles_dir, typed_path
from workstation.core.phrases import Lookup, Phrase, say
from workstation.core.profile_check import profile_from_dict
from workstation.core.profile_folders import link_path, named_profile_file, profile_paths
from workstation.core.profiles import DEFAULT_PROFILE, Profile
from workstation.core.settings_file import read_settings_file


def load_profile_file(path: Path) -> Profile:
    """The profile in the YAML file at ``path``; for a model file (.gguf), the settings a new
    profile for it gets (``model_profile.model_file_profile``), written nowhere."""
    if path.suffix.lower() == ".gguf":
        from workstation.core.model_profile import model_file_profile

        return model_file_profile(path)
    profile = profile_from_dict(read_settings_file(path), str(path), source=path)
    shipped_name = _shipped_names(profiles_dir()).get(profile.name_tr)
    if shipped_name is not None and shipped_name != profile.name:
        # a copy of a shipped profile (office-server.yaml, as README says to make a desk PC's) given a
        # name of its own: the shipped profile's Turkish name is not its name (a Turkish UI showed
        # "Ofis sunucusu" of "Accounting server"); its own name, until it is given a Turkish one too
        profile = dataclasses.replace(profile, name_tr="")
    return profile


@functools.lru_cache(maxsize=4)
def _shipped_names(folder: Path) -> dict[str, str]:
    """The shipped profiles' Turkish names (``name_tr``), each with the English name it goes with."""
    names: dict[str, str] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = read_settings_file(path)
        except WorkstationError:
            continue
        if isinstance(data, dict) and isinstance(data.get("name_tr"), str) and isinstance(data.get("name"), str):
            names.setdefault(data["name_tr"], data["name"])
    return names


def list_profiles(directory: Path | None = None) -> list[Profile | ProfileError]:
    """Every profile in the folder; a broken file is listed as its error, not skipped."""
    result: list[Profile | ProfileError] = []
    for path in profile_paths(directory):
        try:
            result.append(load_profile_file(path))
        except ProfileError as err:
            result.append(err)
    return result


def how_to_make_one(model: str, lookup: Lookup | None = None) -> str:
    """How to run a model file: -p takes profiles, and ``profiles new`` makes one; in
    ``lookup``'s language (English without)."""
    return say([how_to_use(model)], lookup)


def how_to_use(model: str) -> Phrase:
    """``how_to_make_one`` as a phrase, for a sentence said in the app's language later."""
    from workstation.core.invocation import cli, shell_word

    return "model.how_to_use", {"command": cli("profiles new " + shell_word(model))}


def _model_how(model: str, installed: bool) -> Phrase:
    """For ``-p`` naming a model rather than a profile (an installed model's name, or a catalog
    model's): the profile that runs it (``profiles_running``) and the command as typed with that
    profile ("chat -p llama-3.1-8b-instruct-q4_k_m" said only "There is no profile named"), or
    how to make one for it (``installed``), or to download it and make one."""
    from workstation.core.invocation import cli, shell_word, typed_again

    runs = profiles_running(model)
    if runs:
        again = typed_again(model, runs[0]) or f"-p {shell_word(runs[0])}"
        key = "model.run_by_profile" if len(runs) == 1 else "model.run_by_profiles"
        return key, {"profile": runs[0], "profiles": ", ".join(runs), "command": again}
    if installed:
        return how_to_use(model)
    return "model.pull_first", {"pull": cli("models pull " + shell_word(model)),
                                "new": cli("profiles new " + shell_word(model))}


def load_profile(ref: str | None) -> Profile:
    """A profile by name (a file in profiles/ or a profile's ``name``), by path to YAML, or by
    path to a model file (.gguf: the defaults a new profile for it gets). A name longer than any
    file's can be is no profile (``-p`` of 300 characters said "unexpected error: OSError: File
    name too long")."""
    try:
        return _looked_up(ref)
    except OSError as err:
        if err.errno != errno.ENAMETOOLONG:
            raise
        typed = ref or os.environ.get("WORKSTATION_PROFILE") or DEFAULT_PROFILE
        stems = [p.stem for p in profile_paths()]
        raise ProfileError(said=[("profile.no_such", {
            "ref": typed if len(typed) <= 60 else typed[:59] + "…",
            "names": ", ".join(stems) if stems else ("profile.none_here", {}), "meant": "",
            "by": "" if ref else ("profile.named_by_env", {})})]) from None


def profile_title(ref: str, saved: str, lang: str) -> str:
    """A profile's name in the UI's language (``Profile.title``: name_tr in Turkish), as F3 says
    it, by its ref; ``saved`` (the name a reply's record kept) where its file cannot be read now.
    F3's E said "(Office CPU — SmolLM2 135M)" in a Turkish sentence, its list "Ofis CPU'su"."""
    try:
        return load_profile(ref).title(lang) if ref else saved
    except (WorkstationError, OSError):  # (a ref no file can have: a name too long)
        return saved or ref


def _looked_up(ref: str | None) -> Profile:
    named_by = "" if ref else ("WORKSTATION_PROFILE" if os.environ.get("WORKSTATION_PROFILE") else "the default")
    ref = ref or os.environ.get("WORKSTATION_PROFILE") or DEFAULT_PROFILE
    as_path = typed_path(ref)
    if as_path.suffix.lower() == ".gguf":  # a model file: run it as a new profile for it would
        from workstation.core.catalog import resolve_model_path

        in_models = resolve_model_path(ref) if os.sep not in ref else as_path  # (`-p m.gguf` of models/ too)
        return load_profile_file(as_path if as_path.exists() or not in_models.exists() else in_models)
    if os.sep in ref and as_path.suffix not in (".yaml", ".yml") and as_path.is_file():
        return _file_given(as_path)  # (-p ./README.md: read as YAML, "not valid YAML at line 5")
    if as_path.suffix in (".yaml", ".yml") or os.sep in ref:
        named = named_profile_file(as_path.name) if os.sep not in ref else None
        if not as_path.exists() and named is not None:
            return load_profile_file(named)  # 'long-documents.yaml': the file in a profile folder
        return load_profile_file(as_path)
    candidate = named_profile_file(f"{ref}.yaml")
    if candidate is not None:
        return load_profile_file(candidate)
    for path in profile_paths():
        try:
            prof = load_profile_file(path)
        except ProfileError:
            continue
        if prof.name == ref:
            return prof
    from workstation.core.catalog import catalog_entry, resolve_model_path

    installed = resolve_model_path(ref).is_file()  # a model's name (a copy just quantized, say), or a catalog
    if installed or catalog_entry(ref) is not None:  # model's: the profile that runs it, or how to make (or get) one
        raise ProfileError(said=[("profile.is_a_model", {"ref": ref, "how": _model_how(ref, installed)})])
    if as_path.is_file():  # a file there (-p README.md)
        return _file_given(as_path)
    _refused_own_profiles()
    stems = [p.stem for p in profile_paths()]
    names: Any = ", ".join(stems) if stems else ("profile.none_here", {})
    if named_by == "the default":  # no -p given: the profile named is none the person chose
        raise ProfileError(said=[("profile.default_missing", {"ref": ref, "names": names})])
    # (in the language the command or the app says it in: it was English under Turkish)
    raise ProfileError(said=[("profile.no_such", {"ref": ref, "names": names, "meant": close_profile(ref, stems),
                                                   "by": ("profile.named_by_env", {}) if named_by else ""})])


def _refused_own_profiles() -> None:
    """Root in another user's data folder (``sudo serve -p theirs``): the refusal, which names
    whose folder it is and the command to run as them. The profiles there are left out of the
    search (``profile_folders``), and "There is no profile named 'theirs'" was said instead."""
    from workstation.core.errors import WorkstationError
    from workstation.core.paths import user_profiles_dir

    try:
        user_profiles_dir()
    except WorkstationError as err:
        if err.said and err.said[0][0] == "data.other_owner":
            raise


def _file_given(path: Path) -> Profile:
    """``-p`` naming a file that is no profile: a model file whatever its name, or the GGUF
    check's sentence (it said "There is no profile named 'README.md'")."""
    from workstation.core.gguf_check import preflight
    from workstation.core.model_profile import model_file_profile

    try:
        preflight(path)
    except ModelFileError as err:
        raise ProfileError(said=err.said) from None
    return model_file_profile(path)


def close_profile(name: str, names: list[str]) -> Phrase | str:
    """" Did you mean 'office-cpu'?" for a name one typo away from a profile's, case and
    punctuation aside ('' for none), as a phrase."""
    close = closest_name(name, names, cutoff=0.75)
    return ("profile.meant", {"name": close}) if close else ""


def model_file(profile: Profile) -> str:
    """The model file a local profile runs, resolved (a link to the file it points to), as a
    reply's record names it (``turn_record``) and F4 finds this PC's replies with it by; "" for
    a server's profile (its model is a name on that server)."""
    from workstation.core.catalog import resolve_model_path

    return str(resolve_model_path(profile.model).resolve()) if profile.backend == "llama" else ""


def model_file_refs(path: Path) -> list[str]:
    """The profile refs (``Profile.ref``) whose replies the model file at ``path`` wrote, as far
    as a reply kept before records named their model file can tell: the profiles that run it now
    and the file run as it is."""
    return [*profiles_using(path, drafts=False), str(link_path(path))]


def profiles_using(path: Path, *, drafts: bool = True) -> list[str]:
    """The profiles (by key) whose model or draft model (``drafts``) is the file at ``path``."""
    from workstation.core.catalog import resolve_model_path

    link = path.is_symlink()  # a link: the profiles naming it (not those naming its file some other way)

    def same(other: Path) -> bool:
        return link_path(other) == link_path(path) if link else other.resolve() == path.resolve()

    users = []
    for profile in list_profiles():
        if not isinstance(profile, Profile) or profile.backend != "llama":
            continue
        refs = [profile.model, (profile.speculative.draft_model or "") if drafts else ""]
        if any(ref and same(resolve_model_path(ref)) for ref in refs):
            users.append(profile.key)
    return users


def profiles_running(model: str | Path) -> list[str]:
    """The profiles (by key) that run ``model`` as their main model (not a draft), the default
    profile first, then by key: a model file (a path, or an installed model's name) as
    ``profiles_using`` finds it; a name no file has (a catalog model not downloaded), those
    whose ``model`` is that name. The one rule of "which profiles run this model" (F4, fit,
    ``-p`` naming a model, ``profiles new``)."""
    from workstation.core.catalog import resolve_model_path

    path = model if isinstance(model, Path) else resolve_model_path(model)
    if path.is_file():
        keys = profiles_using(path, drafts=False)
    else:
        keys = [p.key for p in list_profiles() if isinstance(p, Profile) and p.backend == "llama" and p.model == str(model)]
    return sorted(keys, key=lambda key: (key != DEFAULT_PROFILE, key))


def profile_running(model: str | Path, current: Profile | None = None) -> Profile | None:
    """The profile whose settings say how ``model`` runs (``profiles_running``): ``current`` (the
    one in use) where it runs it, else the default profile where it does, else the first by key;
    None where none does, or it cannot be read. F4 plans a model as it, and ``fit NAME`` answers
    as it, for a model's name, a catalog name and a .gguf path alike."""
    from workstation.core.catalog import resolve_model_path

    try:
        path = model if isinstance(model, Path) else resolve_model_path(model)
        if current is not None and current.backend == "llama" and (
                Path(model_file(current)).resolve() == path.resolve() if path.is_file() else current.model == str(model)):
            return current
        users = profiles_running(model)
        return load_profile(users[0]) if users else None
    except (WorkstationError, OSError):
        return None
