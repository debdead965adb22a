"""A profile for an installed model: what ``profiles new MODEL`` and F4's U make.

Before it, a model pulled or added could only be run by writing a YAML file by hand (``-p``
takes profiles); LM Studio and Ollama run a model once it is chosen. The profile made is short:
the model, a context the model was trained for (at most the default's 4,096), the defaults for
the rest, written so a person can see and change them.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import yaml

from workstation.core.atomic import cannot_write, write_text_atomic
from workstation.core.catalog import installed_name, model_dirs, read_model_info, resolve_model_path
from workstation.core.errors import ProfileError
from workstation.core.paths import profiles_dir
from workstation.core.profiles import (
    CONTEXT_RANGE,
    DEFAULT_PROFILE,
    Profile,
    context_allowed,
    list_profiles,
    load_profile_file,
    profiles_using,
)

NEW_CONTEXT = Profile.context  # the default profile's context: what an office PC holds easily
SYSTEM_PROMPT = "You are a helpful assistant for office work. Answer clearly and briefly."


def profile_key(model_name: str) -> str:
    """The file name (without .yaml) a new profile of ``model_name`` gets: lower case, letters,
    digits, dots and dashes ("SmolLM2-135M-Instruct.Q4_0" -> "smollm2-135m-instruct.q4_0")."""
    key = re.sub(r"[^a-z0-9._-]+", "-", model_name.lower()).strip("-._")
    return key or "model"


def running(path: Path) -> list[Profile]:
    """The local profiles whose model (not their draft) is the file at ``path``, the default
    profile first (it is the plain way of running its model)."""
    keys = set(profiles_using(path, drafts=False))
    found = [p for p in list_profiles() if isinstance(p, Profile) and p.key in keys]
    return sorted(found, key=lambda p: p.key != DEFAULT_PROFILE)


def _model_ref(path: Path) -> str:
    """The name the profile gives its model: the installed name where it finds this file again
    (``models list`` names it so), else the file's whole path (a model outside models/)."""
    name = installed_name(path)
    inside = any(path.resolve().parent == d.resolve() for d in model_dirs() if d.is_dir())
    if inside and resolve_model_path(name).resolve() == path.resolve():
        return name
    return str(path.resolve())


def _free_key(wanted: str, chosen: bool) -> str:
    folder = profiles_dir()
    taken = {p.stem for p in folder.glob("*.yaml")} if folder.is_dir() else set()
    if wanted not in taken:
        return wanted
    if chosen:
        raise ProfileError(f"There is already a profile named '{wanted}' ({folder / (wanted + '.yaml')}); "
                           "choose another name.")
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


def make_profile(path: Path, key: str | None = None, context: int | None = None) -> Profile:
    """Write a new profile running the model at ``path`` into the profiles folder and return it.
    ``key``: its file's name (one that exists is refused); none: the model's own name, with -2,
    -3 … after a name taken. ``context``: none: the model's trained length, at most 4,096."""
    info = read_model_info(path)  # a file that is no model, or a damaged one, says so here
    if context is not None and not context_allowed(context):
        raise ProfileError(f"A context of {context} tokens cannot be used; {CONTEXT_RANGE}.")
    if context is None:
        trained = info.context_length
        context = min(NEW_CONTEXT, trained) if trained > 0 else NEW_CONTEXT
    if key is not None and profile_key(key) != key:
        raise ProfileError(f"A profile's name '{key}' becomes its file's name: use letters, digits, "
                           f"dots and dashes, such as '{profile_key(key)}'.")
    name = installed_name(path)
    key = _free_key(key or profile_key(name), chosen=key is not None)
    target = profiles_dir() / f"{key}.yaml"
    settings = {
        "name": name,
        "description": f"Made for {name} from the model list; change its settings in this file.",
        "name_tr": name,
        "description_tr": f"{name} için model listesinden yapıldı; ayarları bu dosyada değiştirilir.",
        "backend": "llama",
        "model": _model_ref(path),
        "context": context,
        "gpu_layers": "auto",
        "threads": "auto",
        "system_prompt": SYSTEM_PROMPT,
    }
    head = (f"# Made by workstation on {time.strftime('%Y-%m-%d')}. The settings not written here have\n"
            f"# their defaults; {DEFAULT_PROFILE}.yaml beside this file shows every setting.\n")
    text = head + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, width=100)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
    except OSError as err:
        raise ProfileError(said=cannot_write(target, err)) from err
    return load_profile_file(target)
