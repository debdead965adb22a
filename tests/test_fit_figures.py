"""The speed and memory figures fit, bench, F3 and F4 give one model agree, and fit answers for a model by name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import requantized_copy

from workstation.core.bench import ProfileBench, SpeedStat
from workstation.core.metrics import TurnMetrics


def _info(model: Path) -> dict[str, object]:
    return {"model_type": "llama 256M Q4_1", "model_size": 2**27, "model_n_params": 134_515_008, "n_gpu_layers": 0,
            "model_filename": str(model), "n_threads": 2, "type_k": "f16", "type_v": "f16", "flash_attn": True}


def one_round(model: Path, tg: float, chat: float) -> ProfileBench:
    """``bench --quick -r 1``: one tg32 run and one chat turn."""
    return ProfileBench("travel-helper", _info(model), pp=SpeedStat(512, [round(512e9 / 900)]),
                        tg=SpeedStat(32, [round(32e9 / tg)]),
                        turns=[TurnMetrics(ttft_ms=300.0, predicted_n=64, predicted_ms=64 / chat * 1000)])


def _profile(tmp_path: Path, model: Path) -> Path:
    prof = tmp_path / "travel-helper.yaml"
    prof.write_text(f"name: travel-helper\nmodel: {model}\ncontext: 1024\ngpu_layers: 0\nspeculative: {{mode: off}}\n",
                    encoding="utf-8")
    return prof


def _reply(store_path: Path, model: Path, tps: float, text: str, tokens: int = 100) -> None:
    from workstation.core.metrics import turn_record
    from workstation.core.store import ConversationStore

    store = ConversationStore(store_path)
    try:
        m = TurnMetrics(predicted_n=tokens, predicted_ms=tokens / tps * 1000, stop_reason="eos")
        m.finish_rates()
        store.add_message(store.new("replies").id, "assistant", text,
                          turn_record(m, "travel-helper", "travel-helper", model=str(model.resolve())))
    finally:
        store.close()


def test_a_busy_one_round_bench_is_unsure_in_fit_and_a_range_in_bench(
        smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One bench, -r 1: tg32 10.83 beside chat tg 159.16 (14.7x). bench said "writes about 120 words
    a second" (the chat's), and fit "go by the measured figure: the estimate is 2.5x below it" of the
    159, where the chat replies came at 43 words a second. bench says the range; fit calls the
    figure unsure (measured on a busy moment), says how to measure it well, and says the replies'."""
    from workstation.cli import main
    from workstation.commands.bench import format_bench
    from workstation.core.paths import data_dir
    from workstation.core.results import save_run
    from workstation.core.store import DB_NAME
    from workstation.tui.i18n import Texts

    run = one_round(smollm2_path, 10.83, 159.16)
    said = format_bench([run])
    assert "and writes somewhere between about 8 and 120 words a second" in said, said
    assert "writes about 120 words a second" not in said
    assert "saniyede yaklaşık 4 ile 64 sözcük arasında yazar" in format_bench([run], Texts("tr").get)
    save_run("bench", run.result_rows(), "bench --quick -r 1")
    prof = _profile(tmp_path, smollm2_path)
    assert main(["fit", "-p", str(prof), "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)["measured_decode"]
    assert measured["unsure"] and measured["unsure_why"] == "busy", measured
    _reply(data_dir() / DB_NAME, smollm2_path, 55.0, " ".join(["word"] * 78))
    assert main(["fit", "-p", str(prof)]) == 0
    out = capsys.readouterr().out
    assert "go by the measured" not in out, out
    assert re.search(r"^  note:      measured on a busy moment: that bench's two writing figures were 14\.7x apart .*"
                     r"run \S+ bench -p \S+travel-helper\.yaml -r 3 while the PC is quiet$", out, re.MULTILINE), out
    # what the app timed of the model's real replies, as F4 says it
    assert re.search(r"^  replies:   Your last reply with its model, in travel-helper: about 43 words a second\.$", out, re.MULTILINE), out
    # one round whose two figures agree is still one run: unsure, said so
    save_run("bench", one_round(smollm2_path, 50.0, 52.0).result_rows(), "bench --quick -r 1")
    assert main(["fit", "-p", str(prof), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["measured_decode"]["unsure_why"] == "once"
    assert main(["fit", "-p", str(prof), "--lang", "tr"]) == 0
    out = capsys.readouterr().out
    assert "bir kez ölçüldü (tek turluk bir bench, -r 1)" in out and "güvenin" not in out, out


def test_fit_answers_for_a_model_no_profile_runs(smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """"fit llama-3.2-1b-instruct-q4_k_m" said "is a model, not a profile; download it … then
    profiles new …" (exit 1), where F4 gives its estimate before a download: it plans the profile
    ``profiles new`` would make of it, says so, and exits as for a profile (0: it fits)."""
    from workstation.cli import main

    q4_0, q8_0 = requantized_copy(smollm2_path, "q4_0"), requantized_copy(smollm2_path, "q8_0")  # (no profile; draft-pair's)
    assert main(["fit", "llama-3.2-1b-instruct-q4_k_m"]) == 0
    out = capsys.readouterr().out
    assert "  (no profile runs llama-3.2-1b-instruct-q4_k_m: planned as the profile " in out, out
    assert "profiles new llama-3.2-1b-instruct-q4_k_m would make for it: a context of 4,096 tokens, the other " \
        "settings at their defaults)" in out, out
    assert "not downloaded yet: planned from its published shape" in out
    assert main(["fit", "llama-3.2-1b-instruct-q4_k_m", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["fits"] and plan["context"] == 4096 and not plan["downloaded"], plan
    # an installed model file no profile runs, by its name
    assert main(["fit", "SmolLM2-135M-Instruct.Q4_0"]) == 0
    assert "(no profile runs SmolLM2-135M-Instruct.Q4_0: planned as the profile " in capsys.readouterr().out
    # a model file given by its path: the same, but not said of a file a profile runs (draft-pair runs Q8_0)
    assert main(["fit", str(q4_0)]) == 0
    assert "(no profile runs SmolLM2-135M-Instruct.Q4_0: " in capsys.readouterr().out
    assert main(["fit", str(q8_0)]) == 0
    out = capsys.readouterr().out
    assert "no profile runs" not in out and out.startswith("draft-pair: "), out
    # a name that is neither: refused as before
    assert main(["fit", "no-such-thing"]) == 1


def test_fit_of_a_model_a_profile_runs_answers_as_that_profile(smollm2_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`fit smollm2-135m-instruct-q4_1` (the name office-cpu's model is installed by) said "…is a
    model, not a profile; to use it, run … profiles new …" and exited 1, where F4 and `fit` of its
    .gguf path answered: a model's installed name, its file's path and a catalog model's name are
    answered alike, as the profile that runs it (F4's rule: ``profile_lookup.profile_running``),
    naming it; in Turkish too."""
    from workstation.cli import main

    outs = []
    for spelled in ("smollm2-135m-instruct-q4_1", str(smollm2_path), "-p=smollm2-135m-instruct-q4_1"):
        args = ["fit", "-p", spelled[3:]] if spelled.startswith("-p=") else ["fit", spelled]
        assert main(args) in (0, 2), spelled
        captured = capsys.readouterr()
        assert captured.out.startswith("office-cpu: smollm2-135m-instruct-q4_1 (llama, Q4_1)"), captured.out
        assert "  (planned as the profile office-cpu, which runs it, with its settings)" in captured.out, captured.out
        assert "no profile runs" not in captured.out and not captured.err, captured
        outs.append(captured.out)
    assert outs[0] == outs[1] == outs[2]
    assert main(["fit", "office-cpu"]) in (0, 2)  # (the profile itself: its plan, not said to be another's)
    assert "which runs it" not in capsys.readouterr().out
    # a catalog model not downloaded that a profile runs: as that profile, as F4 plans it
    assert main(["fit", "qwen2.5-14b-instruct-q4_k_m"]) in (0, 2)
    out = capsys.readouterr().out
    assert out.startswith("gpu-qwen25-14b: ") and "(planned as the profile gpu-qwen25-14b, which runs it" in out, out
    assert main(["fit", "smollm2-135m-instruct-q4_1", "--json"]) in (0, 2)
    assert json.loads(capsys.readouterr().out)["profile"] == "office-cpu"
    assert main(["fit", "smollm2-135m-instruct-q4_1", "--lang", "tr"]) in (0, 2)
    assert "(onu çalıştıran office-cpu profilinin ayarlarıyla planlandı)" in capsys.readouterr().out


def _needs(text: str) -> str:
    found = re.search(r"needs ([\d.,]+ [KMG]B) of the", text)
    assert found, text
    return found[1]


def _words_a_second(text: str) -> str:
    found = re.search(r"[Uu]p to about ([\d.,]+) words a second", text)
    assert found, text
    return found[1]


def test_f4_fit_and_f3_give_one_model_the_same_memory_and_speed(smollm2_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """F4 said 423 MB of office-cpu's model where F3 and fit said 282 MB (F4 worked it out for 8,192
    tokens, the profile for 4,096), and "0.8 words a second" of Qwen2.5 14B where fit gpu-qwen25-14b
    said 0.6 (F4 at an f16 K/V, the profile's q8_0 that the CPU reads slower). F4 plans a model a
    profile runs as that profile, a model none runs as a new profile for it (as fit plans it by
    name), and says up front for how long a conversation."""
    from workstation.cli import main
    from workstation.core.hardware import FakeGpuProbe, set_probe
    from workstation.core.profile_lookup import load_profile
    from workstation.tui.i18n import Texts
    from workstation.tui.integrations import (
        catalog_models,
        fit_verdict,
        installed_models,
        model_fit,
    )

    en = Texts("en")
    requantized_copy(smollm2_path, "q4_0")  # (a model no profile runs)
    set_probe(FakeGpuProbe())  # (no GPU: the CPU's estimate, as on the user's PC)
    try:
        rows = {r.name: r for r in [*installed_models(en), *catalog_models(en)] if not r.installed or r.path}
        office = model_fit(rows["smollm2-135m-instruct-q4_1"], en)
        assert office.startswith("On this PC, for a conversation of up to about 3,100 words (as Office CPU — SmolLM2 "
                                 "135M is set, in F3 → E, Context; "), office
        assert main(["fit", "office-cpu"]) == 0
        out = capsys.readouterr().out
        assert _needs(office) == _needs(out) == _needs(fit_verdict(load_profile("office-cpu"), en)), (office, out)
        assert _words_a_second(office) == _words_a_second(out)
        qwen = model_fit(rows["qwen2.5-14b-instruct-q4_k_m"], en)  # a catalog model gpu-qwen25-14b runs
        assert main(["fit", "gpu-qwen25-14b"]) in (0, 2)
        out = capsys.readouterr().out
        assert _needs(qwen) == _needs(out) and _words_a_second(qwen) == _words_a_second(out), (qwen, out)
        # none runs it: as a new profile for it, said so, and as fit plans it by its name
        plain = model_fit(rows["SmolLM2-135M-Instruct.Q4_0"], en)
        assert plain.startswith("On this PC, for a conversation of up to about 3,100 words (as a new profile is set; "), plain
        assert main(["fit", "SmolLM2-135M-Instruct.Q4_0"]) == 0
        out = capsys.readouterr().out
        assert _needs(plain) == _needs(out) and _words_a_second(plain) == _words_a_second(out), (plain, out)
    finally:
        set_probe(None)


def test_turkish_says_the_replies_speed_in_turkish_words_as_the_estimate_beside_it(
        smollm2_path: Path, tmp_path: Path) -> None:
    """F3 → E with --lang tr said "Saniyede en fazla yaklaşık 25 sözcük" and right under it "Onunla son
    yanıtınız: saniyede yaklaşık 43 sözcük": the estimate in Turkish words, the English reply in its own
    English words (fit --lang tr said "159 token (yaklaşık 64 sözcük)"). Both in the UI's language's
    words (``about_words``); an English UI keeps the replies' own English words, as F5 says them."""
    from workstation.core.phrases import about_words
    from workstation.core.profile_lookup import load_profile
    from workstation.tui.i18n import Texts
    from workstation.tui.integrations import installed_models, model_fit, speed_estimate

    tr, en = Texts("tr"), Texts("en")
    kept = tmp_path / "conversations.sqlite3"
    english = ("The meeting is on Monday and the report is ready for you to read before it. " * 6).strip()
    for _ in range(2):
        _reply(kept, smollm2_path, 60.0, english, tokens=100)
    turkish_words = about_words(60.0, tr.get)  # the language's figure, as the estimate's
    said = speed_estimate(load_profile("office-cpu"), tr, replies=kept)  # F3 → E
    assert f"saniyede yaklaşık {turkish_words} sözcük." in said and "yaklaşık 58 sözcük" not in said, said
    row = next(r for r in installed_models(tr) if r.path and r.path.resolve() == smollm2_path.resolve())
    assert f"saniyede yaklaşık {turkish_words} sözcük." in model_fit(row, tr, replies=kept)  # F4
    # in English, the English replies' own words a token (96 words of 100 tokens: 58), as F5 says them
    assert "about 58 words a second." in speed_estimate(load_profile("office-cpu"), en, replies=kept)
