"""A profile for an installed model: what ``profiles new MODEL`` and F4's U make.

Before it, a model pulled or added could only be run by writing a YAML file by hand (``-p``
takes profiles); LM Studio and Ollama run a model once it is chosen. The profile made is short:
the model, a context the model was trained for (at most the default's 4,096), the defaults for
the rest, written so a person can see and change them.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
import unicodedata
from pathlib import Path

import yaml

from workstation.core.atomic import cannot_write, umask
from workstation.core.catalog import model_dirs, resolve_model_path
from workstation.core.errors import ProfileError
from workstation.core.installed_models import inside_dir, installed_name
from workstation.core.model_info import read_model_info
from workstation.core.paths import profiles_dir, user_profiles_dir
from workstation.core.profile_check import CONTEXT_RANGE, context_allowed, profile_from_dict
from workstation.core.profile_folders import link_path, named_profile_file
from workstation.core.profile_lookup import (
    list_profiles,
    load_profile_file,
    profiles_running,
)
from workstation.core.profile_readiness import effective_settings, readiness
from workstation.core.profiles import DEFAULT_PROFILE, Profile

NEW_CONTEXT = Profile.context  # the default profile's context: what an office PC holds easily


def new_context(trained: int) -> int:
    """The context a new profile for a model trained for ``trained`` tokens gets (``profiles new``,
    F4's U, ``fit`` of a model no profile runs, F4's fit of it): its trained length, at most
    ``NEW_CONTEXT`` (that, where the model does not say)."""
    return min(NEW_CONTEXT, trained) if trained > 0 else NEW_CONTEXT

SYSTEM_PROMPT = "You are a helpful assistant for office work. Answer clearly and briefly, in the language the user writes in."  # (English alone: the model answered Turkish questions in English)


def file_key(name: str) -> str:
    """The file name (without .yaml) a profile named ``name`` gets: lower-case ASCII letters,
    digits, dots and dashes, letters with marks written without them ("Çağrı Özet" ->
    "cagri-ozet", "SmolLM2-135M-Instruct.Q4_0" -> "smollm2-135m-instruct.q4_0"); "" where
    nothing of it can be written so ("Отчёты")."""
    name = re.sub(r"\.ya?ml$", "", name.strip(), flags=re.IGNORECASE)  # "gem.yaml": gem.yaml.yaml, -p found none
    plain = unicodedata.normalize("NFKD", name.replace("ı", "i").replace("İ", "I").replace("ß", "ss"))
    ascii_only = plain.encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9._-]+", "-", ascii_only).strip("-._")


def running(path: Path) -> list[Profile]:
    """The profiles that run the model at ``path`` as it is, the default profile first: its
    main model (not a draft), no draft model of their own (a second model, maybe not downloaded:
    a pulled Qwen3 8B named the GPU profile that needs Qwen3 0.6B too), and ready to run here.
    None is ready: the one made for it before, fitting or not (what fits changes with the
    memory free this minute, and one made while too little was free was made again each time)."""
    keys = set(profiles_running(path))
    status = {p.key: (p, readiness(effective_settings(p))[0]) for p in list_profiles()
              if isinstance(p, Profile) and p.key in keys and p.speculative.mode != "draft"}
    made = _made_key(path)  # the one made for it by U or `profiles new`, next
    found = [p for p, said in status.values() if said == "ready"] or [
        p for p, said in status.values() if said == "does not fit" and re.fullmatch(rf"{re.escape(made)}(-\d+)?", p.key)]
    return sorted(found, key=lambda p: (p.key != DEFAULT_PROFILE, p.key != made, p.key))


def _made_key(path: Path, title: str = "") -> str:
    """The file name a profile made for the model at ``path`` gets (before -2, -3 …): the
    ``title``'s, else the model's, else "model" (a name of no Latin letters)."""
    return file_key(title) or file_key(installed_name(path)) or "model"


def model_ref(path: Path) -> str:
    """The name the profile gives its model: the installed name where it finds this file again
    (``models list`` names it so; a link in models/ by the link's name, as F4 lists it), else
    the file's whole path (a model outside the models folders)."""
    name = installed_name(path)
    if any(inside_dir(path, d) for d in model_dirs() if d.is_dir()) \
            and resolve_model_path(name).absolute() == path.absolute():
        return name
    # a link by its own path, as the profiles running it are found (its target's was not found again)
    return str(link_path(path) if path.is_symlink() else path.resolve())


def _write_new(folder: Path, key: str, text: str, chosen: bool) -> Path:
    """``text`` as ``folder/KEY.yaml``, never over a file that is there (two runs at once
    included) nor with the name of a profile in another folder (a shipped one it would hide):
    a name taken is refused where it was ``chosen``, else -2, -3 … is tried. The file appears
    whole (linked from a file written beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".new")  # one per call (threads too)
    draft = Path(name)
    try:
        os.fchmod(handle, 0o666 & ~umask())  # as any file written: mkstemp's 0600 kept others out
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        n = 1
        while True:
            target = folder / (f"{key}.yaml" if n == 1 else f"{key}-{n}.yaml")
            try:
                try:
                    if named_profile_file(target.name) is not None:
                        raise FileExistsError(target)
                    os.link(draft, target)  # fails where the name is taken, at once
                except FileExistsError:
                    raise
                except OSError:  # a file system without hard links: created only where there is none
                    with open(target, "x", encoding="utf-8") as out:
                        out.write(text)
                return target
            except FileExistsError:
                if chosen:
                    raise ProfileError(f"There is already a profile named '{key}' "
                                       f"({named_profile_file(target.name) or target}); choose another name.") from None
                n += 1
    finally:
        with contextlib.suppress(OSError):
            draft.unlink()


def new_profile_settings(path: Path, name: str | None = None, context: int | None = None) -> dict[str, object]:
    """The settings a new profile for the model at ``path`` gets (what ``make_profile`` writes,
    and what ``-p model.gguf`` runs with): the model, a context it was trained for (at most
    4,096), the defaults for the rest. ModelFileError for a file that is missing, no GGUF file
    or damaged (the GGUF check's sentence); ProfileError for a context not allowed."""
    info = read_model_info(path)  # a file that is no model, or a damaged one, says so here
    if context is not None and not context_allowed(context):
        raise ProfileError(f"A context of {context} tokens cannot be used; {CONTEXT_RANGE}.")
    if context is None:
        context = new_context(info.context_length)
    model = installed_name(path)
    title = (name or "").strip() or model
    return {
        "name": title,
        # (F3 shows it: "change its settings in this file" named no file there; the comment above says it)
        "description": f"Runs {model}, with settings chosen for this PC.",
        "name_tr": title,
        "description_tr": f"{model} modelini bu bilgisayar için seçilmiş ayarlarla çalıştırır.",
        "backend": "llama",
        "model": model_ref(path),
        "context": context,
        "gpu_layers": "auto",
        "threads": "auto",
        "system_prompt": SYSTEM_PROMPT,
    }


def model_file_profile(path: Path) -> Profile:
    """The profile ``-p ~/Downloads/model.gguf`` runs: a new profile's settings for that file,
    written nowhere (as LM Studio and Ollama run a file chosen). Its source is the model file,
    so its key is the file's name and its ``ref`` the file's path: a conversation had with it
    loads it again the same way."""
    return profile_from_dict(new_profile_settings(path), str(path), source=path.absolute())


def model_default_profile(ref: str) -> Profile | None:
    """The profile ``profiles new`` would make for the model named ``ref`` (an installed model's
    name, or a catalog model's, downloaded or not), written nowhere, where no profile runs it;
    None where ``ref`` names no model, or profiles run it (``-p`` names them). ``fit`` answers
    for it: "fit llama-3.2-1b-instruct-q4_k_m" said "is a model, not a profile; download it
    first", where F4 gives the estimate before a download. A catalog model not downloaded gets
    the context its published shape was trained for (at most the default's), as its file would."""
    from workstation.core.catalog import catalog_entry
    from workstation.core.model_shapes import catalog_model

    path = resolve_model_path(ref)
    if profiles_running(path if path.is_file() else ref):
        return None
    if path.is_file():
        return model_file_profile(path)
    if catalog_entry(ref) is None:
        return None
    shaped = catalog_model(ref)
    if shaped is None:
        return None
    return profile_from_dict({"name": ref, "backend": "llama", "model": ref,
                              "context": new_context(shaped[0].context_length),
                              "gpu_layers": "auto", "threads": "auto", "system_prompt": SYSTEM_PROMPT}, ref)


def make_profile(path: Path, name: str | None = None, context: int | None = None) -> Profile:
    """Write a new profile running the model at ``path`` into the user's profiles folder (in the
    data folder) and return it.
    ``name``: what it is called (any words; its file's name is ``file_key`` of it, and one
    taken is refused); none, or words no file name can be made of: the model's own name, with
    -2, -3 … after a file name taken.
    ``context``: none: the model's trained length, at most 4,096."""
    settings = new_profile_settings(path, name, context)
    title = str(settings["name"])
    head = (f"# Made by workstation on {time.strftime('%Y-%m-%d')}; change its settings in this file. The\n"
            f"# settings not written here have their defaults; {profiles_dir() / DEFAULT_PROFILE}.yaml shows every setting.\n")
    text = head + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, width=100)
    folder = user_profiles_dir()
    key = _made_key(path, title)
    try:
        target = _write_new(folder, key, text, chosen=bool(file_key(title)) and bool(name and name.strip()))
    except OSError as err:
        raise ProfileError(said=cannot_write(folder / f"{key}.yaml", err)) from err
    return load_profile_file(target)
