"""Task scoring rules, task-set validation, perplexity on the real SmolLM2, and `workstation eval`."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import make_profile
from llama_reference import scored_positions, window_log_probs

from workstation.cli import main
from workstation.core.engine import Engine
from workstation.core.evaluate import (
    EXAMPLE_TASKS,
    EvalInputError,
    Task,
    TaskSetError,
    load_task_set,
    perplexity,
    run_tasks,
    score,
    task_set_from_data,
    text_perplexity,
)
from workstation.core.results import history


@pytest.fixture(scope="module")
def engine(smollm2_path: Path):  # noqa: ANN201
    """SmolLM2 with one thread: two spinning threads crawl when other work shares the 2 cores."""
    eng = Engine(make_profile(threads=1, context=512))
    yield eng
    eng.close()

EASY = (
    "The office opens at nine in the morning and closes at five in the afternoon. "
    "Please save your documents on the shared drive and make a backup every Friday. "
)


def _task(match: str, answer: list[str], **kw: object) -> Task:
    return Task(id="t", prompt="q", match=match, answer=answer, **kw)  # type: ignore[arg-type]


# --- scoring rules -------------------------------------------------------------------------------
def test_exact_rule() -> None:
    t = _task("exact", ["Paris"])
    assert score(t, "Paris")
    assert score(t, "  paris. ")  # case, whitespace and final punctuation are ignored
    assert score(t, "**Paris**")
    assert not score(t, "Paris, France")
    assert not score(t, "Lyon")
    assert not score(_task("exact", ["Paris"], case_sensitive=True), "paris")
    assert score(_task("exact", ["oui", "yes"]), "Yes!")  # any alternative counts


def test_contains_rule() -> None:
    t = _task("contains", ["Paris"])
    assert score(t, "The capital of France is Paris.")
    assert not score(t, "The capital of France is Lyon.")
    # Turkish dotted capital I folds to i
    assert score(_task("contains", ["istanbul"]), "En kalabalık şehir İstanbul'dur.")
    assert score(_task("contains", ["Salı"]), "salı")
    assert score(_task("contains", ["Diyarbakır"]), "DIYARBAKIR")  # I is ı in Turkish, i in English
    assert not score(_task("contains", ["Salı"]), "Çarşamba")


def test_regex_rule() -> None:
    t = _task("regex", [r"\b19\b"])
    assert score(t, "12 + 7 = 19")
    assert not score(t, "The answer is 119")
    assert score(_task("regex", [r"^yes$"]), "Well\nYES\n")  # multiline, ignoring case
    assert not score(_task("regex", [r"^yes$"], case_sensitive=True), "YES")


def test_choice_rule() -> None:
    t = _task("choice", ["B"], choices=["A", "B", "C"])
    assert score(t, "B")
    assert score(t, "The answer is B) apple.")
    assert score(t, "It is a fruit, so B.")  # the article "a" is not choice A
    assert not score(t, "A")
    assert not score(t, "C) chair, not B")  # the first choice named counts
    assert not score(t, "I do not know.")
    words = _task("choice", ["negative"], choices=["positive", "negative"])
    assert score(words, "Negative.")
    assert not score(words, "Positive, not negative")
    assert not score(words, "nonnegative")  # whole words only


# --- task sets --------------------------------------------------------------------------------------
def test_example_task_set_has_english_and_turkish() -> None:
    ts = load_task_set(EXAMPLE_TASKS)
    langs = {t.lang for t in ts.tasks}
    assert {"en", "tr"} <= langs
    assert {t.match for t in ts.tasks} == {"exact", "contains", "regex", "choice"}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tasks.yaml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = "  - {prompt: 'What is 2+2?', match: regex, answer: '4'}\n"


def test_wrong_match_value_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "tasks:\n" + GOOD + "  - {id: q2, prompt: 'Capital?', match: fuzzy, answer: Paris}\n")
    with pytest.raises(TaskSetError) as err:
        load_task_set(path)
    msg = str(err.value)
    assert str(path) in msg and "task 2" in msg and "'q2'" in msg
    assert "field 'match'" in msg and "exact, contains, regex, choice" in msg


def test_unknown_and_missing_fields_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "tasks:\n  - {prompt: 'Capital?', match: exact, expected: Paris}\n")
    with pytest.raises(TaskSetError, match=r"task 1: unknown field 'expected'; allowed fields are id, lang, prompt"):
        load_task_set(path)
    with pytest.raises(TaskSetError, match=r"task 1: field 'answer' is missing"):
        task_set_from_data([{"prompt": "x", "match": "exact"}], "t.yaml")
    with pytest.raises(TaskSetError, match=r"field 'answer' is 'D'; allowed values are A, B"):
        task_set_from_data([{"prompt": "x", "match": "choice", "choices": ["A", "B"], "answer": "D"}], "t.yaml")
    with pytest.raises(TaskSetError, match=r"not a valid regular expression"):
        task_set_from_data([{"prompt": "x", "match": "regex", "answer": "("}], "t.yaml")


def test_cli_reports_a_bad_task_set_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "tasks:\n  - {prompt: 'Capital?', match: fuzzy, answer: Paris}\n")
    assert main(["eval", "--tasks", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "field 'match'" in err and "Traceback" not in err


# --- running on the real model ------------------------------------------------------------------------
def test_run_tasks_scores_replies(engine: Engine) -> None:
    ts = task_set_from_data(
        [
            {"id": "fr", "prompt": "What is the capital of France? Answer with one word.", "match": "contains", "answer": "Paris", "max_tokens": 12},
            {"id": "never", "prompt": "Say hello.", "match": "exact", "answer": "zzzz-never", "max_tokens": 4},
        ],
        "inline",
    )
    result = run_tasks(engine, ts)
    by_id = {r.id: r for r in result.results}
    assert by_id["fr"].correct, by_id["fr"].reply
    assert not by_id["never"].correct
    assert result.accuracy == 0.5
    assert result.gen_ts and result.gen_ts > 0


def test_easy_text_has_lower_perplexity_than_shuffled(engine: Engine) -> None:
    words = (EASY * 6).split()
    shuffled = list(words)
    random.Random(7).shuffle(shuffled)
    easy = text_perplexity(engine.model, " ".join(words), n_ctx=128, max_chunks=1)
    hard = text_perplexity(engine.model, " ".join(shuffled), n_ctx=128, max_chunks=1)
    assert easy.n_chunks == hard.n_chunks == 1
    assert easy.n_scored == 128 - 64 - 1  # the second half of the window, as llama-perplexity scores
    assert 1.0 < easy.ppl < hard.ppl
    assert easy.ppl * 3 < hard.ppl


def _reference_perplexity(
    model_path: Path, text: str, n_ctx: int, n_chunks: int, flash_attn: bool
) -> tuple[float, list[int], int]:
    """llama-perplexity's recipe written out independently (tests/llama_reference.py): the
    mean NLL of the scored positions over float64 log-softmaxes. Returns (ppl, tokens, scored)."""
    tokens, windows = window_log_probs(model_path, text, n_ctx, n_chunks, flash_attn)
    nll = [
        -log_probs[pos, tokens[i * n_ctx + pos + 1]]
        for i, log_probs in enumerate(windows)
        for pos in scored_positions(n_ctx)
    ]
    return float(np.exp(np.mean(nll))), tokens, len(nll)


def test_perplexity_equals_an_independent_log_softmax(engine: Engine, smollm2_path: Path) -> None:
    """The figure `workstation eval --perplexity` prints is the one llama-perplexity's method gives."""
    text = (EASY * 8) + " ".join(reversed((EASY * 4).split()))
    flash = engine.info().flash_attn  # the same attention kernel on both sides
    ref_ppl, ref_tokens, ref_scored = _reference_perplexity(smollm2_path, text, 128, 2, flash)
    ours = text_perplexity(engine.model, text, n_ctx=128, max_chunks=2)
    assert engine.model.tokenize(text, add_special=True, parse_special=False) == ref_tokens
    assert (ours.n_chunks, ours.n_scored) == (2, ref_scored) == (2, 2 * 63)
    assert ours.ppl == pytest.approx(ref_ppl, rel=1e-3)  # float32 logits, float64 sums on both sides
    assert ours.ppl > 1.5  # a real figure, not a degenerate one


def test_perplexity_needs_one_window(engine: Engine) -> None:
    with pytest.raises(EvalInputError, match="needs at least 128"):
        perplexity(engine.model, [1, 2, 3], 128)


def test_a_perplexity_text_that_is_no_text_is_said(tmp_path: Path) -> None:
    """A binary file for --perplexity showed Python's "'utf-8' codec can't decode byte 0xa2 in
    position 3: invalid start byte"."""
    from workstation.core.evaluate import read_text

    binary = tmp_path / "photo.bin"
    binary.write_bytes(b"\x89PNG\xa2\x00\xff" * 10)
    with pytest.raises(EvalInputError) as caught:
        read_text(binary)
    assert str(caught.value) == f"Text file {binary} cannot be read: 'photo.bin' is a binary file, not text."
    # a text in another encoding is read as summarize reads it (it was refused as "not UTF-8")
    latin = tmp_path / "minutes.txt"
    latin.write_bytes("Café meeting: the société's budget is agreed.\n".encode("latin-1"))
    assert read_text(latin) == "Café meeting: the société's budget is agreed."


def test_eval_cli_tasks_and_perplexity_json(
    tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "tiny.yaml"
    profile.write_text(
        f"name: tiny\nmodel: {smollm2_path}\ncontext: 256\nthreads: 1\ngpu_layers: 0\nsystem_prompt: ''\n",
        encoding="utf-8",
    )
    tasks = _write(tmp_path, "tasks:\n  - {id: fr, lang: en, prompt: 'What is the capital of France?', "
                             "match: contains, answer: Paris, max_tokens: 8}\n")
    text = tmp_path / "text.txt"
    text.write_text(EASY * 4, encoding="utf-8")
    rc = main(["eval", "-p", str(profile), "--tasks", str(tasks), "--perplexity", str(text),
               "--ctx", "64", "--chunks", "1", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    data = json.loads(out)
    assert len(data) == 1
    entry = data[0]
    assert entry["profile"] == "tiny"
    assert entry["tasks"]["n_tasks"] == 1 and entry["tasks"]["by_lang"]["en"]["n"] == 1
    assert entry["perplexity"]["n_ctx"] == 64 and entry["perplexity"]["ppl"] > 1
    assert entry["vs_first"]["speed_ratio"] == 1.0
    saved = {h.test: h for h in history(kind="eval")}
    assert {"accuracy", "perplexity"} <= set(saved)
    assert saved["perplexity"].value == pytest.approx(entry["perplexity"]["ppl"])


def test_eval_speaks_turkish_under_its_notes_too(
    tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`eval --lang tr` was refused ("'eval' is a command of its own") and its notes were English
    text inside eval.py ("perplexity over 1 window(s)", "In plain words", "1.30x faster")."""
    profile = tmp_path / "tiny.yaml"
    profile.write_text(
        f"name: tiny\nmodel: {smollm2_path}\ncontext: 256\nthreads: 1\ngpu_layers: 0\nsystem_prompt: ''\n",
        encoding="utf-8",
    )
    text = tmp_path / "text.txt"
    text.write_text(EASY * 4, encoding="utf-8")
    rc = main(["--lang", "tr", "eval", "-p", str(profile), "-p", f"{profile} kv_cache=q8_0", "--perplexity", str(text),
               "--ctx", "64", "--chunks", "1", "--no-save"])
    out = capsys.readouterr().out
    assert rc == 0
    notes = [line for line in out.splitlines() if not line.startswith("|")]
    assert "(karşılaştırma temeli)" in out and "kat daha" in out and "(baseline)" not in out
    assert notes[1:] == ["tiny: 64 tokenlik 1 pencere üzerinden perplexity (puanlanan 31 token)."], notes
    assert notes[0].startswith("K/V: modelin") and "perplexity: modelin metne ne kadar şaşırdığı" in notes[0]
    # --kld's notes under --lang tr: test_eval_s_table_and_its_profiles_names_speak_turkish_too (the same run)


def test_eval_s_table_and_its_profiles_names_speak_turkish_too(
    tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under --lang tr the table's column headers ("profile", "document", "same top", "vs tiny"),
    the reference's cells ("(reference)", "(window 1, timed again)"), -v's yes/no column and a
    variant's name ("tiny · K/V half size") were English."""
    profile = tmp_path / "tiny.yaml"
    profile.write_text(
        f"name: tiny\nmodel: {smollm2_path}\ncontext: 256\nthreads: 1\ngpu_layers: 0\nsystem_prompt: ''\n",
        encoding="utf-8",
    )
    text = tmp_path / "text.txt"
    text.write_text(EASY * 4, encoding="utf-8")
    kld = ["eval", "--lang", "tr", "-p", str(profile), "-p", f"{profile} kv_cache=q8_0", "--kld", str(text),
           "--ctx", "64", "--chunks", "1", "--no-save"]
    assert main(kld) == 0
    # its notes (under eval's notes of --perplexity: test_eval_speaks_turkish_under_its_notes_too)
    notes = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("|")]
    english = ("window", "faster", "slower", "the same speed", "tokens", "In plain words", "KL divergence")
    assert notes[0].startswith("K/V: modelin") and "KLD ort.: her sonraki sözcük için" in notes[0]  # its columns
    assert notes[1].startswith("64 tokenlik pencerelerde tiny ile KL ıraksaması") and \
        notes[2].startswith("Kısacası, text.txt üzerinde: tiny · ") and "sonraki sözcüğü seçer ve " in notes[2]
    assert not [w for w in english for line in notes[1:3] if w in line]
    # and every note after them: the choice ("Side by side", "Which to pick", "These speeds are of windows")
    # and the yardstick's note were English f-strings under --lang tr
    assert [line for line in notes if line.startswith(("Yan yana, ", "Hangisini seçmeli: ", "Bu hızlar "))], notes
    english += ("Side by side", "Which to pick", "These speeds", "Note:", "needs", "memory", "reads", "writes",
                "rough", "not sure", "as fast", "yardstick")
    assert not [(w, line) for w in english for line in notes if w in line]
    assert main(kld) == 0  # (the second reads the reference from the cache: its speed timed again)
    out = capsys.readouterr().out.split("| profil ")[-1]
    header, _, first, second = out.splitlines()[:4]
    assert "| belge " in header and "| aynı ilk token |" in header and "| tiny karşısında " in header, header
    assert "(referans)" in first and "(1. pencere, yeniden ölçüldü)" in first, first
    assert second.startswith("| tiny · K/V yarı boy "), second
    figures = [c.strip() for c in second.split("|")][5:-2]  # (KLD, p99, same top, ppl, Δppl, tok/s: "0,0123 ± 0,0045")
    assert len(figures) == 6 and all(re.search(r"\d,\d", c) for c in figures), figures
    assert not [c for c in figures if re.search(r"\d\.\d", c)], figures
    english = ("profile", "document", "same top", "vs tiny", "(reference)", "window 1", "timed again", "half size")
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert not [w for w in english for line in [header, *table] if w in line], out
    assert "half size" not in out, out
    tasks = _write(tmp_path, "tasks:\n  - {prompt: 'What is 2+2?', match: regex, answer: '4', max_tokens: 4}\n")
    assert main(["eval", "--lang", "tr", "-p", str(profile), "--tasks", str(tasks), "-v", "--no-save"]) == 0
    out = capsys.readouterr().out
    task_table = out.split("\ntiny:\n")[1].splitlines()
    assert [c.strip() for c in task_table[0].split("|")[1:4]] == ["görev", "dil", "doğru"], task_table
    assert task_table[2].split("|")[3].strip() in ("evet", "hayır"), task_table
    assert " doğruluk |" in out and "accuracy" not in out, out
    # the table's figures in Turkish writing too: "%0,0 (0/1)" or "%100,0 (1/1)", not "100.0% (1/1)"
    cells = [c.strip() for c in out.splitlines()[2].split("|")]
    assert re.fullmatch(r"%(0|100),0 \(\d/1\)", cells[4]) and re.fullmatch(r"\d+,\d", cells[5]), cells


def test_a_task_sets_problems_are_said_in_turkish_too(tmp_path: Path, smollm2_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A task set's problems were English f-strings under --lang tr ("task 2 ('q2'): field 'match' is
    'fuzzy'; allowed values are ...") while eval's other refusals were Turkish."""
    profile = tmp_path / "tiny.yaml"
    profile.write_text(f"name: tiny\nmodel: {smollm2_path}\ncontext: 256\nthreads: 1\ngpu_layers: 0\n",
                       encoding="utf-8")
    cases = {
        "  - {id: q2, prompt: 'Capital?', match: fuzzy, answer: Paris}\n":
            "tasks.yaml: 2. görev ('q2'): 'match' alanı 'fuzzy'; izin verilen değerler: exact, contains, regex, choice.",
        "  - {prompt: 'Capital?', match: exact, answer: Paris, max_tokens: 5000}\n":
            "tasks.yaml: 2. görev: 'max_tokens' alanı 5000; izin verilen değerler 1 ile 4096 arası.",
        "  - {prompt: 'Capital?', match: exact, expected: Paris}\n":
            "tasks.yaml: 2. görev: 'expected' diye bir alan yok; kullanılabilen alanlar: id, lang, prompt",
        "  - {id: 1, prompt: 'Capital?', match: exact, answer: Paris}\n  - {id: 1, prompt: x, match: exact, answer: y}\n":
            "tasks.yaml: 3. görev: 'id' alanı '1' değerini yineliyor",
    }
    for task, said in cases.items():
        tasks = _write(tmp_path, "tasks:\n" + GOOD + task)
        assert main(["eval", "--lang", "tr", "-p", str(profile), "--tasks", str(tasks), "--no-save"]) == 1
        err = capsys.readouterr().err
        assert said in err and "field" not in err and "task " not in err, err
    # English as before without --lang
    tasks = _write(tmp_path, "tasks:\n" + GOOD + "  - {id: q2, prompt: 'Capital?', match: fuzzy, answer: Paris}\n")
    assert main(["eval", "-p", str(profile), "--tasks", str(tasks), "--no-save"]) == 1
    assert "task 2 ('q2'): field 'match' is 'fuzzy'; allowed values are exact" in capsys.readouterr().err


def test_eval_refuses_in_turkish_too(tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """eval's refusals were English f-strings under --lang tr ("--ctx must be 16 or more, not 8.",
    "The text is only 2 tokens; KL divergence with a window of 64 needs at least 64")."""
    profile = tmp_path / "tiny.yaml"
    profile.write_text(
        f"name: tiny\nmodel: {smollm2_path}\ncontext: 256\nthreads: 1\ngpu_layers: 0\nsystem_prompt: ''\n",
        encoding="utf-8",
    )
    short = tmp_path / "short.txt"
    short.write_text("hi", encoding="utf-8")
    assert main(["eval", "--lang", "tr", "-p", str(profile), "--kld", str(short), "--ctx", "8", "--no-save"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "workstation: --ctx en az 16 olmalı, 8 değil.", err
    rc = main(["--lang", "tr", "eval", "-p", str(profile), "-p", f"{profile} kv_cache=q8_0", "--kld", str(short),
               "--ctx", "64", "--no-save"])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("workstation: short.txt: Metin yalnızca ") and "KL ıraksaması en az 64 token" in err
    assert "The text" not in err and "tokens;" not in err, err
    rc = main(["eval", "-p", str(profile), "-p", f"{profile} kv_cache=q8_0", "--kld", str(short), "--ctx", "64",
               "--no-save"])  # (English as before without --lang)
    assert rc == 1 and "short.txt: The text is only " in capsys.readouterr().err


def test_the_table_has_a_column_per_language_only_where_there_are_several() -> None:
    """Tasks without a language got a column "no lang 1/2" beside the accuracy it repeated."""
    from workstation.commands.eval import ProfileEval, format_eval
    from workstation.core.evaluate import TaskResult, TasksScore

    def scored(*langs: str) -> ProfileEval:
        results = [TaskResult(id=f"t{i}", lang=lang, correct=i == 0, reply="", expected=[], match="exact",
                              ttft_ms=100.0, predicted_n=4, predicted_ms=50.0, prompt_n=8, prompt_ms=10.0)
                   for i, lang in enumerate(langs)]
        return ProfileEval("tiny", "m.gguf", "f16", "f16", tasks=TasksScore("t", results))

    same = {"accuracy_delta_pts": None, "perplexity_delta_pct": None, "speed_ratio": 1.0}
    header = format_eval([scored("", "")], [same]).splitlines()[0]
    assert "lang" not in header and "other" not in header and " accuracy |" in header
    assert " en |" not in format_eval([scored("en", "en")], [same]).splitlines()[0]
    table = format_eval([scored("tr", "")], [same]).splitlines()
    assert " tr | other |" in table[0] and "| 1/1 |   0/1 |" in table[2], table


def test_an_accuracy_difference_few_tasks_bear_out_is_called_not_sure() -> None:
    """eval said "+33.3 pts accuracy" of one task in three that one profile got right and the
    other wrong; a difference is sure only where enough tasks went one way (an exact sign test)."""
    from workstation.commands.eval import ProfileEval, compare, describe
    from workstation.core.evaluate import TaskResult, TasksScore

    def scored(right: list[bool]) -> ProfileEval:
        results = [TaskResult(id=f"t{i}", lang="", correct=ok, reply="", expected=[], match="exact", ttft_ms=1.0,
                              predicted_n=4, predicted_ms=50.0, prompt_n=8, prompt_ms=10.0) for i, ok in enumerate(right)]
        return ProfileEval("p", "m.gguf", "f16", "f16", tasks=TasksScore("t", results))

    one_of_three = compare(scored([True, False, False]), scored([True, True, False]))
    assert one_of_three["accuracy_sure"] is False
    said = lambda d: describe(d).split(", ")[0]  # noqa: E731  # (then the speed)
    assert said(one_of_three) == ("+33.3 pts accuracy (not sure: the tasks that came out differently do not lean "
                                  "clearly one way)")
    six_of_eight = compare(scored([False] * 6 + [True] * 2), scored([True] * 8))  # 6 gained, none lost: p = 0.031
    assert six_of_eight["accuracy_sure"] is True and said(six_of_eight) == "+75.0 pts accuracy"
    both_ways = compare(scored([True] * 6 + [False] * 6), scored([False] * 6 + [True] * 6))  # 6 gained, 6 lost
    assert said(both_ways) == "±0.0 pts accuracy"
    five_gained = compare(scored([False] * 5 + [True] * 5), scored([True] * 10))  # p = 0.0625: not sure
    assert five_gained["accuracy_sure"] is False


def test_ctrl_c_stops_a_long_window_part_way(smollm2_path: Path) -> None:
    """Ctrl-C in `eval --perplexity/--kld` waited for the decode of a whole window (seconds
    here, minutes for a 7B model on a CPU): it now stops the batch llama.cpp is computing."""
    import contextlib
    import os
    import signal
    import threading

    from workstation.core.evaluate import scored_logits
    from workstation.core.runtime import DecodeAborted, LoadedModel, RuntimeSettings

    # one thread: two spin waiting for each other on a machine whose 2 cores others share
    model = LoadedModel(smollm2_path, RuntimeSettings(n_ctx=2048, n_batch=2048, n_threads=1))
    try:
        tokens = [100 + i % 5000 for i in range(2049)]
        pressed: list[threading.Timer] = []

        def progress(_line: str) -> None:  # just before the window's one batch (2048 tokens: seconds
            # here, a third of a second on a fast desktop): a person's Ctrl-C during it
            pressed.append(threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)))
            pressed[-1].start()

        try:
            with pytest.raises(KeyboardInterrupt) as stopped, contextlib.closing(
                    scored_logits(model, tokens, 2048, 1, progress)) as rows:
                for _ in rows:
                    pass
        finally:
            for timer in pressed:  # never a Ctrl-C landing later, in another test
                timer.cancel()
                timer.join()
        assert pressed and isinstance(stopped.value.__context__, DecodeAborted)  # not after the batch
        # and the model decodes again, with no callback left behind
        with contextlib.closing(scored_logits(model, tokens[:65], 64, 1)) as rows:
            assert sum(len(r.positions) for r in rows) == 31
    finally:
        model.close()


def test_results_the_history_cannot_take_are_printed_first(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A history that could not take the results (a full disk) ended a run with "unexpected
    error: OperationalError: database or disk is full", and no table: minutes of measuring lost."""
    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    (tmp_path / "data" / "results.sqlite3").mkdir(parents=True)  # a file SQLite cannot open
    profile = tmp_path / "tiny.yaml"
    profile.write_text(f"name: tiny\nmodel: {smollm2_path}\ncontext: 256\nthreads: 1\n", encoding="utf-8")
    text = tmp_path / "text.txt"
    text.write_text(EASY * 4, encoding="utf-8")
    assert main(["eval", "-p", str(profile), "--perplexity", str(text), "--ctx", "64", "--chunks", "1"]) == 1
    out, err = capsys.readouterr()
    assert "tiny" in out and "ppl" in out.lower(), out  # the table
    last = err.splitlines()[-1]  # (off a terminal, progress lines before it)
    assert last.startswith("workstation: The results were not kept") and "results.sqlite3" in last and \
        last.endswith("They are printed above."), err


def test_a_speed_within_rounding_of_the_first_is_said_the_same() -> None:
    """0.998 of the first profile's speed said "1.00x slower"."""
    from workstation.commands.eval import describe

    def said(ratio: float) -> str:
        return describe({"accuracy_delta_pts": None, "perplexity_delta_pct": None, "speed_ratio": ratio})

    assert [said(r) for r in (0.998, 1.004, 1.2, 0.5)] == ["the same speed", "the same speed", "1.20x faster",
                                                           "2.00x slower"]


def test_a_text_shorter_than_the_context_is_measured_in_512_token_windows(
        smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A three-page memo (1,803 tokens) on a 4,096-token profile was refused: "a window of 4096
    needs at least 4096"; --kld's window of 512 took it. A text that long gets llama-perplexity's
    512, and one as long as the context keeps the context's window."""
    with Engine(make_profile(threads=1, context=1024)) as eng:
        text = " ".join([EASY] * 25)
        n = len(eng.model.tokenize(text, add_special=True, parse_special=False))
        assert 512 <= n < 1024, n
        short = text_perplexity(eng.model, text, max_chunks=1)
        assert short.n_ctx == 512 and short.n_chunks == 1
        # one window for all: the window asked of the longer text (a second window of 512 measured
        # cost 3 s of CPU, the same measuring as the one above)
        from workstation.core import evaluate

        asked: list[int] = []
        monkeypatch.setattr(evaluate, "perplexity", lambda _model, _tokens, n_ctx, *_a: asked.append(n_ctx))
        text_perplexity(eng.model, " ".join([EASY] * 80), max_chunks=1)
        assert asked == [512]


def test_each_profile_is_warmed_before_its_timed_tasks(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """eval --tasks' speed ratios from one run swung 1.46x faster to 2.84x slower, the profile
    listed first often the slowest: the first model loaded paid its page-in in its first timed
    task. An untimed one-token turn comes first, as bench's warm-up."""
    asked: list[int] = []
    real = engine.run_chat

    def counted(messages: list[dict], sampling: object, **kw: object) -> object:
        asked.append(sampling.max_tokens)  # type: ignore[attr-defined]
        return real(messages, sampling, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "run_chat", counted)
    ts = task_set_from_data([{"id": "a", "prompt": "Say hello.", "match": "contains", "answer": "hello",
                              "max_tokens": 4}], "inline")
    result = run_tasks(engine, ts)
    assert asked == [1, 4] and len(result.results) == 1


def test_a_tasks_speed_ratio_that_flips_from_task_to_task_is_about_the_same() -> None:
    """Each task is one turn: where the tasks' own ratios go both ways, bench's paired test says
    the run cannot tell, and the table says so instead of "2.84x slower"."""
    from workstation.commands.eval import ProfileEval, compare, describe
    from workstation.core.evaluate import TaskResult, TasksScore

    def scored(ms: list[float]) -> TasksScore:
        return TasksScore("t", [TaskResult(str(i), "en", True, "25", ["25"], "contains", 900.0, 32, m, 40, 200.0)
                                for i, m in enumerate(ms)])

    first = ProfileEval("office-cpu", "a.gguf", "f16", "f16", tasks=scored([1000.0, 300.0]))
    other = ProfileEval("office-cpu · K/V half size", "a.gguf", "q8_0", "q8_0", tasks=scored([350.0, 900.0]))
    assert describe(compare(first, other)) == "±0.0 pts accuracy, about the same speed on this run"
    steady = ProfileEval("office-cpu · K/V half size", "a.gguf", "q8_0", "q8_0", tasks=scored([1300.0, 390.0]))
    assert describe(compare(first, steady)) == "±0.0 pts accuracy, 1.30x slower"


def test_evals_table_says_what_its_columns_mean_in_both_languages() -> None:
    """bench printed a line under its table saying what its columns mean; eval's (gen tok/s,
    pts, KLD mean, KLD p99, same top, KLD ppl, Δppl, KLD tok/s) were explained nowhere."""
    from workstation.commands.eval import ProfileEval, compare, format_eval
    from workstation.core.evaluate import TaskResult, TasksScore
    from workstation.tui.i18n import Texts

    tasks = TasksScore("t", [TaskResult("1", "en", True, "25", ["25"], "contains", 900.0, 32, 500.0, 40, 200.0)])
    results = [ProfileEval("a", "a.gguf", "f16", "f16", tasks=tasks), ProfileEval("b", "a.gguf", "q8_0", "q8_0",
                                                                                   tasks=tasks)]
    said = format_eval(results, [compare(results[0], r) for r in results])
    assert "gen tok/s: tokens of the replies written a second" in said, said
    assert "pts: percentage points of that, against the first profile" in said
    assert "TTFT ms: the wait from sending a prompt to its first word" in said
    tr = format_eval(results, [compare(results[0], r) for r in results], lookup=Texts("tr").get)
    assert "yazma tok/s: saniyede yazılan yanıt tokenı" in tr, tr


def test_a_missing_field_lists_the_match_values_and_points_to_the_example(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A first-time guess at the format got "task 1: field 'match' is missing." and nothing on
    what match takes or where the format is: the sentence lists the values and names the example
    (whose path eval --help names too)."""
    from workstation.core.evaluate import EXAMPLE_TASKS

    path = _write(tmp_path, "tasks:\n  - {prompt: 'How many days?', answer: '25'}\n")
    assert main(["eval", "--tasks", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "field 'match' is missing: each task needs a prompt, a match (one of exact, contains, regex, choice) and " \
           f"an answer; the example task set {EXAMPLE_TASKS} shows the format." in err, err
    assert EXAMPLE_TASKS.is_file()
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "workstation/data/tasks-example.yaml shows the format" in " ".join(capsys.readouterr().out.split())
