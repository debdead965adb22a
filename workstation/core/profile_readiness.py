"""Whether a profile can run here now, as ``profiles list`` and ``profiles check`` say it:
the settings a run of it will use once defaults and the memory plan are applied, whether its
draft model can draft for its model, and its status (ready, its model or draft not installed,
a damaged file, does not fit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workstation.core.catalog import resolve_model_path
from workstation.core.errors import ModelFileError
from workstation.core.installed_models import installed_name
from workstation.core.phrases import Lookup, Phrase, say
from workstation.core.profile_plan import plan_for_profile, resolve_gpu_layers
from workstation.core.profiles import Profile


def effective_settings(profile: Profile, lookup: Lookup | None = None) -> dict[str, Any]:
    """What a run of ``profile`` will use once defaults and the memory plan are applied; its
    sentences (the verdict, notes, a model's problem) in English or ``lookup``'s language."""
    data = profile.to_dict()
    data["key"] = profile.key
    data["threads"] = profile.resolved_threads()
    data["flash_attn"] = "on" if profile.resolved_flash_attn() else "off"
    # "parallel" is the app's and chat's; serve (and Ctrl+G) runs 4 where the file sets none
    data["serve_slots"] = profile.slots_to_serve()
    if profile.backend != "llama":
        return data
    path = resolve_model_path(profile.model)
    data["model_name"] = installed_name(path)  # as 'models list', fit and the app name it (the file kept in model_path)
    data["model_path"] = str(path)
    data["model_installed"] = path.exists()
    if profile.speculative.mode == "draft" and profile.speculative.draft_model:
        draft = resolve_model_path(profile.speculative.draft_model)
        data["speculative"]["draft_model_path"] = str(draft)
        data["speculative"]["draft_model_installed"] = draft.exists()
        if path.is_file() and draft.is_file():
            problem = profile_draft_problem(profile)
            data["speculative"]["draft_problem"] = say(problem, lookup) if problem else None
    if path.exists():
        try:
            data["gpu_layers"] = resolve_gpu_layers(profile)
            plan = plan_for_profile(profile)
            data["plan"] = plan.to_dict()
            if lookup is not None:
                data["plan"].update(verdict=say(plan.verdict_phrases, lookup),
                                    notes=[say([p], lookup) for p in plan.note_phrases])
        except ModelFileError as err:  # a damaged file is this profile's status: `profiles list` had no table
            data["model_problem"] = say(err.said, lookup) if err.said and lookup else str(err)
    return data


def profile_draft_problem(profile: Profile) -> list[Phrase] | None:
    """Why the profile's draft model cannot draft for its model (another vocabulary, too small
    a context), in the sentence loading says (``say`` it); None where it can, or either file is
    not here to read. ``profiles check`` and ``fit`` say it (fit said such a pair "runs on the CPU")."""
    from workstation.core.model_info import draft_problem as between

    spec = profile.speculative
    if spec.mode != "draft" or not spec.draft_model:
        return None
    target, draft = resolve_model_path(profile.model), resolve_model_path(spec.draft_model)
    if not (target.is_file() and draft.is_file()):
        return None
    try:
        problem = between(target, draft, profile.context)
    except ModelFileError as err:  # (a damaged model is said where it is read, or the draft is)
        return err.said or [("file.os_says", {"reason": str(err)})]
    return [problem] if problem else None


def readiness(eff: dict[str, Any], lookup: Lookup | None = None) -> tuple[str, str | None]:
    """Whether a valid local profile can run here now: ('ready', None), or a short status for
    'profiles list' and the one sentence 'profiles check' says (its model or draft is not
    installed, or it does not fit this machine's memory), in English or ``lookup``'s language
    (``eff``'s sentences are said in it by ``effective_settings``)."""
    from workstation.core.installed_models import missing_model_error

    def missing(path: object) -> str:
        err = missing_model_error(Path(str(path)))
        return say(err.said, lookup) if err.said else str(err)

    if not eff.get("model_installed"):
        return "model not installed", missing(eff["model_path"])
    if eff.get("model_problem"):
        return "model file damaged", str(eff["model_problem"])
    spec = eff.get("speculative") or {}
    if spec.get("draft_model_path") and not spec.get("draft_model_installed"):  # names the draft file
        return "draft model not installed", missing(spec["draft_model_path"])
    if spec.get("draft_problem"):
        return "draft model cannot draft", str(spec["draft_problem"])
    plan = eff.get("plan") or {}
    if plan and not plan.get("fits"):
        return "does not fit", str(plan.get("verdict"))
    return "ready", None
