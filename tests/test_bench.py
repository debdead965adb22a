"""`workstation bench` on the real SmolLM2: llama-bench fields, replay, and the SQLite history."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import requantized_copy

from workstation.cli import build_parser, main
from workstation.core.bench import BenchInputError, read_replay_file
from workstation.core.results import ResultRow, build_info, history, machine_info, save_run

LLAMA_BENCH_FIELDS = (
    "n_prompt", "n_gen", "avg_ts", "stddev_ts", "type_k", "type_v", "n_gpu_layers", "flash_attn",
    "model_filename", "model_type", "model_size", "n_threads", "avg_ns", "stddev_ns", "samples_ns",
    "samples_ts", "n_batch", "n_ubatch", "model_n_params", "cpu_info", "test_time", "build_commit",
)


@pytest.fixture
def tiny_profile(tmp_path: Path, smollm2_path: Path) -> Path:
    # one thread: two spinning threads crawl when other work shares the machine's 2 cores
    path = tmp_path / "tiny.yaml"
    path.write_text(
        f"name: tiny\nmodel: {smollm2_path}\ncontext: 256\nthreads: 1\ngpu_layers: 0\n"
        "kv_cache: {k: q8_0, v: f16}\nsystem_prompt: ''\n",
        encoding="utf-8",
    )
    return path


def test_bench_json_has_llama_bench_fields(tiny_profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bench", "-p", str(tiny_profile), "--n-prompt", "64", "--n-gen", "16", "-r", "1", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    records = json.loads(out)
    assert [(r["test"], r["n_prompt"], r["n_gen"]) for r in records] == [("pp64", 64, 0), ("tg16", 0, 16)]
    for rec in records:
        for name in LLAMA_BENCH_FIELDS:
            assert name in rec, name
        assert rec["type_k"] == "q8_0" and rec["type_v"] == "f16"
        assert rec["n_threads"] == 1 and rec["n_gpu_layers"] == 0 and rec["flash_attn"] == 1
        assert rec["model_filename"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
        assert "Q4_1" in rec["model_type"] and 50e6 < rec["model_size"] < 150e6
        assert len(rec["samples_ns"]) == 1 and rec["stddev_ts"] == 0
        # rates are counts over times: avg_ts is n tokens / the one sample
        n = rec["n_prompt"] + rec["n_gen"]
        assert rec["avg_ts"] == pytest.approx(n * 1e9 / rec["samples_ns"][0], rel=1e-6)
        assert 0.1 < rec["avg_ts"] < 1e6
        assert rec["ttft_ms"] > 0 and rec["chat_ts"] > 0
        assert rec["acceptance"] is None and rec["speculative"] == "off"
        assert rec["llama_cpp_python"]

    # saved with machine and build info, and read back
    saved = history(kind="bench", profile="tiny")
    tests = [h.test for h in saved]
    assert tests[:4] == ["pp64", "tg16", "ttft", "chat"]
    pp = saved[0]
    assert pp.value == pytest.approx(records[0]["avg_ts"])
    assert pp.unit == "tok/s" and pp.machine["cpu_cores"] >= 1 and pp.machine["ram_bytes"] > 0
    assert "gpus" in pp.machine and pp.build["llama_cpp_python"]


def test_bench_table_and_replay(tiny_profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Say hello.\n\nName a colour.\nJust one.\n", encoding="utf-8")
    assert read_replay_file(prompts)[1][0]["content"] == "Name a colour.\nJust one."
    rc = main(["bench", "-p", str(tiny_profile), "--replay", str(prompts), "--max-tokens", "4", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    (res,) = data
    assert [p["index"] for p in res["prompts"]] == [1, 2]
    assert all(p["predicted_n"] <= 4 and p["ttft_ms"] > 0 for p in res["prompts"])
    assert res["summary"]["prompts"] == 2 and res["summary"]["ttft_ms_mean"] > 0
    assert history(kind="bench", test="replay_ttft")

    # a person's own documents: each one prompt, asked as F6 asks a document of one part (a
    # letter given to --replay was a prompt per paragraph, "Yours sincerely," one of them)
    from workstation.core.bench import document_prompts
    from workstation.core.documents import read_document
    from workstation.core.summarize import whole_document_messages
    from workstation.core.summary_chunks import FACTS_LABEL

    sheet, letter, other = tmp_path / "invoices.csv", tmp_path / "a" / "letter.txt", tmp_path / "b" / "letter.txt"
    sheet.write_text("Customer,Amount\nOakfield,120.50\nGreenway,80\n", encoding="utf-8")
    for path in (letter, other):
        path.parent.mkdir()
        path.write_text("Dear Ms. Reyes,\n\nThe accounts are due on 30 September.\n\nYours sincerely,\n",
                        encoding="utf-8")
    asked = document_prompts([sheet, letter])
    assert asked == [whole_document_messages(read_document(p)) for p in (sheet, letter)]
    assert FACTS_LABEL in asked[0][0]["content"] and "Yours sincerely," in asked[1][0]["content"]
    # a variant of the profile named on the command line (no second file written by hand), its name
    # saying what differs; two documents of one name in two folders told apart (two rows said "letter.txt")
    rc = main(["bench", "-p", f"{tiny_profile} kv_cache=f16", "--document", str(sheet), str(letter), str(other),
               "--max-tokens", "2", "--json", "--no-save"])
    (res,) = json.loads(capsys.readouterr().out)
    assert rc == 0 and res["profile"] == "tiny · K/V full size"
    assert [p["prompt"] for p in res["prompts"]] == ["invoices.csv", "a/letter.txt", "b/letter.txt"]
    assert all(p["prompt_n"] > 40 for p in res["prompts"][:2])  # the instruction and the whole document, read
    # a document longer than the context: named, with what does hold it (it said "The message is 1,460 tokens…")
    long = tmp_path / "ledger.txt"
    long.write_text("Paid 120.50 to Oakfield for paper. " * 60, encoding="utf-8")
    assert main(["bench", "-p", str(tiny_profile), "--document", str(letter), str(long), "--max-tokens", "2",
                 "--no-save"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("workstation: ledger.txt is ") and "more than tiny holds in one message (a context of 256 " \
        "tokens" in err and "summarize " in err and f"'-p {tiny_profile}\\ context=1024'" in err, err
    # in the command line's language (it was English under Turkish)
    assert main(["bench", "-p", str(tiny_profile), "--document", str(long), "--max-tokens", "2", "--no-save",
                 "--lang", "tr"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("workstation: ledger.txt, özetleme talimatıyla birlikte ") and " token: tiny profilinin tek " \
        "mesajda alabileceğinden fazla (256 tokenlik bir bağlam" in err and \
        f" ya da daha uzun bir bağlamla ölçün: '-p {tiny_profile}\\ context=1024'." in err, err


def test_the_bench_table_says_its_columns_in_plain_words(tiny_profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ngl, fa, pp64, tg4, chat tg had no legend (the --document table had one): one legend under
    each table, in the command line's language, and --help says pp and tg in plain words."""
    from workstation.commands.bench import REPLAY_WORDS

    assert main(["bench", "-p", str(tiny_profile), "-n-prompt", "16", "-n", "4", "-r", "1", "--no-save"]) == 0
    lines = capsys.readouterr().out.splitlines()
    legend = next(line for line in lines if line.startswith("ngl: "))
    for said in ("ngl: GPU layers", "fa: flash attention", "pp16: reading 16 tokens of a prompt",
                 "tg4: writing 4 tokens of a reply", "ttft: the wait from sending a prompt to its first word",
                 "chat tg: writing a reply in a chat turn", "tok/s: tokens (pieces of words"):
        assert said in legend, said
    # the replay's legend is the same function's: its tok/s said alike
    assert "tok/s: tokens (pieces of words, about 4 for 3 English words) a second" in REPLAY_WORDS
    assert main(["bench", "-p", str(tiny_profile), "-n-prompt", "16", "-n", "4", "-r", "1", "--no-save",
                 "--lang", "tr"]) == 0
    legend = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("ngl: "))
    assert "pp16: bir istemin 16 tokenını okuma" in legend and "tg4: bir yanıtın 4 tokenını yazma" in legend \
        and "fa: flash attention, bellekten" in legend and "GPU katmanları" in legend
    for lang, words in (("en", ("reading a prompt", "writing a reply")), ("tr", ("istemi okuma", "yanıt yazma"))):
        with pytest.raises(SystemExit):
            main(["--lang", lang, "bench", "--help"])
        helped = " ".join(capsys.readouterr().out.split())
        assert all(w in helped for w in words) and "pp/tg" not in helped and "(pp)" not in helped, helped


def test_a_variant_of_a_profile_is_named_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """"office-cpu, and office-cpu with the half-size context memory" took a second profile file
    written by hand: -p takes the settings to change after the profile, set and checked as F3's E
    saves them, the file left as it is; a bad one is one sentence naming it and what it may be."""
    from workstation.core.documents import told_apart
    from workstation.core.errors import ProfileError
    from workstation.core.profile_lookup import load_profile
    from workstation.core.profile_variants import load_variant

    shipped = load_profile("office-cpu")
    assert shipped.source is not None
    before = shipped.source.read_text(encoding="utf-8")
    half = load_variant("office-cpu kv_cache=q8_0")
    assert (half.key, half.ref, half.kv_cache.k, half.kv_cache.v) == (
        "office-cpu · K/V half size", "office-cpu kv_cache=q8_0", "q8_0", "q8_0")
    assert half.context == shipped.context and shipped.source.read_text(encoding="utf-8") == before
    assert load_variant(half.ref).key == half.key and load_variant("office-cpu").key == "office-cpu"
    both = load_variant("office-cpu context=8192 speculative=lookup kv_cache.v=q4_0")
    assert (both.context, both.speculative.mode) == (8192, "lookup")
    assert both.key == "office-cpu · context 8,192, prompt lookup, K full size, V quarter size"
    # two quantizations of one model, named whole: Q8_0 and Q4_0 were both "office-cpu · model
    # SmolLM2-135M-Instruct.Q…" (cut at 24 characters, where they differ), and F12 pooled their rows
    q8, q4 = (load_variant(f"office-cpu model=SmolLM2-135M-Instruct.{q}") for q in ("Q8_0", "Q4_0"))
    assert (q8.key, q4.key) == ("office-cpu · SmolLM2-135M-Instruct.Q8_0", "office-cpu · SmolLM2-135M-Instruct.Q4_0")
    assert load_variant("office-cpu model=/data/Qwen2.5-14B-Instruct-Q4_K_M.gguf").key == \
        "office-cpu · Qwen2.5-14B-Instruct-Q4_K_M"
    for ref, said in (
            ("office-cpu kv_cache=q9", "'office-cpu kv_cache=q9': field 'kv_cache' is 'q9'; allowed values are f32, f16,"),
            ("office-cpu contex=8192", "unknown field 'contex'; did you mean 'context'?"),
            # K and V, as README writes it (it offered 'kv_cache.v', which sets V alone)
            ("office-cpu kvcache=q8_0", "unknown field 'kvcache'; did you mean 'kv_cache'?"),
            ("office-cpu temperature=0.2", "unknown field 'temperature'; did you mean 'sampling.temperature'?"),
            ("office-cpu context=lots", "field 'context' must be a whole number, not 'lots'."),
            ("office-cpu flash_attn=maybe", "field 'flash_attn' is 'maybe'; allowed values are auto, on, off."),
            ("office-cpu kv_cache", "'kv_cache' has no value; a setting after the profile is written NAME=VALUE"),
            ("Office_CPU kv_cache=q8_0", "Did you mean 'office-cpu'?")):  # (case and punctuation are no typo)
        with pytest.raises(ProfileError) as bad:
            load_variant(ref)
        assert said in str(bad.value), str(bad.value)
    for command in ("bench", "eval", "fit"):  # before any model loads: one line, exit non-zero
        assert main([command, "-p", "office-cpu kv_cache.v=q9"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "field 'kv_cache.v' is 'q9'; allowed values are" in err, err
    # a model's name mistyped in the variant: the one meant, case and punctuation aside, as a profile's
    assert main(["bench", "-p", "office-cpu model=Gemma-3-270M-Q4_K_M", "--no-save"]) == 1
    err = capsys.readouterr().err.splitlines()[-1]
    assert "Gemma-3-270M-Q4_K_M.gguf does not exist;" in err and err.endswith("Did you mean 'gemma-3-270m-q4_k_m'?"), err
    # the rows of two documents of one name, by their folders; the others by their names
    assert told_apart([Path("/d/a/notes.txt"), Path("/d/b/notes.txt"), Path("/d/a/plan.txt")]) == [
        "a/notes.txt", "b/notes.txt", "plan.txt"]


def test_document_speeds_say_where_quality_and_memory_are(tiny_profile: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """bench --document compared two quantizations or K/V types by speed alone, and ended there:
    what the answers lose and the memory each needs (eval --kld) was in --help only. Under the
    speeds, the command that measures them, on the documents just given; for two models, eval's
    tasks (a KL divergence between two models is no quantization's loss)."""
    from workstation.commands.bench import document_costs
    from workstation.core.invocation import cli, shell_word
    from workstation.core.profile_variants import load_variant

    memo = tmp_path / "Q3 memo.txt"
    same = [load_variant(str(tiny_profile)), load_variant(f"{tiny_profile} kv_cache=f16")]
    assert document_costs(same, [memo]) == (
        "These are speeds alone; what the answers lose on these documents, and the memory each needs: "
        + cli(f"eval -p {shell_word(str(tiny_profile))} -p {shell_word(f'{tiny_profile} kv_cache=f16')} "
              f"--kld {shell_word(str(memo))}"))
    remote = load_variant("office-server")  # (its model is a name on the server: not known to be the same)
    assert document_costs([same[0], remote], [memo]) == (
        f"These are speeds alone; how well each model answers: {cli(f'eval -p {shell_word(str(tiny_profile))} -p office-server')}")
    # a fine-tune of the same size and architecture with other token texts is another model (it was
    # offered --kld, by its parameter count alone); another quantization of the same model is not
    import gguf

    tuned = tmp_path / "tuned.gguf"
    shutil.copyfile(smollm2_path, tuned)
    reader = gguf.GGUFReader(tuned, "r+")
    tokens = reader.fields["tokenizer.ggml.tokens"]
    tokens.parts[tokens.data[1000]][0] = 0x7F  # one token's text, one letter ("()" to "\x7f)", a token of its own)
    reader.data.flush()
    del reader
    for model, kld in ((tuned, False), (requantized_copy(smollm2_path, "Q8_0"), True)):
        other = tmp_path / f"{model.stem}.yaml"
        other.write_text(tiny_profile.read_text(encoding="utf-8").replace(str(smollm2_path), str(model)), encoding="utf-8")
        assert ("--kld" in document_costs([same[0], load_variant(str(other))], [memo])) is kld, model


def test_replay_file_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"text": 1}\n', encoding="utf-8")
    with pytest.raises(BenchInputError, match="line 2 needs a 'prompt'"):
        read_replay_file(bad)
    good = tmp_path / "q.jsonl"
    good.write_text('"plain"\n{"messages": [{"role": "user", "content": "hi"}]}\n', encoding="utf-8")
    assert [m[-1]["content"] for m in read_replay_file(good)] == ["plain", "hi"]
    assert main(["bench", "--replay", str(tmp_path / "missing.txt")]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err


def test_bench_rejects_sizes_beyond_the_context(tiny_profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "-p", str(tiny_profile), "--n-prompt", "1000", "--n-gen", "0", "--no-ttft"]) == 1
    assert "larger than profile 'tiny''s context of 256" in capsys.readouterr().err
    # its options' refusals in the command line's language (they were English under Turkish)
    prompts = tiny_profile.with_name("prompts.txt")
    prompts.write_text("Say hello.\n", encoding="utf-8")
    for words, said in [(["--replay", str(prompts), "--max-tokens", "0"], "--max-tokens en az 1 olmalı, 0 değil."),
                        (["--replay", str(prompts), "--document", str(prompts)],
                         "--replay ya da --document verin, ikisini birden değil.")]:
        assert main(["bench", "--lang", "tr", "-p", str(tiny_profile), *words]) == 1
        assert capsys.readouterr().err == f"workstation: {said}\n"


def test_threads_beyond_a_profiles_range_are_refused_by_every_command(
        tiny_profile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``bench --threads 100000`` ended in "Segmentation fault" (exit 139), eval's too: every
    command's --threads goes by a profile file's rule, auto or 1 to 512, said as it says it."""
    for line in (["bench", "-p", str(tiny_profile), "--threads", "100000"],
                 ["eval", "-p", str(tiny_profile), "--no-save", "--threads", "100000", "--perplexity",
                  str(tiny_profile), "--chunks", "1"],
                 ["size", "--measure", "-t", "513"], ["models", "quantize", "x", "-t", "q4_0", "--threads", "0"]):
        with pytest.raises(SystemExit) as stopped:
            main(line)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("workstation: ") and err.endswith("; allowed values are auto or 1 to 512.\n"), err
    with pytest.raises(SystemExit):
        main(["bench", "--lang", "tr", "-t", "abc"])
    assert capsys.readouterr().err == ("workstation: -t/--threads 'abc' olamaz; izin verilen değerler auto ya da "
                                       "1 ile 512 arası.\n")
    too_many = tiny_profile.with_name("many.yaml")
    too_many.write_text(tiny_profile.read_text(encoding="utf-8").replace("threads: 1", "threads: 999"), encoding="utf-8")
    assert main(["profiles", "check", str(too_many)]) != 0
    assert "allowed values are auto or 1 to 512." in capsys.readouterr().err
    # auto, as a profile takes it: the profile's own rule (all the cores)
    assert build_parser("bench").parse_args(["bench", "--threads", "auto"]).threads == 0


def test_results_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", '[{"name": "RTX 4060 Ti (fake)", "vram_total_gb": 16}]')
    machine_info.cache_clear()  # (read once a process: the card of this test, then the machine's again)
    try:
        run1 = save_run("eval", [ResultRow("a", "accuracy", 0.5, "ratio", "m.gguf", {"x": [1, "ü"]})], "eval -p a")
    finally:
        machine_info.cache_clear()
    run2 = save_run("bench", [ResultRow("a", "pp8", 10.0, "tok/s"), ResultRow("b", "pp8", 20.0, "tok/s")])
    everything = history()
    assert [h.run_id for h in everything] == [run2, run2, run1]  # newest run first
    assert [h.profile for h in everything[:2]] == ["a", "b"]  # saved order within a run
    (acc,) = history(kind="eval")
    assert acc.data == {"x": [1, "ü"]} and acc.command == "eval -p a" and acc.model == "m.gguf"
    assert acc.machine["gpus"] == ["RTX 4060 Ti (fake)"]  # the GPU it ran on, as hw names it
    assert [h.value for h in history(profile="b")] == [20.0]
    assert history(test="nothing") == []
    assert machine_info()["cpu_model"] and isinstance(build_info()["build_flags"], list)


def test_results_written_by_the_first_version_still_open_and_a_damaged_file_is_said(tmp_path: Path) -> None:
    """The history now opens as the other databases do (its schema versioned): a file the
    first version wrote keeps its rows, and a damaged one is one sentence, also when saving."""
    import sqlite3

    from workstation.core.errors import WorkstationError

    old = tmp_path / "old.sqlite3"
    first = save_run("bench", [ResultRow("p", "tg", 5.0, "tok/s")], path=old)
    with sqlite3.connect(old) as db:
        db.execute("PRAGMA user_version = 0")  # (the first version's file: its tables, with no schema version)
    db.close()
    assert [(h.run_id, h.value) for h in history(path=old)] == [(first, 5.0)]
    save_run("bench", [ResultRow("p", "tg", 6.0, "tok/s")], path=old)
    assert [h.value for h in history(path=old)] == [6.0, 5.0]
    bad = tmp_path / "bad.sqlite3"
    bad.write_bytes(b"not a database\n" * 50)
    with pytest.raises(WorkstationError) as failed:
        save_run("bench", [ResultRow("p", "tg", 6.0, "tok/s")], path=bad)
    assert str(failed.value).startswith(
        f"The results were not kept: the results history {bad} cannot be opened (file is not a database). The file is "
        "damaged: move it aside with the files beside it whose names begin the same (bad.sqlite3-wal, bad.sqlite3-shm)")


def test_repetitions_that_disagree_are_said_under_the_table(smollm2_path: Path, gemma_path: Path) -> None:
    """Two profiles benched while the test suite took a core read 37.9 ± 16.5 tok/s and
    3.2 ± 0.4, with nothing to say that the figures could not be compared."""
    from workstation.commands.bench import format_bench
    from workstation.core.bench import ProfileBench, SpeedStat

    info = {"model_type": "llama 256M Q4_1", "model_size": 2**27, "model_n_params": 134_515_008, "n_gpu_layers": 0,
            "model_filename": str(smollm2_path),
            "n_threads": 2, "type_k": "f16", "type_v": "f16", "flash_attn": True}
    steady = ProfileBench("office-cpu", info, pp=SpeedStat(64, [500_000_000, 510_000_000]),
                          tg=SpeedStat(16, [200_000_000, 202_000_000]))
    kv_q8 = {**info, "type_k": "q8_0", "type_v": "q8_0"}
    noisy = ProfileBench("kv-q8", kv_q8, pp=SpeedStat(64, [500_000_000, 505_000_000]),
                         tg=SpeedStat(16, [200_000_000, 900_000_000]))
    assert "note:" not in format_bench([steady])
    # -r 1 on a busy PC: "tg128 6.76 ± 0.00" beside "chat tg 65.86", both as facts; now one run is said as one,
    # the two figures of its writing 10x apart as a busy PC, and what the figures mean in words a second
    from workstation.core.metrics import TurnMetrics
    from workstation.tui.i18n import Texts

    busy = ProfileBench("office-cpu", info, pp=SpeedStat(512, [1_000_000_000]), tg=SpeedStat(128, [18_934_911_242]),
                        turns=[TurnMetrics(ttft_ms=80.0, predicted_n=128, predicted_ms=1943.5)])
    lines = format_bench([busy]).splitlines()
    assert any(line.endswith("| tg128   |   6.76 tok/s |") for line in lines), lines
    assert any(line.endswith("| ttft    |      80.0 ms |") for line in lines) and not any("±" in line for line in lines)
    assert lines[-3:] == [
        # (its writing said as the range of its two figures: the tg of a busy moment said "writes about 5 words a
        # second", and the chat's alone then "about 120" of a model whose replies came at 43)
        "What this means: office-cpu reads your documents at about 380 words a second and writes somewhere between "
        "about 5 and 49 words a second: its two writing figures disagree (see the note below), so neither is sure.",
        "note: office-cpu's tg128 (6.76 tok/s) and chat tg (65.86 tok/s) both time its writing, yet one is 9.7x the "
        "other: another program was probably using the CPU, so compare these figures with care; run again when the "
        "machine is quiet, or with more repetitions (-r).",
        "note: each test ran once, and one run cannot tell whether another program was using the CPU meanwhile; -r 3 "
        "runs each test three times and says how much the runs differ."], lines
    said = format_bench([busy], Texts("tr").get)  # in the command line's language (a Turkish word is more tokens)
    assert "Bunun anlamı: office-cpu belgelerinizi saniyede yaklaşık 200 sözcük okur ve saniyede yaklaşık 3 ile 26 " \
        "sözcük arasında yazar" in said and "biri ötekinin 9,7 katı" in said and "not: her test bir kez" in said, said
    # a newcomer's first look (--quick) and llama-bench's own tests, -n and -r winning over either
    from workstation.cli import build_parser
    from workstation.commands.bench import bench_config

    def config(*argv: str) -> tuple[int, int, int]:
        c = bench_config(build_parser().parse_args(["bench", *argv]))
        return c.n_prompt, c.n_gen, c.repetitions

    assert (config(), config("--quick"), config("--quick", "-n", "64", "-r", "1")) == (
        (512, 128, 5), (512, 32, 3), (512, 64, 1))
    # the model is named by its parameter count, as `models inspect` says it, not llama.cpp's
    # size class from the layer count ("llama 256M" for SmolLM2-135M); the JSON keeps that; the
    # params column says it the same way (it read "134.52 M" beside "llama 135M")
    # its size as 'models list' says it: the file's, in the app's units (it said llama-bench's "92.10 MiB" of
    # the weights beside the list's "94 MB"); llama-bench's own figure stays in the JSON
    assert "| llama 135M Q4_1 | 94 MB |   135M |" in format_bench([steady])
    gone = ProfileBench("office-cpu", {**info, "model_filename": str(smollm2_path) + ".moved"}, pp=steady.pp)
    assert "| llama 135M Q4_1 | 128 MB |   135M |" in format_bench([gone])  # (a file moved since: the weights)
    notes = [line for line in format_bench([steady, noisy]).splitlines() if line.startswith("note:")]
    assert notes == ["note: kv-q8's tg16 repetitions differ by ±90%: another program was probably using the CPU, "
                     "so compare these figures with care; run again when the machine is quiet, or with more "
                     "repetitions (-r)."]
    # the notes and the comparison in the command line's language, its figures with a decimal comma
    said = format_bench([steady, noisy], Texts("tr").get)
    assert "Kısacası, office-cpu ile karşılaştırıldığında: kv-q8 bir istemi aynı hızda okur ve bir yanıtı 1,63 kat " \
        "daha yavaş (emin değil: fark, tekrarlar arasındaki değişkenlikten küçük) yazar." in said, said
    assert "not: kv-q8 profilinin tg16 tekrarları ±%90 farklı: büyük olasılıkla başka bir program" in said, said
    # its 80 and 18 tok/s against 80 and 79: which writes faster cannot be told (a draft pair
    # was said "1.47x as fast" and a minute later "2.82x slower" on a busy PC)
    lines = format_bench([noisy, steady]).splitlines()
    assert ("In plain words, against kv-q8: office-cpu reads a prompt as fast and writes a reply 1.63x as fast (not "
            "sure: within how much the repetitions varied).") in lines
    assert ("Fastest at writing here: not sure; office-cpu wrote faster than kv-q8 by less than their repetitions "
            "varied. Run again when the machine is quiet, or with more repetitions (-r).") in lines
    slow = ProfileBench("kv-q8", kv_q8, pp=SpeedStat(64, [500_000_000, 505_000_000]),
                        tg=SpeedStat(16, [300_000_000, 303_000_000]))  # slower by more than either varies
    lines = format_bench([slow, steady]).splitlines()
    assert "In plain words, against kv-q8: office-cpu reads a prompt as fast and writes a reply 1.50x as fast." in lines
    assert ("Fastest at writing here: office-cpu (what it costs in quality: workstation eval -p kv-q8 -p office-cpu "
            "--kld YOUR_DOCUMENT).") in lines
    # a profile given by its path is named so; another model is priced by its answers (a KLD
    # between two models is no quantization's loss)
    other = ProfileBench("desk", {**info, "model_filename": str(gemma_path)}, ref="/home/ayla/my profiles/desk.yaml",
                         pp=SpeedStat(64, [500_000_000, 505_000_000]), tg=SpeedStat(16, [100_000_000, 101_000_000]))
    assert ("Fastest at writing here: desk (another model; how well each answers: workstation eval -p office-cpu "
            "-p /home/ayla/my\\ profiles/desk.yaml).") in format_bench([steady, other]).splitlines()
    # in alternating rounds the steady one says no other program was at work: it is the profile's own
    steady.rounds = noisy.rounds = 2
    notes = [line for line in format_bench([steady, noisy]).splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "the other profiles, run in the same rounds, held steady, so it is this " \
        "profile's own" in notes[0] and "another program" not in notes[0], notes


def test_a_speculative_profile_that_drafted_nothing_says_why() -> None:
    """A draft pair read "accepted | no drafts reported", as if broken, where the adaptive policy
    had switched drafting off as unable to pay on this machine; it says so now."""
    from workstation.commands.bench import format_bench
    from workstation.core.bench import ProfileBench, SpeedStat
    from workstation.core.metrics import TurnMetrics

    info = {"model_type": "llama 256M Q4_1", "model_size": 2**27, "model_n_params": 134_515_008, "n_gpu_layers": 0,
            "n_threads": 2, "type_k": "f16", "type_v": "f16", "flash_attn": True, "speculative": "draft"}
    turn = TurnMetrics(ttft_ms=40.0, predicted_n=32, predicted_ms=300.0)
    cannot_pay = [("bench.drafting_cannot_pay", {"draft": "9.0", "verify": "4.0", "plain": "8.0"})]  # (speculative.py's)
    off = ProfileBench("draft-pair", info, tg=SpeedStat(16, [200_000_000]), turns=[turn], drafting_off=cannot_pay)
    table = format_bench([off])
    assert "none drafted (see below)" in table
    why = "a drafted token costs 9.0 ms + 4.0 ms to verify against 8.0 ms for a plain step: drafting cannot pay on this machine"
    assert f"note: draft-pair stopped drafting for the rest of the session: {why}." in table
    assert [rec["drafting_off"] for rec in off.records()] == [why]  # and in --json (English), and saved
    from workstation.tui.i18n import Texts

    # bench --lang tr: the reason in Turkish too, its figures with a decimal comma (it was put in as English)
    assert ("not: draft-pair oturumun geri kalanında hızlandırmayı bıraktı: yardımcı modelin önerdiği bir token 9,0 ms, "
            "doğrulaması 4,0 ms sürüyor, sıradan bir adım ise 8,0 ms: hızlandırma bu bilgisayarda kazandıramaz.") \
        in format_bench([off], Texts("tr").get).splitlines()
    quiet = ProfileBench("draft-pair", info, turns=[turn])
    assert "note: draft-pair drafted nothing in these turns: its adaptive policy drafts only where a draft is " \
           "expected to pay" in format_bench([quiet])
    # drafted, then switched off: the share drafted stays in the table, the reason under it
    drafted = ProfileBench("draft-pair", info, turns=[TurnMetrics(ttft_ms=40.0, predicted_n=32, predicted_ms=300.0,
                                                                  draft_n=12, draft_n_accepted=3)],
                           drafting_off=cannot_pay)
    table = format_bench([drafted])
    assert "25.0% of 12 drafted" in table and "note: draft-pair stopped drafting for the rest of the session" in table
    # against a plain profile: its tg is timed without drafting ("1.05x slower" was read as what speculation buys)
    plain_info = {k: v for k, v in info.items() if k != "speculative"}
    plain = ProfileBench("office-q8", plain_info, tg=SpeedStat(16, [210_000_000, 212_000_000]))
    paired = ProfileBench("draft-pair", info, tg=SpeedStat(16, [220_000_000, 221_000_000]))
    said = [line for line in format_bench([plain, paired]).splitlines() if line.startswith("In plain words")]
    assert said == ["In plain words, against office-q8: draft-pair writes a reply, without drafting, 1.05x slower "
                    "(not sure: within how much the repetitions varied)."], said
    assert "note: tg is timed without drafting, as llama-bench times it; the 'chat tg' row is a chat turn with the " \
           "drafts (what speculation buys is there)." in format_bench([plain, paired])
    # with chat turns, the sentences say the 'chat tg' row they sit under: a draft pair's chat tg of 85 tok/s read
    # "writes about 10 words a second" (its tg's, without drafting) and "Fastest at writing here: not sure"
    from workstation.core.phrases import about_words

    def chat(ms: float, drafted: int = 0) -> TurnMetrics:
        return TurnMetrics(ttft_ms=40.0, predicted_n=32, predicted_ms=ms, draft_n=drafted, draft_n_accepted=drafted)

    fast = ProfileBench("draft-pair", info, tg=SpeedStat(32, [2_460_000_000, 2_470_000_000, 2_450_000_000]),
                        turns=[chat(376.0, 4), chat(377.0, 4), chat(375.0, 4)], rounds=3)
    nodraft = ProfileBench("draft-pair · no drafting", plain_info,
                           tg=SpeedStat(32, [680_000_000, 670_000_000, 690_000_000]),
                           turns=[chat(640.0), chat(642.0), chat(641.0)], rounds=3)
    lines = format_bench([nodraft, fast]).splitlines()
    assert f"What this means: draft-pair writes about {about_words(32 / 0.376)} words a second." in lines, lines
    assert ("In plain words, against draft-pair · no drafting: draft-pair writes a reply in a chat turn ('chat tg', "
            "drafts included) 1.70x as fast.") in lines, lines
    assert "Fastest at writing here: draft-pair (" in "\n".join(lines)  # (its tg, without drafting, is the slower)


def test_two_profiles_run_in_rounds_with_the_order_alternating(tiny_profile: Path, tmp_path: Path) -> None:
    """Profiles ran one after the other, all repetitions of one before the next: a program that
    took the CPU for a minute slowed one profile only, and the comparison read it as the
    profile's cost. Now each round loads every profile in turn, the order reversed every other
    round, for one repetition of each test."""
    from workstation.commands.bench import format_bench
    from workstation.core.bench import BenchConfig, bench_profiles
    from workstation.core.profile_lookup import load_profile

    other = tmp_path / "other.yaml"
    other.write_text(tiny_profile.read_text(encoding="utf-8").replace("name: tiny", "name: other")
                     .replace("q8_0", "f16"), encoding="utf-8")
    said: list[str] = []
    results = bench_profiles([load_profile(str(tiny_profile)), load_profile(str(other))],
                             BenchConfig(n_prompt=16, n_gen=4, repetitions=3), said.append)
    assert "round 1/3: tiny: tg4 run 1/1: 2/4 tokens" in said, said  # (tg128 was 19 s without a word)
    loads = [m.split(": loading ")[0] for m in said if ": loading " in m]
    assert loads == ["round 1/3: tiny", "round 1/3: other", "round 2/3: other", "round 2/3: tiny",
                     "round 3/3: tiny", "round 3/3: other"], said
    for r in results:
        assert r.rounds == 3 and r.pp is not None and r.tg is not None
        assert {rec["rounds"] for rec in r.records()} == {3}  # the JSON says so too
        assert len(r.pp.samples_ns) == len(r.tg.samples_ns) == len(r.turns) == 3
    assert [r.profile for r in results] == ["tiny", "other"]
    plain = [line for line in format_bench(results).splitlines() if line.startswith("In plain words")]
    ratio = r"(as fast|\d+\.\d\dx (as fast|slower)( \(not sure: within how much the repetitions varied\))?)"
    # (by the chat turns where a tg's repetitions disagree: this PC busy meanwhile)
    assert plain and re.fullmatch(rf"In plain words, against tiny: other reads a prompt {ratio} and writes a reply "
                                  rf"(in a chat turn \('chat tg'\) )?{ratio}\.", plain[0]), plain
    assert [r.model_info["type_k"] for r in results] == ["q8_0", "f16"]
    assert "The profiles ran in 3 rounds" in format_bench(results)
    # one profile: its repetitions in a row, as llama-bench runs them
    from workstation.tui.i18n import Texts

    heard: list[str] = []  # (its progress in the command line's language: bench --lang tr said it in English)
    alone = bench_profiles([load_profile(str(tiny_profile))], BenchConfig(n_prompt=16, n_gen=4, repetitions=2,
                                                                         ttft=False), heard.append, Texts("tr").get)
    assert alone[0].rounds == 1 and len(alone[0].tg.samples_ns) == 2  # type: ignore[union-attr]
    assert "rounds" not in format_bench(alone)
    assert heard[0].startswith("tiny: ") and heard[0].endswith(" yükleniyor") and "tiny: pp16, çalıştırma 2/2" in heard
    assert "tiny: tg4, çalıştırma 1/2: 2/4 token" in heard, heard
    assert "Profiller 3 turda çalıştı: " in format_bench(results, Texts("tr").get)
    with pytest.raises(BenchInputError, match="--repetitions must be 1 or more, not 0"):
        bench_profiles([load_profile(str(tiny_profile))] * 2, BenchConfig(repetitions=0))


def test_the_replay_table_is_markdown_a_one_letter_column_too() -> None:
    """The replay table's "#" column (one letter, right-aligned) had "| : |" under it: not a
    Markdown separator, so the table pasted into a note or an issue showed as plain text."""
    import re

    from workstation.commands.bench import format_replay
    from workstation.core.bench import ReplayItem, ReplayResult
    from workstation.core.metrics import TurnMetrics

    m = TurnMetrics(ttft_ms=120, prompt_n=30, predicted_n=12, predicted_ms=400)
    m.finish_rates()
    text = format_replay([ReplayResult("office-cpu", "m.gguf", [ReplayItem(1, "Summarize this letter", m)])])
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header, sep, row = lines
    cells = [c.strip() for c in sep.strip("|").split("|")]
    assert all(re.fullmatch(r":?-+:?", c) for c in cells), sep
    assert len(header) == len(sep) == len(row)  # the columns line up in a terminal too
    assert cells[0].endswith(":") and cells[1].endswith("-")  # "#" right-aligned, the prompt left


def test_a_replay_of_two_profiles_runs_in_rounds_and_compares_them(
        tiny_profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--replay read no -r, ran the first profile's prompts all before the second's, printed
    no comparison, and said nothing of two profiles sampling differently (their replies, so
    their lengths and speeds, differ for that too)."""
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Say hello.\n\nName a colour.\n", encoding="utf-8")
    other = tmp_path / "other.yaml"
    other.write_text(tiny_profile.read_text(encoding="utf-8").replace("name: tiny", "name: other")
                     + "sampling: {temperature: 0.2}\n", encoding="utf-8")
    rc = main(["bench", "-p", str(tiny_profile), "-p", str(other), "--replay", str(prompts), "--max-tokens", "3",
               "-r", "2", "--no-save"])
    out, err = capsys.readouterr()
    assert rc == 0
    # off a terminal (2>&1 | tee) its first step is said at once, the rest at most every 10 s
    assert err.splitlines()[0] == "round 1/2: tiny: replay prompt 1/2"
    # and, from the second turn on, how long the rest takes at the run's pace (5 minutes of three
    # documents with two profiles said only "replay prompt 2/3")
    from workstation.core.bench import paced_progress

    seen: list[str] = []
    say = paced_progress(seen.append, 3)
    assert say is not None
    for msg in ("tiny: replay prompt 1/3", "tiny: replay prompt 2/3", "tiny: replay prompt 3/3"):
        say(msg)
    assert seen[0] == "tiny: replay prompt 1/3"
    assert all(re.fullmatch(r"tiny: replay prompt [23]/3 \(about \d+ s left\)", m) for m in seen[1:]), seen
    from workstation.core.bench import in_rounds
    from workstation.tui.i18n import Texts

    seen.clear()  # in the command line's language (bench --lang tr), each round's too
    say = paced_progress(seen.append, 3, Texts("tr").get)
    assert say is not None
    for msg in ("a", "b"):
        say(msg)
    assert seen[0] == "a" and re.fullmatch(r"b \(kalan süre yaklaşık \d+ sn\)", seen[1]), seen
    # a profile not timed yet is paced by the others' turns as a range ("about 52 s left" of a first profile's turn,
    # where the second's took 70 s); its own turns, once timed, pace its next ones
    seen.clear()
    say = paced_progress(seen.append, [0, 1, 1])
    assert say is not None
    for msg in ("a", "b", "c"):
        say(msg)
    assert seen[1] == "b (under a minute left)" and re.fullmatch(r"c \(about \d+ s left\)", seen[2]), seen
    for _, each in in_rounds(1, 2, seen.append, Texts("tr").get):
        assert each is not None
        each("c")
    assert seen[-2:] == ["tur 1/2: c", "tur 2/2: c"]
    tables = out.split("other:")
    assert tables[0].count("Say hello.") == 2 and tables[1].count("Say hello.") == 2  # two rounds each
    assert out.count("2 prompts × 2 rounds: TTFT") == 2  # not "4 prompts"
    unsure = r"( \(not sure: within how much the rounds varied\))?"
    assert re.search(rf"^other against tiny: writes (about as fast|\d+\.\d\dx (as fast|slower)) \(tok/s \d+\.\d\dx\)"
                     rf"{unsure} and waits (as long|\d+% (less|longer)|\d+\.\d\dx as long) for its first word \(median TTFT\)"
                     rf"({unsure}| \(neither is sure: both within how much the rounds varied\))\.$", out,
                     re.MULTILINE), out
    assert "One round each" not in out  # (two rounds: their spread is said where it leaves a figure unsure)
    # compared, both write at temperature 0 with one seed (their temperatures 0.7 and 0.2 made replies unlike)
    assert "sample differently" not in out, out


def test_a_replay_comparison_within_its_rounds_noise_says_so() -> None:
    """"kv-q8_0 vs mine: 0.04x its tok/s" was said of one busy moment as of a measured cost: a
    ratio the same prompts in the same rounds do not bear out says "not sure"."""
    from workstation.commands.bench import REPLAY_WORDS, format_replay, wait_words
    from workstation.core.bench import ReplayItem, ReplayResult
    from workstation.core.metrics import TurnMetrics

    def replay(name: str, turns: list[tuple[float, float]]) -> ReplayResult:
        items = []
        for i, (ttft, ms) in enumerate(turns):
            m = TurnMetrics(ttft_ms=ttft, prompt_n=30, predicted_n=100, predicted_ms=ms)
            m.finish_rates()
            items.append(ReplayItem(i % 2 + 1, f"prompt {i % 2 + 1}", m))
        return ReplayResult(name, "m.gguf", items)

    mine = replay("mine", [(100, 1000), (200, 1000), (100, 1000), (200, 1000)])
    slower = replay("q8", [(150, 1500), (300, 1520), (155, 1480), (290, 1500)])  # every turn slower alike
    busy = replay("q4", [(100, 1900), (200, 700), (100, 1400), (200, 600)])  # its turns all over the place
    said = format_replay([mine, slower, busy]).splitlines()
    assert ("q8 against mine: writes 1.50x slower (tok/s 0.67x) and waits 48% longer for its first word "
            "(median TTFT).") in said
    assert ("q4 against mine: writes 1.13x slower (tok/s 0.88x) (not sure: within how much the rounds varied) "
            "and waits as long for its first word (median TTFT).") in said, said
    assert said.count(REPLAY_WORDS) == 1  # what TTFT and tok/s are, once
    # one document, once each: nothing to tell a busy moment from the profile by, and said so
    one = format_replay([replay("mine", [(100, 1000)]), replay("q8", [(150, 1500)]), replay("q4", [(87, 1000)])])
    assert ("q8 against mine: writes 1.50x slower (tok/s 0.67x) and waits 50% longer for its first word "
            "(median TTFT).") in one.splitlines()
    assert one.splitlines()[-1] == "One round each, which a busy moment can sway: run with -r 3 to be sure."
    assert one.count("One round each") == 1 and "not sure" not in one, one  # (once, not after each figure)
    # a shorter wait in words, as the speeds are ("waits 0.87x as long"), and one prompt is one ("1 prompts")
    assert "q4 against mine: writes about as fast (tok/s 1.00x) and waits 13% less for its first word" in one
    # a wait near nothing (a cached prompt's) keeps its ratio: it was "100% less", as if none
    near = format_replay([replay("mine", [(2000, 1000)]), replay("cached", [(5, 1000)])])
    assert "cached against mine: writes about as fast (tok/s 1.00x) and waits 1/400 as long for its first word" in near, near
    assert wait_words(0.1) == "90% less" and wait_words(0.0004) == "1/2,500 as long"
    # in the command line's language (bench --lang tr): its sentences, its figures with a decimal comma
    from workstation.core.bench import sampling_differences
    from workstation.core.profiles import Profile, Sampling
    from workstation.tui.i18n import Texts

    sampled = [Profile("a", sampling=Sampling(temperature=0.7, seed=42)), Profile("b", sampling=Sampling(temperature=0.2)),
               Profile("c", sampling=Sampling(temperature=0.2, seed=-1), system_prompt="Be brief.")]
    assert sampling_differences(sampled) == ["temperature 0.7, 0.2, 0.2", "seed 42, random, random", "system prompt"]
    tr = format_replay([mine, slower, busy], sampling_differences(sampled, Texts("tr").get), Texts("tr").get).splitlines()
    assert ("q8, mine ile karşılaştırıldığında: 1,50 kat daha yavaş yazar (tok/s 0,67 kat) ve ilk sözcüğü için %48 "
            "daha uzun süre bekler (ortanca TTFT).") in tr, tr
    assert "2 istem × 2 tur: TTFT ortalama 224 ms, ortanca 222 ms, p90 300 ms; 400 token boyunca yazma hızı saniyede yaklaşık 27 sözcük (66,7 ± 0,6 token/sn)" in tr, tr
    assert any(line.startswith("TTFT: bir istemi göndermekle ilk sözcüğü") for line in tr)
    # the sampling by Ctrl+E's names, as 'profiles check --lang tr' says them (it said "temperature 0.7, 0.2")
    assert any(line.startswith("Profiller farklı örnekleme yapıyor (Sıcaklık 0,7 / 0,2 / 0,2; Tohum 42 / rastgele / "
                               "rastgele; sistem istemi): ") for line in tr), tr
    assert wait_words(0.0004, Texts("tr").get) == "1/2.500 kadar süre"
    assert one.count("\n1 prompt: TTFT mean ") == 3 and "1 prompts" not in one, one


def test_the_fastest_is_named_only_when_told_apart_from_the_next_fastest(smollm2_path: Path) -> None:
    """With the first profile slow and two others alike, the one a hair faster was "Fastest at
    writing here", checked only against the slow first one."""
    from workstation.commands.bench import format_bench
    from workstation.core.bench import ProfileBench, SpeedStat

    info = {"model_type": "llama 135M Q4_1", "model_size": 2**27, "model_n_params": 134_515_008, "n_gpu_layers": 0,
            "model_filename": str(smollm2_path),
            "n_threads": 2, "type_k": "f16", "type_v": "f16", "flash_attn": True}
    slow = ProfileBench("office-cpu", info, tg=SpeedStat(16, [400_000_000, 402_000_000, 398_000_000]))
    b = ProfileBench("kv-q8", info, tg=SpeedStat(16, [200_000_000, 230_000_000, 190_000_000]))
    c = ProfileBench("lookup", info, tg=SpeedStat(16, [195_000_000, 225_000_000, 192_000_000]))
    lines = format_bench([slow, b, c]).splitlines()
    assert ("Fastest at writing here: not sure; lookup wrote faster than kv-q8 by less than their repetitions "
            "varied. Run again when the machine is quiet, or with more repetitions (-r).") in lines
    assert "In plain words, against office-cpu: lookup writes a reply 1.97x as fast." in lines  # (and surely so)
    only = format_bench([slow, c]).splitlines()
    assert "Fastest at writing here: lookup (what it costs in quality: workstation eval -p office-cpu -p lookup " \
           "--kld YOUR_DOCUMENT)." in only
    # "office-cpu gpu_layers=all" on a PC without a GPU, -r 1: the same run twice read "writes a reply 4.62x
    # slower", as if offloading cost that; one repetition is said, and that llama.cpp was given the same
    ran = {**info, "speculative": "off", "n_ctx": 4096, "n_batch": 512}
    once = ProfileBench("office-cpu", ran, tg=SpeedStat(8, [100_000_000]))
    offload = ProfileBench("office-cpu · gpu_layers all", ran, tg=SpeedStat(8, [462_000_000]))
    half = ProfileBench("office-cpu · K/V half size", {**ran, "type_k": "q8_0", "type_v": "q8_0"},
                        tg=SpeedStat(8, [120_000_000]))
    lines = format_bench([once, offload, half]).splitlines()
    assert ("In plain words, against office-cpu: office-cpu · gpu_layers all writes a reply 4.62x slower (one "
            "repetition each, which a busy moment can sway: -r 3 repeats it).") in lines, lines
    assert [line for line in lines if line.startswith("note:")] == [
        "note: each test ran once, and one run cannot tell whether another program was using the CPU meanwhile; -r 3 "
        "runs each test three times and says how much the runs differ.",
        "note: office-cpu · gpu_layers all ran exactly as office-cpu here (the same model file, 0 layers on the GPU, "
        "2 threads, K/V f16/f16): what it changes makes no difference on this PC (GPU layers where llama.cpp has no "
        "GPU to use, say), so any difference in their figures is the machine's, not the setting's."], lines
    # two draft models for one target: llama.cpp was given the same target and "speculative: draft",
    # but their drafts (the 'chat tg' row) differ; it said one "ran exactly as" the other
    drafted = {**ran, "speculative": "draft"}
    pair = [ProfileBench("office-cpu · draft SmolLM2-135M-Instruct.Q8_0", drafted, tg=SpeedStat(8, [100_000_000])),
            ProfileBench("office-cpu · draft SmolLM2-135M-Instruct.Q4_0", drafted, tg=SpeedStat(8, [90_000_000]))]
    assert not [line for line in format_bench(pair).splitlines() if "ran exactly as" in line]
    # one repetition faster is as doubtful as one slower ("4.62x as fast" ends as "as fast" does)
    assert ("In plain words, against office-cpu · gpu_layers all: office-cpu writes a reply 4.62x as fast (one "
            "repetition each, which a busy moment can sway: -r 3 repeats it).") in format_bench([offload, once]).splitlines()
