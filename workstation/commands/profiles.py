"""``workstation profiles list|check``: what profiles exist, whether one is valid, and whether it
can run now (exit 1 when it cannot: its model is missing, it does not fit, its server is down)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from workstation.commands import (
    add_lang_arg,
    add_profile_arg,
    default_verb,
    print_json,
    profile_ref,
    said_in,
    texts_of,
)
from workstation.core.errors import ProfileError
from workstation.core.model_shapes import thinks_first
from workstation.core.profile_folders import whose
from workstation.core.profile_lookup import list_profiles, load_profile
from workstation.core.profile_readiness import effective_settings, readiness
from workstation.core.profiles import (
    KVCache,
    Profile,
    Sampling,
    kv_said,
    kv_words,
    profile_said,
    sampling_name,
    sampling_number,
)
from workstation.tui.i18n import Texts

if TYPE_CHECKING:
    from workstation.core.phrases import Lookup


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profiles", help="list and check profiles; new MODEL makes one for an installed model")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    ls = verbs.add_parser("list", help="every profile, its model and whether it is installed")
    ls.add_argument("--json", action="store_true", help="print it as JSON")
    add_lang_arg(ls)  # its statuses and verdicts (English on a Turkish PC)
    ls.set_defaults(func=run_list)
    chk = verbs.add_parser("check", help="validate a profile and show its effective settings")
    # the name after check, or -p as every other command takes it (before or after check)
    chk.add_argument("name", nargs="?", metavar="PROFILE",
                     help="profile name, path to a YAML file or to a .gguf model file (default: the default profile, as for chat)")
    add_profile_arg(chk)
    chk.add_argument("--json", action="store_true", help="print it as JSON")
    add_lang_arg(chk)  # its fit, notes and whether it is ready (English on a Turkish PC)
    chk.set_defaults(func=run_check, usage_error=chk.error)
    new = verbs.add_parser("new", help="make a profile that runs an installed model")
    new.add_argument("model", metavar="MODEL", help="an installed model's name (as 'models list' names it) or a GGUF file")
    new.add_argument("--name", help="what the new profile is called (its file's name is made of it); "
                                    "default: the model's name, with -2 after a name taken")
    new.add_argument("--context", type=int, metavar="TOKENS",
                     help="its context (default: what the model was trained for, at most 4096)")
    new.add_argument("--json", action="store_true", help="print it as JSON")
    add_lang_arg(new)  # what it made, where, its fit (English on a Turkish PC)
    new.set_defaults(func=run_new)
    default_verb(p, ls)  # 'profiles' alone lists, as 'models' alone does


def run_new(args: argparse.Namespace) -> int:
    """A profile for a model, so that ``-p`` runs it. Without --name or --context, a profile that
    already runs the model is named instead of making a second one."""
    from workstation.core.installed_models import find_installed
    from workstation.core.invocation import cli, shell_word
    from workstation.core.model_profile import make_profile, running

    path = find_installed(args.model)  # not installed, a folder, a typo: one sentence with a guess
    existing = running(path) if args.name is None and args.context is None else []
    profile = existing[0] if existing else make_profile(path, args.name, args.context)
    t = texts_of(args)
    plan = effective_settings(profile, None if t.lang == "en" else t.get).get("plan") or {}
    verdict, notes = plan.get("verdict"), list(plan.get("notes") or [])
    if args.json:
        print_json({"key": profile.key, "file": str(profile.source), "made": not existing, "model": profile.model,
                    "context": profile.context, "fit": verdict, "notes": notes})
        return 0
    if existing:
        print(t("profiles_cmd.runs_already", profile=profile.key, file=str(profile.source), model=args.model))
    else:
        print(t("profiles_cmd.made", profile=profile.key, file=str(profile.source), model=profile.model,
                n=f"{profile.context:,}"))
    if verdict:
        print(t("profiles_cmd.new_fit", verdict=verdict))
    for note in notes:
        print(t("profiles_cmd.new_note", note=note))
    print(t("profiles_cmd.chat_with_it", command=cli("-p " + shell_word(profile.key))))
    return 0


def _row(profile: Profile, lookup: Lookup | None = None) -> dict[str, object]:
    """A profile's row of the listing; its verdict in English or ``lookup``'s language (its status stays English)."""
    eff = effective_settings(profile, lookup)
    plan = eff.get("plan") or {}
    # a local profile: ready, or why not in short ('profiles check' says it in a sentence)
    status = f"remote: {profile.remote.base_url}" if profile.backend == "openai" else readiness(eff)[0]
    return {
        "key": profile.key,
        "name": profile.name,
        "backend": profile.backend,
        "model": profile.model or profile.remote.model,
        # the name 'models list' gives it ("SmolLM2-135M-Instruct.Q8_0.gguf" beside catalog names: as the file wrote it)
        "model_name": eff.get("model_name") or profile.remote.model,
        "context": profile.context,
        "kv_cache": f"{profile.kv_cache.k}/{profile.kv_cache.v}",
        "kv_cache_words": kv_words(profile.kv_cache, usual=True),  # as F3 says it: "half size", "full size"
        "speculative": profile.speculative.mode,
        "status": status,
        "fit": plan.get("verdict"),
        "file": str(profile.source) if profile.source else None,
        **whose(profile),
    }


def _key_cell(row: dict[str, object], t: Texts) -> str:
    if row["hides_shipped"]:
        return t("profiles_cmd.key_in_place", profile=row["key"])
    if row["from"] == "office":
        return t("profiles_cmd.key_office", profile=row["key"])
    return t("profiles_cmd.key_own", profile=row["key"]) if row["own"] else str(row["key"])


def _status_cell(profile: Profile, row: dict[str, object], t: Texts) -> str:
    """A row's status in ``t``'s language: a remote profile's server; else ready or why not
    (``readiness``'s word), with the verdict (which says "does not fit" first)."""
    if profile.backend == "openai":
        return t("profiles_cmd.status.remote", url=profile.remote.base_url)
    if row["status"] == "does not fit":
        return str(row["fit"])
    status = t(f"profiles_cmd.status.{str(row['status']).replace(' ', '_')}")
    return status + (f" — {row['fit']}" if row["fit"] else "")


def run_list(args: argparse.Namespace) -> int:
    t = texts_of(args)  # (English under --json)
    rows: list[dict[str, object]] = []
    said: list[tuple[str, str]] = []  # each row's status and context memory in t's words
    errors: list[str] = []
    for item in list_profiles():
        if isinstance(item, ProfileError):
            errors.append(said_in(item, args))
        else:
            rows.append(_row(item, None if t.lang == "en" else t.get))
            said.append((_status_cell(item, rows[-1], t), kv_words(item.kv_cache, t.get, usual=True)))
    if args.json:
        print_json({"profiles": rows, "errors": errors})
        return 0
    heads = {k: t(f"profiles_cmd.col.{k}") for k in ("profile", "model", "ctx", "kv", "spec", "status")}
    width = max([len(_key_cell(r, t)) for r in rows] + [len(heads["profile"])])
    model_width = max([len(str(r["model_name"])) for r in rows] + [30])
    # the context memory in F3's words ("half size", "full size"), not "q8_0/q8_0" (f16/f16's cell was empty)
    kv_width = max([len(kv) for _, kv in said] + [len(heads["kv"])])
    ctx_width, spec_width = max(6, len(heads["ctx"])), max(6, len(heads["spec"]))
    print(f"{heads['profile']:<{width}}  {heads['model']:<{model_width}} {heads['ctx']:>{ctx_width}}  "
          f"{heads['kv']:<{kv_width}}  {heads['spec']:<{spec_width}}  {heads['status']}")
    for r, (status, kv) in zip(rows, said, strict=True):
        local = r["backend"] == "llama"  # a remote profile's context and K/V are the server's
        ctx = t.number(f"{r['context']:,}") if local else "-"
        spec = _speed_up_said(str(r["speculative"]), t)  # (as check says it)
        print(
            f"{_key_cell(r, t):<{width}}  {str(r['model_name']) or '-':<{model_width}} {ctx:>{ctx_width}}  "
            f"{kv if local else '-':<{kv_width}}  {spec if local else '-':<{spec_width}}  {status}"
        )
    for err in errors:
        print(t("profiles_cmd.broken", error=err))
    from workstation.core.errors import WorkstationError
    from workstation.core.paths import user_profiles_dir

    # where a profile of one's own goes (not the checkout's profiles/, which an update changes)
    try:
        print(t("profiles_cmd.own_kept", folder=str(user_profiles_dir())))
    except WorkstationError as err:  # an unusable data folder: the listing stands (exit 0, as before)
        print(t("profiles_cmd.own_not_kept", error=said_in(err, args)))
    return 0


def run_check(args: argparse.Namespace) -> int:
    ref = args.name or profile_ref(args)  # none: the default profile, as every other command takes it
    if args.name and profile_ref(args) not in (None, args.name):
        args.usage_error(f"argument PROFILE: '{args.name}' and -p '{profile_ref(args)}' name two profiles; "
                         "give one")
    profile = load_profile(ref)  # (a NAME.yaml of the profiles folders too, as -p takes it: it was "does not exist")
    t = texts_of(args)  # (English under --json)
    lookup = None if t.lang == "en" else t.get
    eff = effective_settings(profile, lookup)
    if profile.backend == "openai":
        return _check_remote(profile, eff, args)
    not_ready = readiness(eff, lookup)[1]
    code = 1 if not_ready else 0  # scripts can tell a profile that cannot run here now
    if args.json:
        print_json({**eff, "ready": not not_ready, "not_ready": not_ready})
        return code
    print(t("profiles_cmd.valid", profile=profile.key, name=profile_said(profile, t.lang, None)))  # (whole: a command line has no width to keep to)
    label = _labels(t)
    for key in ("backend", "model_name", "model_path", "model_installed", "context", "gpu_layers", "threads", "flash_attn"):
        if key in eff:  # a setting the file leaves to the machine says so ("threads 2" read as the file's)
            chosen = getattr(profile, key, None)
            shown = t("profiles_cmd.yes" if eff[key] else "profiles_cmd.no") if isinstance(eff[key], bool) \
                else t(f"profiles_cmd.{eff[key]}") if key == "flash_attn" else eff[key]  # (it printed True)
            print(label(key) + str(shown) + (t("profiles_cmd.chosen", chosen=chosen) if chosen == "auto"
                                             and str(chosen) != str(eff[key]) else ""))
    print(label("parallel") + t("profiles_cmd.parallel", n=eff["parallel"], slots=eff["serve_slots"]))
    kv = eff["kv_cache"]
    words = kv_said(KVCache(kv["k"], kv["v"]), lookup)  # (in words, as F5 says the loaded types)
    print(label("kv_cache") + f"K {kv['k']}, V {kv['v']}" + (f" ({words})" if words else ""))
    mode = eff["speculative"]["mode"]
    said = _speed_up_said(mode, t)
    print(label("speculative") + (said if said in (mode, t("profiles_cmd.off")) else f"{said} ({mode})"))
    _print_turn_settings(profile, t)
    if not profile.thinking or thinks_first(profile.model):
        print(label("thinking") + t("profiles_cmd.thinking_on" if profile.thinking else "profiles_cmd.thinking_off"))
    if eff.get("plan"):
        print(label("fit") + str(eff["plan"].get("verdict")))
        for note in eff["plan"].get("notes") or []:
            print(label("note") + note)
    print(label("ready") + (t("profiles_cmd.not_ready", why=not_ready) if not_ready else t("profiles_cmd.ready")))
    return code


ROWS = ("backend", "model_name", "model_path", "model_installed", "context", "gpu_layers", "threads", "flash_attn", "parallel",
        "kv_cache", "speculative", "sampling", "system_prompt", "thinking", "fit", "note", "ready",
        "server", "model", "api_key", "timeout", "server_check")  # (the last: a remote profile's)


def _labels(t: Texts) -> Callable[[str], str]:
    """A row's setting name in ``t``'s language, padded so that the values line up (16 wide in English)."""
    width = max(16, *(len(t(f"profiles_cmd.row.{key}")) + 1 for key in ROWS))
    return lambda key: "  " + t(f"profiles_cmd.row.{key}").ljust(width) + " "


def _speed_up_said(mode: str, t: Texts) -> str:
    """A profile's speculative mode: in English the file's word (draft, lookup), in another
    language F3's (Turkish "yardımcı", "alıntıda": the list said "draft" beside "kapalı")."""
    if mode == "off":
        return t("profiles_cmd.off")
    return mode if t.lang == "en" or mode not in ("draft", "lookup") else t(f"load.spec_{mode}")


def _print_turn_settings(profile: Profile, t: Texts) -> None:
    """The sampling and the system prompt, which the text left out (--json had them)."""
    label = _labels(t)
    print(label("sampling") + _sampling_said(profile.sampling, t))
    said = " ".join(profile.system_prompt.split())
    shown = f'"{said[:70]}…"' if len(said) > 70 else f'"{said}"' if said else t("profiles_cmd.no_system_prompt")
    print(label("system_prompt") + shown)


def _sampling_said(s: Sampling, t: Texts) -> str:
    """A profile's sampling on one row: in English by the file's names (temperature 0.7, top_p
    0.95), in another language by Ctrl+E's, its numbers as that language writes them (Turkish
    "Sıcaklık 0,7; Top-p 0,95; ...; En uzun yanıt 1.024": it said "temperature 0.7" there)."""
    lookup = None if t.lang == "en" else t.get

    def setting(name: str, value: float | int) -> str:  # (top_k, max_tokens: 2.048, as Ctrl+E)
        return f"{sampling_name(name, lookup)} {sampling_number(value, lookup)}"

    shown = [setting(name, getattr(s, name)) for name in ("temperature", "top_p", "top_k", "min_p", "repeat_penalty",
                                                          "max_tokens")]
    shown += [setting(name, getattr(s, name)) for name in ("presence_penalty", "frequency_penalty") if getattr(s, name)]
    seed = t("profiles_cmd.seed_each_turn") if s.seed is None else str(s.seed)
    shown.append(f"{sampling_name('seed', lookup)} {seed}")
    sep = t("profiles_cmd.sampling_sep")  # (Turkish "; ": its decimal comma read "Sıcaklık 0,7, Top-p 0,95")
    return (sep.join(shown) + (f"{sep}ignore_eos" if s.ignore_eos else "")
            + (f"{sep}stop {', '.join(repr(x) for x in s.stop)}" if s.stop else ""))


def _check_remote(profile: Profile, eff: dict[str, object], args: argparse.Namespace) -> int:
    """A desk PC's profile: the server it uses, and whether that server answers now (the
    model, context and K/V cache are the server's, so they are not shown as ours). In the
    app's language, or --lang's (English under --json)."""
    from workstation.core.remote import check_server

    t = texts_of(args)
    remote = profile.remote
    check = check_server(profile)
    server: dict[str, object] = {"base_url": remote.base_url, "reachable": check.reachable, "ok": check.ok}
    if check.error is not None:
        server["error"] = str(check.error)
        error = said_in(check.error, args)
        answer = t("profiles_cmd.answers_but" if check.reachable else "profiles_cmd.not_asked"
                   if isinstance(check.error, ProfileError) else "profiles_cmd.no_answer", error=error)
    else:
        # the server's profile as F3 lists it there (our server), and its model as the server names it:
        # what the text says it serves (``served_said``); --json named neither
        server.update(model=check.model or None, listed=check.listed, profile=check.profile_said.get("en") or None,
                      model_name=check.model_name or None)
        if check.not_served:
            server["error"] = t("profiles_cmd.serves_other", served=", ".join(check.listed), model=check.model)
            answer = t("profiles_cmd.answers_but_serves", error=server["error"])
        else:
            # (as F3 says it: the server's profile as F3 lists it there; it said "serving office-cpu")
            said = check.served_said(t.lang)
            answer = t("profiles_cmd.answers_serving", model=said) if said else t("profiles_cmd.answers")
    code = 0 if server["ok"] else 1  # scripts can tell a desk PC that cannot work now
    if args.json:
        print_json({**eff, "server": server})
        return code
    key = remote.api_key_env
    label = _labels(t)
    print(t("profiles_cmd.valid", profile=profile.key, name=profile_said(profile, t.lang, None)))
    print(label("backend") + t("profiles_cmd.remote_backend"))
    print(label("server") + remote.base_url)
    print(label("model") + (remote.model or t("profiles_cmd.remote_model_first")))
    from workstation.core.remote import key_source

    by_file = remote.api_key_file is not None and key_source(remote) == remote.api_key_file
    instead = t("profiles_cmd.key_no_file", file=remote.api_key_file) if remote.api_key_file and not by_file else ""
    print(label("api_key") + (t("profiles_cmd.key_file", file=remote.api_key_file) if by_file else
                              t("profiles_cmd.key_env", env=key, instead=instead, state=t(
                                  "profiles_cmd.key_set" if os.environ.get(key) else "profiles_cmd.key_not_set"))
                              if key else t("profiles_cmd.key_none")))
    print(label("timeout") + t("profiles_cmd.timeout", s=f"{remote.timeout_s:g}"))
    # (said "off" from the profile's defaults: whether a reply is drafted is the server's choice)
    print(label("speculative") + t("profiles_cmd.speculative_server"))
    _print_turn_settings(profile, t)  # sent with every request
    print(label("server_check") + answer)
    from workstation.core.load_notes import remote_notes, unsaid_notes
    from workstation.core.phrases import say

    # where the text goes; unencrypted over http:// (said nowhere): once for each server, as the app says it
    for note in unsaid_notes(remote_notes(profile)):
        print(say([note], None if t.lang == "en" else t.get))
    return code
