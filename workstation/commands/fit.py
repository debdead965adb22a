"""``workstation fit [-p PROFILE] [--json]``: will the profile's model fit, and where."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workstation.commands import add_lang_arg, add_profile_arg, print_json, profile_ref, texts_of
from workstation.core.calibration import (
    REPLAY_TEST,
    busy_times,
    measured_decode,
    unsure,
    unsure_why,
)
from workstation.core.catalog import human_bytes
from workstation.core.errors import ProfileError, WorkstationError
from workstation.core.installed_models import installed_name
from workstation.core.invocation import cli, shell_word
from workstation.core.phrases import Lookup, Phrase, about_words, say, speed_figure
from workstation.core.profile_check import CONTEXT_RANGE, context_allowed
from workstation.core.profile_lookup import profile_running
from workstation.core.profile_plan import plan_for_profile
from workstation.core.profile_readiness import profile_draft_problem
from workstation.core.profile_variants import load_variant
from workstation.core.profiles import KVCache, Profile, kv_words
from workstation.core.speed_estimate import slow_phrase

if TYPE_CHECKING:
    from workstation.core.hardware import GpuInfo
    from workstation.core.memory_check import MemoryCheck
    from workstation.core.memory_plan import MemoryPlan
    from workstation.core.results import HistoryEntry
    from workstation.tui.i18n import Texts


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fit", help="will the model fit: GPU layers, memory, expected speed",
                       description="Says whether a model or profile fits this PC's memory, and how fast it will write.")
    # the profile after fit, or -p as every other command takes it ('fit gpu-llama31-8b' said "takes
    # options only"), as 'profiles check' takes it; a model's name is answered with its profile's
    p.add_argument("name", nargs="?", metavar="PROFILE",
                   help="the profile (or model file) to plan, as -p takes it (default: the default profile)")
    add_profile_arg(p, variants=True)
    p.add_argument("--context", type=int, help="plan for this context instead of the profile's")
    p.add_argument("--gpu", metavar="CARD", action="append", default=[],
                   help="plan on this graphics card instead of this PC's (\"RTX 3060\", \"RTX 4090\"; twice: two "
                        "cards): what if we bought one")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--check", action="store_true",
                   help="load the profile and print the estimate beside what llama.cpp allocated")
    add_lang_arg(p)
    p.set_defaults(func=run, usage_error=p.error)


def run(args: argparse.Namespace) -> int:
    if args.name and profile_ref(args) not in (None, args.name):
        args.usage_error(f"argument PROFILE: '{args.name}' and -p '{profile_ref(args)}' name two profiles; give one")
    ref = args.name or profile_ref(args)
    try:
        profile = load_variant(ref)
    except ProfileError:
        # a model's name (installed, or a catalog model's, downloaded or not): as the profile that runs
        # it, else as the profile ``profiles new`` would make of it ("is a model, not a profile; download it first")
        from workstation.core.model_profile import model_default_profile

        runner = profile_running(ref) if ref else None
        made = runner or (model_default_profile(ref) if ref else None)
        if made is None:
            raise
        profile = made
    else:  # a .gguf file: as the profile that runs it, where one does (as its name and F4 answer)
        runner = profile_running(profile.source) if _model_file(profile) else None
        profile = runner or profile
    # a model run with a new profile's defaults (a name, or a .gguf file no profile runs): said so, and how to make it one
    by_default = runner is None and (profile.source is None or _model_file(profile))
    if args.context is not None:  # (-5 planned 0 cells and said it fits; 0 planned the profile's)
        if not context_allowed(args.context):
            args.usage_error(f"argument --context: {args.context} is not a context; {CONTEXT_RANGE}")
        profile.context = args.context
    t = texts_of(args)  # (JSON's verdicts are English, as the plan's)
    if profile.backend != "llama":
        msg = t("fit_cmd.remote", profile=profile.key, url=profile.remote.base_url)
        if args.json:
            print_json({"profile": profile.key, "remote": True, "fits": True, "verdict": msg,
                        "weights_bytes": 0, "kv_cache_bytes": 0, "gpu_layers": 0, "total_layers": 0})
        else:
            print(msg)
        return 0
    if args.check and args.gpu:
        args.usage_error("argument --gpu: --check loads the model on this PC's own hardware; leave one out")
    if args.check:
        return check(profile, args.json, t)
    cards = _cards(args)
    plan = plan_for_profile(profile, gpus=cards, not_downloaded=True)
    problem = profile_draft_problem(profile)
    measured = (measured_decode(plan.path, plan.gpu_layers, plan.type_k, plan.type_v, profile.speculative.mode)
                if cards is None else None)  # (this PC's own)
    # measured with the profile's speculation (its guesses kept or thrown away included), where the
    # estimate is without: said so, and not compared as one kind ("go by the measured figure: the
    # estimate is 1.6x below it" of a speed-up the estimate never counts)
    speculating = profile.speculative.mode != "off"
    if args.json:
        print_json({"profile": profile.key, **plan.to_dict(), "downloaded": bool(plan.path),
                    "draft_problem": say(problem) if problem else None,
                    "measured_decode": None if measured is None else {
                        "tokens_per_second": measured.value, "test": measured.test, "profile": measured.profile,
                        "when": measured.created, "stddev": measured.data.get("stddev"),
                        "unsure": unsure(measured), "unsure_why": unsure_why(measured) or None,
                        "speculative": profile.speculative.mode},
                    "estimate_speculative": False})  # (the estimate never counts a speed-up)
        return 1 if problem else 0 if plan.fits else 2
    # the K/V types in words first ("full size"), as F3 says them; their names stay in brackets
    kv = kv_words(KVCache(plan.type_k, plan.type_v), None if t.lang == "en" else t.get, usual=True)
    print(t("fit_cmd.head", profile=profile.key, model=plan.model, architecture=plan.architecture,
            file_type=plan.file_type, context=f"{plan.context:,}", kv=kv, k=plan.type_k, v=plan.type_v))
    if runner is not None:  # a model's name or file given: whose settings these are
        print(t("fit_cmd.as_profile", profile=runner.key))
    if by_default:
        print(t("fit_cmd.defaults", model=installed_name(Path(plan.path)) if plan.path else profile.model,
                context=f"{profile.context:,}", cmd=cli("profiles new " + shell_word(profile.model))))
    if cards:
        print(t("fit_cmd.on", cards=t.series([g.name for g in cards], most=len(cards))))
    verdict = say(plan.verdict_phrases, t.get)
    # its memory is planned, but it does not run: said first, as profiles check and loading say it
    if problem:
        print(t("fit_cmd.not_here", problem=say(problem, t.get)))
        print(t("fit_cmd.as_planned", verdict=verdict))
    else:
        print(t("fit_cmd.verdict", verdict=verdict))
    draft = plan.draft or {}

    def with_draft(key: str) -> str:  # the totals hold the draft model's share: said where it is in them
        return t("fit_cmd.draft_included", size=human_bytes(draft[key])) if draft.get(key) else ""

    print(t("fit_cmd.weights", size=human_bytes(plan.weights_bytes) + _file_beside(plan, t), draft=with_draft("weights_bytes")))
    swa = t("fit_cmd.sliding", cells=f"{plan.swa_cells:,}") if plan.swa_cells != plan.kv_cells else ""
    print(t("fit_cmd.kv", size=human_bytes(plan.kv_cache_bytes), cells=f"{plan.kv_cells:,}", swa=swa,
            draft=with_draft("kv_cache_bytes")))
    print(t("fit_cmd.compute", size=human_bytes(plan.compute_bytes), draft=with_draft("compute_bytes")))
    if plan.repack_bytes:  # in the total, as the verdict says it: the lines above came short of it
        print(t("fit_cmd.repack", size=human_bytes(plan.repack_bytes), draft=with_draft("repack_bytes")))
    print(t("fit_cmd.gpu_layers_all" if plan.gpu_layers == plan.total_layers else "fit_cmd.gpu_layers",
            n=plan.gpu_layers, total=plan.total_layers, requested=plan.requested_gpu_layers))
    for d in plan.devices:
        if d.kind == "gpu" or d.need_bytes:
            repacked = plan.repack_bytes if d.kind == "cpu" else 0  # (the CPU's copy: its need, as the verdict's)
            print(t("fit_cmd.device", name=d.name, layers=d.layers, need=human_bytes(d.need_bytes + repacked),
                    free=human_bytes(d.free_bytes)))
    print(t("fit_cmd.speed", said=_speed(plan, cards is None, t, speculating)))
    if measured is not None and measured.value:  # what was measured beside what is estimated
        spread = measured.data.get("stddev")
        print(t("fit_cmd.measured", tps=speed_figure(measured.value), words=about_words(measured.value, t.get), spread=t("fit_cmd.spread", n=f"{spread:.0f}") if spread
                else "", day=t.day(measured.created[:10]), profile=measured.profile, test=_test_words(measured, t)))
        ratio = plan.decode_tps_bound / measured.value if plan.decode_tps_bound else 1.0
        why = unsure_why(measured)
        if why == "spread":  # (12 ± 4 was "the measured figure" to go by, where the chat ran at 20)
            print(t("fit_cmd.measured_unsure", p=f"{spread / measured.value:.0%}"))
        elif why:  # measured once, or on a busy moment: 159 was "the measured figure" where the chat wrote 55
            again = cli(f"bench -p {shell_word(profile.ref or profile.key)} -r 3")
            print(t(f"fit_cmd.measured_{why}", times=f"{busy_times(measured):.1f}", cmd=again))
        if speculating:
            print(t("fit_cmd.measured_speculating"))
        elif not unsure(measured) and not 2 / 3 <= ratio <= 1.5:  # (46 beside 125, after a busy moment's size --measure: which to believe?)
            print(t("fit_cmd.go_by_measured", x=f"{max(ratio, 1 / ratio):.1f}",
                    way=t("fit_cmd.above" if ratio > 1 else "fit_cmd.below")))
    from workstation.tui.integrations import replies_said

    try:  # this PC's own replies with it, as F4 and F3 say them
        replied = replies_said(Path(plan.path), t, profile_ref=profile.ref) if plan.path and cards is None else ""
    except WorkstationError:  # (a data folder that cannot be used: no replies to say)
        replied = ""
    if replied:
        print(t("fit_cmd.replied", said=replied))
    slow = slow_phrase(plan, measured.value if measured is not None and not unsure(measured) else None, t.get)
    for note in [*([say([slow], t.get)] if slow else []), *_notes(plan, t)]:
        print(t("fit_cmd.note", note=note))
    return 1 if problem else 0 if plan.fits else 2


def _model_file(profile: Profile) -> bool:
    """Whether ``profile`` is a model file run as it is (``-p model.gguf``), not a profile's file."""
    return profile.source is not None and profile.source.suffix.lower() == ".gguf"


def _test_words(measured: HistoryEntry, t: Texts) -> str:
    """Which of bench's figures fit says (``calibration.decode_figure``): its chat replies' writing,
    the middle one of its tg runs, or the tg as saved (an older bench's)."""
    if measured.test == "chat":
        return t("fit_cmd.test_chat")
    if measured.test == REPLAY_TEST:  # (bench --document's, or --replay's: its replies there)
        documents = (measured.data.get("records") or [{}])[0].get("documents") or []
        return (t("fit_cmd.test_documents", names=t.series(documents, most=3)) if documents
                else t("fit_cmd.test_replay"))
    if measured.test.endswith(" median"):
        return t("fit_cmd.test_median", test=measured.test.split()[0], runs=measured.data.get("runs", 0))
    return measured.test


def _speed(plan: MemoryPlan, here: bool, t: Texts, speculating: bool = False) -> str:
    """The plan's speed as F4 says it, in words a second in every language (English said the
    planner's "about 78 tokens/s" where Turkish said words a second, and the rest of the program
    says it to office staff so), with what the estimate is made from. ``speculating``: the profile
    speculates, which the estimate does not count: said (as F3 says it)."""
    from workstation.core.calibration import measured_cpu
    from workstation.tui.integrations import speed_said

    return speed_said(plan, here and measured_cpu() is not None, t, speculating=speculating) or t("fit_cmd.no_speed")


def _notes(plan: MemoryPlan, t: Texts) -> list[str]:
    """The plan's notes in ``t``'s language (they were English in Turkish: a draft model counted,
    a model not downloaded yet, no GPU found)."""
    return [say([note], t.get) for note in plan.note_phrases]


def _file_beside(plan: MemoryPlan, t: Texts) -> str:
    """The model file's size, as 'models list' says it, where it is not the weights' figure (SmolLM2's
    weights are 92 MB of its 94 MB file: the two read as one size said two ways); none for a pair
    (the weights are both models'), nor for a model not downloaded."""
    if plan.draft or not plan.path:
        return ""
    try:
        size = human_bytes(Path(plan.path).stat().st_size)
    except OSError:
        return ""
    return t("fit_cmd.weights_file", size=size) if size != human_bytes(plan.weights_bytes) else ""


def _cards(args: argparse.Namespace) -> list[GpuInfo] | None:
    """The cards ``--gpu`` names (None: this PC's own); a name that is no card of the table is
    a usage error listing them. Where a name matches several ("RTX 4060": the Ti too), the
    card whose own name it is."""
    if not args.gpu:
        return None
    from workstation.core.gpu_table import cards_named, gpu_specs
    from workstation.core.hardware import table_gpu

    cards = []
    for i, name in enumerate(args.gpu):
        found, unknown = cards_named([name])
        if unknown:
            args.usage_error(f"argument --gpu: '{name}' is no card this program knows; known: "
                             f"{', '.join(s.match for s in gpu_specs())}")
        exact = [s for s in found if s.match.lower() == name.strip().lower()]
        cards.append(table_gpu((exact or found)[0], i))
    return cards


def check(profile: Profile, as_json: bool, t: Texts) -> int:
    """Load ``profile`` as the app does; print estimate, allocation and difference, for the
    draft model too when the profile speculates with one (it left the draft out), in ``t``'s
    language (it said it in English alone)."""
    from workstation.core.engine import Engine
    from workstation.core.memory_check import check as memory_check

    engine = Engine(profile)  # the load itself records the check in the history
    try:
        mc = memory_check(engine.model)
        draft = engine.core.draft_model
        mc_draft = memory_check(draft.model) if draft is not None else None
    finally:
        engine.close()
    est = mc.estimated["total"] + (mc_draft.estimated["total"] if mc_draft is not None else 0)
    got = mc.allocated["total"] + (mc_draft.allocated["total"] if mc_draft is not None else 0)
    if as_json:
        print_json({"profile": profile.key, **mc.to_dict(),
                    "draft": mc_draft.to_dict() if mc_draft is not None else None,
                    "verdict": check_verdict(est, got, _worst(mc, mc_draft))})
        return 0
    _print_check(profile.key, mc, t)
    vram_estimated = mc.vram_estimated
    if mc_draft is not None:
        _print_check(t("fit_cmd.check_draft"), mc_draft, t)
        pct = t("fit_cmd.check_pct", pct=f"{(est - got) / got * 100:+.1f}%") if got else ""
        print(t("fit_cmd.check_both", estimated=human_bytes(est), allocated=human_bytes(got), difference=_signed(est - got),
                pct=pct))
        if vram_estimated is not None or mc_draft.vram_estimated is not None:
            vram_estimated = (vram_estimated or 0) + (mc_draft.vram_estimated or 0)
    if mc.vram_process is not None and vram_estimated is not None:  # NVML sees the process: both
        print(t("fit_cmd.check_vram", used=human_bytes(mc.vram_process), estimated=human_bytes(vram_estimated)))
    print(t("fit_cmd.check_verdict", verdict=check_verdict(est, got, _worst(mc, mc_draft), t.get)))
    return 0


CLOSE_ENOUGH_PCT = 5.0  # the planner's promise, kept by tests/test_memory_check.py


def _worst(*checks: MemoryCheck | None) -> tuple[str, float] | None:
    """The component whose estimate is furthest off (its name in COMPONENTS, percent of its allocation)."""
    from workstation.core.memory_check import COMPONENTS

    found = [(c, pct) for mc in checks if mc is not None for c in COMPONENTS
             if c != "total" and (pct := mc.diff_pct(c)) is not None]
    return max(found, key=lambda f: abs(f[1]), default=None)


def check_verdict(estimated: int, allocated: int, worst: tuple[str, float] | None = None,
                  lookup: Lookup | None = None) -> str:
    """What ``fit --check`` found, in one sentence (English, or ``lookup``'s language): can
    ``fit``'s answer be trusted here? ``worst``: the component furthest off (its name in
    COMPONENTS), named when it is off by more than the promise."""
    if not allocated or not estimated:
        return say([("fit.check_none", {})], lookup)
    pct = (estimated - allocated) / allocated * 100
    part: Any = ""
    if worst is not None and abs(worst[1]) > CLOSE_ENOUGH_PCT:
        part = ("fit.check_worst", {"component": (f"fit.part_{worst[0]}", {}), "pct": f"{worst[1]:+.1f}%"})
    if abs(pct) <= CLOSE_ENOUGH_PCT:
        said: Phrase = ("fit.check_within", {"pct": f"{abs(pct):.1f}%", "part": part, "command": cli("fit")})
    elif pct > 0:
        said = ("fit.check_above", {"pct": f"{pct:.1f}%", "part": part, "command": cli("fit")})
    else:
        said = ("fit.check_below", {"size": human_bytes(allocated - estimated), "part": part, "command": cli("fit")})
    return say([said], lookup)


def _print_check(title: str, mc: MemoryCheck, t: Texts) -> None:
    from workstation.core.memory_check import COMPONENTS

    s = mc.settings
    print(t("fit_cmd.check_head", title=title, file=installed_name(Path(mc.model)), context=f"{s['n_ctx']:,}", k=s["type_k"],
            v=s["type_v"], layers=s["n_gpu_layers"], flash=t("fit_cmd.check_on" if s["flash_attn"] else "fit_cmd.check_off")))
    print(f"  {'':<12} {t('fit_cmd.check_estimated'):>12} {t('fit_cmd.check_allocated'):>12} "
          f"{t('fit_cmd.check_difference'):>12}")
    for c in COMPONENTS:
        pct = mc.diff_pct(c)
        print(f"  {say([(f'fit.part_{c}', {})], t.get):<12} {t.number(human_bytes(mc.estimated[c])):>12} "
              f"{t.number(human_bytes(mc.allocated[c])):>12} {t.number(_signed(mc.diff(c))):>12}"
              + (t("fit_cmd.check_pct", pct=f"{pct:+.1f}%") if pct is not None else ""))


def _signed(n: int) -> str:
    return ("-" if n < 0 else "+") + human_bytes(abs(n))
