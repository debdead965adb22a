"""Summarization on the real SmolLM2 model: chunk sizes, coverage, prefix reuse, map-reduce.

SmolLM2-135M is tiny, so the "mentions the subject" checks use documents whose subject word
is in every paragraph (honeybees) or all over the text (the CPython licence: "Python",
"license"), and look for it in what the *model* wrote (the chunk summaries and the overall
summary), never in headings we add ourselves.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_profile, write_profile_file
from docmaker import SUBJECT_PARAGRAPHS, honeybee_text, make_pdf

from workstation.core.documents import Document, read_document
from workstation.core.phrases import rounded_words, words_in
from workstation.core.summarize import (
    TIME_LEFT_RISE,
    TIME_LEFT_RISE_FLOOR,
    Runner,
    SummaryProgress,
    duration,
    render_markdown,
    summarize_document,
)
from workstation.core.summary_chunks import (
    MAP_INSTRUCTION,
    MAP_SUFFIX,
    Chunk,
    make_chunks,
    prompt_messages,
)
from workstation.core.summary_options import SummarizeOptions
from workstation.tui.i18n import Texts

CTX = 512
MAX_TOKENS = 32


@pytest.fixture(scope="module")
def profile(smollm2_path: Path):
    return make_profile(context=CTX, threads=1, sampling={"max_tokens": MAX_TOKENS})


@pytest.fixture(scope="module")
def eng(profile) -> Iterator:
    from workstation.core.engine import Engine

    e = Engine(profile)
    yield e
    e.close()



def words_of(document: Document, chunks: list[Chunk]) -> str:
    """The words of ``chunks`` counted in the document, as a summary's closing line says them."""
    return rounded_words(sum(words_in(document.text[c.start:c.end]) for c in chunks))

def real_long_text() -> Path:
    """CPython's licence, shipped with every Python install (found at runtime)."""
    path = Path(os.__file__).parent / "LICENSE.txt"
    if not path.exists():
        pytest.skip("this Python install ships no LICENSE.txt")
    return path


def _check_chunks(eng, doc: Document, answer: int) -> list:
    chunks, prefix, budget = make_chunks(Runner(eng, None), doc, CTX, answer, SummarizeOptions())
    # every character is in exactly one chunk, in order: nothing lost between chunks
    assert chunks[0].start == 0 and chunks[-1].end == len(doc.text)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.end == b.start
    assert "".join(doc.text[c.start : c.end] for c in chunks) == doc.text
    for c in chunks:
        # prompt + answer fit the context, measured with the model's own template/tokenizer
        real = len(eng.chat_prompt(prompt_messages(MAP_INSTRUCTION, doc.text[c.start : c.end], MAP_SUFFIX)))
        assert real == c.prompt_tokens
        assert c.prompt_tokens + answer <= CTX
        assert c.tokens <= budget
    # chunks are filled, not tiny: all but the last hold at least half the budget
    assert all(c.tokens >= budget // 2 for c in chunks[:-1])
    doc_tokens = len(eng.model.tokenize(doc.text, add_special=False, parse_special=False))
    assert len(chunks) >= -(-doc_tokens // budget)
    assert prefix > 20  # the instruction prefix every chunk shares
    # a chunk filled to its budget still leaves the answer and the margin free
    overhead = len(eng.chat_prompt(prompt_messages(MAP_INSTRUCTION, "", MAP_SUFFIX)))
    assert overhead + budget + answer + SummarizeOptions().margin <= CTX
    return chunks


def test_chunks_fit_the_context_and_cover_a_long_real_text(eng) -> None:
    doc = read_document(real_long_text())
    assert len(doc.text) > 10_000
    chunks = _check_chunks(eng, doc, MAX_TOKENS)
    assert len(chunks) >= 6
    assert chunks[0].cite.startswith("lines 1–")


def test_a_small_last_part_joins_the_one_before_or_the_parts_are_cut_evenly(eng, tmp_path: Path) -> None:
    """A ~2,000-word contract was read in 3 parts, the last one line ("part 3 (line 69)"): a model
    call of its own and a point made up for it. A last part under a quarter of a part joins the
    one before where their prompt fits with the margin; else the parts are cut to even sizes."""
    licence = read_document(real_long_text())
    first = make_chunks(Runner(eng, None), licence, CTX, MAX_TOKENS, SummarizeOptions())[0]
    two_full_parts = licence.text[:first[1].end]  # (the chunker fills them as full as it can)
    words = licence.text[first[2].start:first[2].end].split()
    # (a line that fits the second part's room is taken in by it as the parts are cut)
    for tail, parts_wanted in (("This Agreement is signed in two copies.", 2), (" ".join(words[:24]), 3),
                               (" ".join(words[:40]), 3)):
        path = tmp_path / "contract.txt"
        path.write_text(f"{two_full_parts}\n{tail}\n", encoding="utf-8")
        doc = read_document(path)
        chunks = _check_chunks(eng, doc, MAX_TOKENS)
        _, _, budget = make_chunks(Runner(eng, None), doc, CTX, MAX_TOKENS, SummarizeOptions())
        assert len(chunks) == parts_wanted, [(c.tokens, c.cite) for c in chunks]
        assert min(c.tokens for c in chunks) >= budget / 4, [(c.tokens, c.cite) for c in chunks]
        assert [c.index for c in chunks] == list(range(1, parts_wanted + 1))
        assert chunks[-1].cite != f"line {doc.text.count(chr(10))}"  # not the closing line alone


def test_a_closing_signature_line_cut_alone_joins_the_part_before(eng, monkeypatch: pytest.MonkeyPatch) -> None:
    """A contract ending in a signature line ("Signed: ____"): its underscores are many
    characters and few tokens, so the chunker (which guesses a piece's tokens by its characters)
    left it a part of its own although it fits in the part before. It joins that part: one part
    less, the last part the two together, no text lost."""
    from workstation.core import summary_chunks

    paragraphs = [*(SUBJECT_PARAGRAPHS[i % 6] for i in range(24)), "Signed: " + "_" * 100]
    doc = Document(source="contract.txt", kind="text", text="\n\n".join(paragraphs) + "\n")
    with monkeypatch.context() as m:  # the parts as first cut, before a small last part is looked at
        m.setattr(summary_chunks, "TAIL_SHARE", 0.0)
        first, _, budget = make_chunks(Runner(eng, None), doc, CTX, MAX_TOKENS, SummarizeOptions())
    before, tail = first[-2], first[-1]
    # (the real tokenizer: the signature line alone, small, and fitting with the part before)
    assert len(first) >= 3 and doc.text[tail.start:tail.end].strip() == paragraphs[-1]
    assert tail.tokens < budget * summary_chunks.TAIL_SHARE
    assert before.tokens + tail.tokens <= budget
    chunks = _check_chunks(eng, doc, MAX_TOKENS)
    assert len(chunks) == len(first) - 1, [(c.tokens, c.cite) for c in chunks]
    assert [(c.start, c.end) for c in chunks[:-1]] == [(c.start, c.end) for c in first[:-2]]
    last = chunks[-1]
    assert doc.text[last.start:last.end] == doc.text[before.start:before.end] + doc.text[tail.start:tail.end]
    assert last.cite == doc.cite(before.start, tail.end) and last.index == len(chunks)
    said = "".join(doc.text[c.start:c.end] for c in chunks)
    assert [p.strip() for p in said.split("\n\n")] == paragraphs


def test_a_text_with_no_line_breaks_is_measured_a_few_times_a_chunk_and_stops_on_ctrl_c(eng) -> None:
    """A document on one line is cut into words, and each chunk grew a word at a time, measured
    again for each: 909 measures (13 s) for 140,000 characters, minutes for 3 MB, and Ctrl-C
    waited for all of them. The pieces that fit are added together, and a stop stops it."""
    import itertools

    words = itertools.cycle("the quarterly report shows revenue growth in every region".split())
    doc = Document(source="line.txt", kind="text", text=" ".join(next(words) for _ in range(4000)))
    measured = [0]

    class Counting(Runner):
        def count(self, messages: list) -> int:
            measured[0] += 1
            return super().count(messages)

    _check_chunks(eng, doc, MAX_TOKENS)  # every character in one chunk, each filled and fitting
    chunks = make_chunks(Counting(eng, None), doc, CTX, MAX_TOKENS, SummarizeOptions())[0]
    assert len(chunks) >= 3 and measured[0] <= 2 + 6 * len(chunks), (measured[0], len(chunks))
    stop = threading.Event()

    class StopsAfterOne(Runner):
        def count(self, messages: list) -> int:
            if measured[0] > 4:
                stop.set()  # (Ctrl-C while it measures)
            measured[0] += 1
            return super().count(messages)

    measured[0] = 0
    stopped = make_chunks(StopsAfterOne(eng, stop), doc, CTX, MAX_TOKENS, SummarizeOptions())[0]
    assert 1 <= len(stopped) < len(chunks)


def _marked_pages(n: int) -> list[str]:
    """Pages whose every sentence starts with its page's marker: ``[P3]`` is on page 3 only."""
    pages = []
    for k in range(1, n + 1):
        sentences = " ".join(SUBJECT_PARAGRAPHS[(k + i) % 6] for i in range(3)).split(". ")
        pages.append(" ".join(f"[P{k}] {s.rstrip('.')}." for s in sentences))
    return pages


def _pages_read_from_markers(text: str, start: int, end: int) -> str:
    """The citation a reader would write for text[start:end], from the markers alone: the page
    of the last marker before the span (if the span begins mid-sentence) to the last inside it."""
    import re

    inside = [int(m) for m in re.findall(r"\[P(\d+)\]", text[start:end])]
    before = re.findall(r"\[P(\d+)\]", text[:start])
    first_marker = text.find("[P", start, end)
    lead = text[start : first_marker if first_marker >= 0 else end]
    pages = ([int(before[-1])] if before and lead.strip() else []) + inside
    a, b = min(pages), max(pages)
    return f"p. {a}" if a == b else f"pp. {a}–{b}"


def test_chunks_of_a_pdf_cite_pages(eng, tmp_path: Path) -> None:
    doc = read_document(make_pdf(tmp_path / "bees.pdf", _marked_pages(6)))
    chunks = _check_chunks(eng, doc, MAX_TOKENS)
    small, _, _ = make_chunks(Runner(eng, None), doc, CTX, MAX_TOKENS, SummarizeOptions(chunk_tokens=60))
    assert len(chunks) >= 2 and len(small) >= 8
    # chunks that end mid-page too (60 tokens is less than a page): the next one starts on it
    assert any(not doc.text[c.end - 2 : c.end + 2].count("\n\n") for c in small[:-1])
    for c in [*chunks, *small]:  # each chunk cites exactly the pages its text came from
        assert c.cite == _pages_read_from_markers(doc.text, c.start, c.end), doc.text[c.start : c.end][:80]
    assert chunks[0].cite.startswith(("p. 1", "pp. 1–")) and chunks[-1].cite.endswith("6")


def test_chunks_of_a_workbook_read_their_rows_under_the_sheets_columns(eng, profile, tmp_path: Path) -> None:
    """A workbook's parts after the first were rows of numbers without the columns' names (the
    135M model made up what they were: "healthcare costs", a line of emoji); each part that
    begins inside a sheet is read after its name and first row, counted in its tokens; a CSV
    export's after its first line."""
    from docmaker import make_xlsx

    from workstation.core.summary_chunks import chunk_messages, map_instruction

    rows: list[list[object]] = [["Date", "Department", "Amount (EUR)"]]
    rows += [[f"2026-01-{1 + i % 28:02d}", ["Sales", "IT", "HR"][i % 3], 100 + i] for i in range(150)]
    doc = read_document(make_xlsx(tmp_path / "expenses.xlsx", [("Expenses", rows), ("Summary", [["Total", 26175]])]))
    instruction = map_instruction(doc)  # (a table's: take the figures from the facts)
    chunks, _, budget = make_chunks(Runner(eng, None), doc, CTX, MAX_TOKENS, SummarizeOptions())
    assert len(chunks) >= 3 and "".join(doc.text[c.start : c.end] for c in chunks) == doc.text
    assert chunks[0].lead == ""  # (its text begins with them)
    for c in chunks[1:]:
        if c.start < doc.sections[0].end:
            assert c.lead == "Sheet: Expenses (continued)\nDate | Department | Amount (EUR)\n"
        prompt = eng.chat_prompt(chunk_messages(doc.text, c, instruction))
        assert len(prompt) == c.prompt_tokens and c.prompt_tokens + MAX_TOKENS <= CTX and c.tokens <= budget
    assert [c.lead for c in chunks[1:]].count("") <= 1  # (the Summary sheet's own start)
    export = tmp_path / "expenses.csv"  # the same saved as CSV: its first line
    export.write_text("\n".join(",".join(str(v) for v in row) for row in rows), encoding="utf-8")
    chunks = make_chunks(Runner(eng, None), read_document(export), CTX, MAX_TOKENS, SummarizeOptions())[0]
    assert len(chunks) >= 2 and chunks[0].lead == ""
    assert {c.lead for c in chunks[1:]} == {"expenses.csv (continued)\nDate,Department,Amount (EUR)\n"}
    # summarized, it reads the facts the program counted and 10 of its 150 rows, and is told to take
    # its figures from them (the model alone wrote totals that were nowhere in the sheet); the
    # reader finds the same facts under the summary, to check its words against (here a run
    # stopped before its first call: its parts measured, no model time spent)
    from workstation.core.summary_chunks import MAP_FACTS_INSTRUCTION

    stopped = threading.Event()
    stopped.set()
    result = summarize_document(eng, read_document(export), profile, cancel=stopped,
                                options=SummarizeOptions(map_tokens=4, reduce_tokens=4))
    prompt = chunk_messages(result.document.text, result.chunks[0], map_instruction(result.document))[0]["content"]
    assert len(result.chunks) == 1 and prompt.startswith(MAP_FACTS_INSTRUCTION)
    assert len(eng.chat_prompt([{"role": "user", "content": prompt}])) == result.chunks[0].prompt_tokens
    assert "Facts counted by the program from every row:\nexpenses.csv: 150 rows under the header row" in prompt
    assert "\n2026-01-10,Sales,109\n[Rows 11 to 150 of this table are left out here" in prompt
    facts = "- Amount (EUR) (column C): numbers; total 26,175, smallest 100, largest 249, average 174.50."
    assert "## Facts counted from the rows (by the program, not the model)\n\nexpenses.csv: 150 rows" in result.summary
    assert facts in result.summary.split("\n") and "toplam 26.175" in result.in_language(Texts("tr").get)
    # as JSON keeps them (F6's last summary for the next start, summarize --json): F6 closed the app
    # with "Object of type frozenset is not JSON serializable" on any document with a table
    kept = json.loads(json.dumps(result.to_dict()))["facts"][0]["columns"]
    assert [c["name"] for c in kept] == ["Date", "Department", "Amount (EUR)"] and kept[2]["total"] == "26,175"
    assert not any("values" in c for c in kept)  # (the words a question's condition is known by: not a figure)


def test_summary_of_a_pdf_reuses_the_prefix_and_cites_pages(eng, profile, tmp_path: Path) -> None:
    pages = [" ".join(SUBJECT_PARAGRAPHS[(k + i) % 6] for i in range(2)) for k in range(4)]
    doc = read_document(make_pdf(tmp_path / "bees.pdf", pages))
    seen: list[SummaryProgress] = []
    result = summarize_document(
        eng, doc, profile, on_progress=seen.append, options=SummarizeOptions(chunk_tokens=120)
    )
    assert not result.cancelled
    assert len(result.chunks) >= 3
    # chunk k > 1 starts with the same instruction tokens: the KV cache serves them
    assert result.prefix_tokens > 20
    assert result.chunks[0].metrics.cache_n < result.prefix_tokens
    for c in result.chunks[1:]:
        assert c.metrics.cache_n >= result.prefix_tokens
        assert c.metrics.prompt_n == c.prompt_tokens - c.metrics.cache_n
    # the model's own words mention the subject
    written = " ".join([result.overall, *(c.summary or "" for c in result.chunks)]).lower()
    assert "bee" in written or "hive" in written or "honey" in written
    # Markdown with a point per part citing its pages, and what a part is said once in words (the
    # overall summary ended "(pp. 1–4)" and the points began "pp. 1–2 —": labels nobody explained)
    md = result.summary
    assert md.startswith("# Summary of bees.pdf")
    assert f"so it was read in {len(result.chunks)} parts, one after the other;" in md
    assert not re.search(r"\(pp?\. [\d–]+\)\n", md), md  # the whole document's "(pp. 1–4)" after the overall
    for c in result.chunks:
        assert f"- **Part {c.index} ({c.cite})** — " in md
        assert c.cite.startswith(("p. ", "pp. "))
    # progress: chunks done/total with an ETA from the measured speed
    maps = [p for p in seen if p.stage == "map"]
    ends = [p for p in maps if not p.inside_part]  # as a part ends (the rest: a part under way)
    assert [p.chunks_done for p in ends] == list(range(len(result.chunks) + 1))
    assert all(p.chunks_total == len(result.chunks) for p in maps)
    assert ends[1].eta_s is not None and ends[1].prompt_per_second
    # and while a part is written, before it ends: its tokens so far, a share of one call
    writing = [p for p in maps if p.part and p.part_written]
    assert any(p.chunks_done == 0 and p.part == 1 for p in writing), maps
    assert all(0 < p.working <= 0.95 and p.part == p.chunks_done + 1 and p.inside_part for p in writing)
    # once a part has ended, the ETA goes on inside the next (it went back to "ETA …" there)
    assert all(p.eta_s is not None for p in writing if p.chunks_done >= 1) and any(p.chunks_done for p in writing)
    # and it counts down; where it climbs more than a small share, it says so (``TimeLeft``), or it
    # was a rough range before a part had ended
    told = [p for p in seen if p.stage in ("map", "reduce")]
    assert all(b.eta_s is None or a.eta_s is None or b.eta_revised or a.eta_high_s is not None
               or b.eta_s <= a.eta_s + max(a.eta_s * TIME_LEFT_RISE, TIME_LEFT_RISE_FLOOR)
               for a, b in zip(told, told[1:], strict=False)), told
    assert all(p.eta_high_s is None for p in told if p.chunks_done)  # confident once a part has ended
    moved = [p.done + p.working for p in maps]
    assert moved == sorted(moved)  # the bar never goes back
    # combining the parts' summaries is said as it begins (all through it, the last word was "4 of 4 parts done")
    combining = next(p for p in seen if p.stage == "reduce")
    assert combining.done == combining.chunks_done == len(result.chunks) < combining.total, combining
    # and while it is written, its time left never runs out to "…": at most its budget left at this run's pace
    assert all(p.eta_s is not None for p in seen if p.stage == "reduce" and p.inside_part), seen
    # and once it has, no step is said to be left (it said "3 of 4" and a step's time left before "done")
    assert all(p.done < len(result.chunks) + len(result.reduce_steps) for p in seen if p.stage == "reduce"), seen
    assert seen[-1].stage == "done"
    t = result.totals
    assert t["chunks_done"] == len(result.chunks) and t["calls"] == len(result.chunks) + len(result.reduce_steps)
    assert t["cache_n"] >= result.prefix_tokens * (len(result.chunks) - 1)
    json.dumps(result.to_dict())
    # the same summary as the Turkish UI shows it: the model's words, the Markdown around them in Turkish
    turkish = render_markdown(doc, result.overall, result.chunks, result.cancelled, t, Texts("tr").get)
    assert turkish.startswith("# bees.pdf özeti\n") and "## Bölümlere göre ana noktalar\n" in turkish
    assert f"bu yüzden {len(result.chunks)} bölümde, sırayla okundu." in turkish
    tr = Texts("tr")  # its closing line in Turkish words (1.200, Turkish writes a thousands dot), and time
    # its words counted in it, not its tokens turned into Turkish words (an English document said 99 of its 190)
    assert turkish.endswith(f"_{len(result.chunks)} bölümde okundu (yaklaşık {tr.number(words_of(doc, result.chunks))} "
                            f"sözcük); modele {int(t['calls'])} kez soruldu; {duration(t['total_ms'] / 1000, tr.get)}._\n"), turkish
    turkish_cite = {"p. ": "s. ", "pp. ": "s. "}  # the pages cited the Turkish way too
    assert all(f"- **{c.index}. bölüm ({turkish_cite[c.cite.split()[0] + ' ']}{c.cite.split()[1]})** — {c.summary}" in turkish
               for c in result.chunks)
    assert "pp. " not in turkish and "p. " not in turkish


def test_summary_of_a_real_text_mentions_its_subject(eng, profile, tmp_path: Path) -> None:
    text = real_long_text().read_text(encoding="utf-8")[:2000]
    path = tmp_path / "LICENSE-part.txt"
    path.write_text(text, encoding="utf-8")
    result = summarize_document(eng, read_document(path), profile)
    written = " ".join([result.overall, *(c.summary or "" for c in result.chunks)]).lower()
    assert "python" in written or "licen" in written or "software" in written
    assert len(result.chunks) >= 2  # longer than one context


def test_a_document_that_fills_its_part_is_asked_about_from_its_summary(eng, profile) -> None:
    """A document summarized in one part is asked about with the whole document, where a question
    and its answer still have room beside it; one that fills its part, from its summary: a
    2,400-word document's first question filled 3,642 of 4,096 tokens, its answer was cut
    ("context full") and the next question no longer saw the document."""
    from workstation.core.engine_api import answer_reserve
    from workstation.core.summarize import QUESTION_ROOM

    options = SummarizeOptions(map_tokens=8, reduce_tokens=8)
    short = summarize_document(eng, Document(source="memo.txt", kind="text", text=SUBJECT_PARAGRAPHS[0][:300]),
                               profile, options=options)
    assert len(short.chunks) == 1 and short.follow_up and short.intro_key == "summarize.context"
    words = honeybee_text(8).split()
    text = " ".join(words[:60])
    for n in range(70, len(words), 10):  # the longest text still one part: no question room beside it
        longer = " ".join(words[:n])
        if len(make_chunks(Runner(eng, None), Document(source="x", kind="text", text=longer), CTX, 8, options)[0]) > 1:
            break
        text = longer
    full = summarize_document(eng, Document(source="terms.txt", kind="text", text=text), profile, options=options)
    [part] = full.chunks
    assert part.prompt_tokens + QUESTION_ROOM + answer_reserve(profile.sampling, CTX) > CTX  # (no room: as the case)
    assert not full.follow_up and full.intro_key == "summarize.context_from_summary"
    assert full.conversation("Asked")[-1]["content"] == full.summary


def test_hierarchical_reduce_when_summaries_do_not_fit(eng, profile, tmp_path: Path) -> None:
    path = tmp_path / "bees.txt"
    path.write_text(honeybee_text(1), encoding="utf-8")
    doc = read_document(path)
    # tiny chunks, and reduce prompts capped: the partial summaries cannot fit one reduce prompt
    opts = SummarizeOptions(chunk_tokens=40, map_tokens=24, reduce_tokens=16, reduce_prompt_tokens=150)
    result = summarize_document(eng, doc, profile, options=opts)
    levels = [s.level for s in result.reduce_steps]
    assert len(result.chunks) >= 6
    assert max(levels) >= 2, [(s.level, s.inputs) for s in result.reduce_steps]
    assert all(s.prompt_tokens <= 150 for s in result.reduce_steps)
    assert result.reduce_steps[-1].inputs < len(result.chunks)
    assert result.overall


def test_cancel_keeps_the_finished_parts(eng, profile, tmp_path: Path) -> None:
    path = tmp_path / "bees.txt"
    path.write_text(honeybee_text(1), encoding="utf-8")
    cancel = threading.Event()

    def on_progress(p: SummaryProgress) -> None:
        if p.stage == "map" and p.chunks_done == 1:
            cancel.set()

    result = summarize_document(
        eng, read_document(path), profile, on_progress=on_progress, cancel=cancel,
        options=SummarizeOptions(chunk_tokens=80),
    )
    assert result.cancelled
    assert result.chunks[0].summary
    assert all(c.summary is None for c in result.chunks[1:]) and len(result.chunks) >= 2
    assert "Stopped after 1 of" in result.summary
    assert f"- **Part 1 ({result.chunks[0].cite})**" in result.summary
    # its figures: the words its part covers of the document's, and the calls that ended (the
    # footer said the whole document's tokens and counted the call stopped)
    n = len(result.chunks)
    document = read_document(path)
    assert f"_1 of {n} parts read (about {words_of(document, result.chunks[:1])} of the document's " \
        f"{words_of(document, result.chunks)} " \
        "words); the model was asked once; " in result.summary, result.summary


def test_engine_process_works_the_same(profile, tmp_path: Path) -> None:
    from workstation.core.engine_process import EngineProcess

    path = tmp_path / "bees.txt"
    path.write_text("\n\n".join(SUBJECT_PARAGRAPHS[:3]), encoding="utf-8")
    with EngineProcess(profile) as proc:
        result = summarize_document(proc, str(path), profile, options=SummarizeOptions(chunk_tokens=50))
    assert len(result.chunks) >= 2 and not result.cancelled
    assert all(c.metrics.cache_n >= result.prefix_tokens for c in result.chunks[1:])


def test_a_long_part_says_how_far_it_has_been_read_through_the_engine_process(tmp_path: Path) -> None:
    """A part is read in pieces of 512 tokens (minutes for a long one on a busy CPU, when the
    progress said nothing): how far it has been read comes through the app's engine process,
    before the first word of its summary."""
    from workstation.core.engine_process import EngineProcess

    profile = make_profile(context=1536, threads=1, sampling={"max_tokens": 8})
    path = tmp_path / "bees.txt"
    path.write_text(honeybee_text(3), encoding="utf-8")  # 647 tokens: read in two pieces (4 paragraphs read 866)
    seen: list[SummaryProgress] = []
    with EngineProcess(profile) as proc:
        result = summarize_document(proc, str(path), profile, on_progress=seen.append)
    assert len(result.chunks) == 1 and result.chunks[0].prompt_tokens > 600 and not result.cancelled
    reading = [p for p in seen if p.part == 1 and 0 < p.part_read < 1]
    assert reading and all(p.chunks_done == 0 and p.part_written == 0 and 0 < p.working < 1 for p in reading), seen
    assert any(p.part == 1 and p.part_read == 1 and p.part_written > 0 for p in seen)
    # the time left is said while the part is read, from this run's pace of reading and the
    # profile's writing speed (it said "…" until a part had ended): not a figure out of nowhere
    assert next(p for p in seen if p.stage == "map").eta_s is None  # before anything was read
    early = [p.eta_s for p in reading if p.eta_s is not None]
    assert early and all(0 < s < 10 * result.totals["total_ms"] / 1000 for s in early), (early, result.totals)
    # and said as a range while rough (it said "55 s" of a run that took 1 min 40 s)
    assert all(p.eta_high_s is not None and p.eta_high_s > p.eta_s for p in reading if p.eta_s is not None), reading


def test_cli_summarize_json_and_bad_input(profile, tmp_path: Path, capsys) -> None:

    from workstation.cli import main

    prof = write_profile_file(tmp_path / "small.yaml", profile)
    doc = tmp_path / "bees.md"
    doc.write_text("# Bees\n" + "\n\n".join(SUBJECT_PARAGRAPHS[:2]), encoding="utf-8")
    out = tmp_path / "out.json"
    short = ["--max-tokens", "16"]  # (the length of what is written is not the point where it is given)
    assert main(["summarize", str(doc), "-p", str(prof), "--json", "-o", str(out), "--quiet", *short]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert {"summary", "chunks", "source", "totals", "metrics"} <= set(data)
    assert data["source"].endswith("bees.md") and data["chunks"][0]["cite"] == "§ Bees"
    assert data["metrics"]["prompt_n"] > 0
    # a summary that stopped at its token limit ended mid-sentence ("…on February…") with no word of
    # why, where chat says a reply cut at its limit
    assert data["chunks"][0]["metrics"]["stop_reason"] == "length"  # 16 tokens: cut
    # a file that is there is replaced only with --yes (a Word file named by mistake was replaced
    # without a word); without a terminal to ask on, it is left as it was
    letter = tmp_path / "letter.docx"
    letter.write_bytes(b"PK\x03\x04 a Word file")
    assert main(["summarize", str(doc), "-p", str(prof), "-o", str(letter), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{letter} is there already and was not written by summarize, so it was left as it was; add --yes " \
           "to replace it" in err, err
    note = tmp_path / "note.md"  # a person's own "summary" is not taken for one of ours
    note.write_text("# Summary of the Q3 meeting\n\nAyla chairs.\n", encoding="utf-8")
    assert main(["summarize", str(doc), "-p", str(prof), "-o", str(note), "--quiet"]) == 1
    assert note.read_text(encoding="utf-8").endswith("Ayla chairs.\n")
    capsys.readouterr()
    assert letter.read_bytes() == b"PK\x03\x04 a Word file"
    # with --yes it is replaced, by the summary whose Markdown and words are read below (one summary
    # less to make: a run of its own replaced it), kept as the earlier Markdown summary the checks
    # after it want
    # a summary by a model under 1B parameters says to check its facts; gemma 270M is one too; one
    # cut by --max-tokens mid-sentence says so ("compared to the…"), with no label after it (it ended
    # "(§ Bees)", "(lines 1–20)": the whole document, a label nobody could place)
    assert main(["summarize", str(doc), "-p", str(prof), "-o", str(letter), "--yes", *short]) == 0
    err = capsys.readouterr().err
    assert letter.read_text(encoding="utf-8").startswith("# Summary of bees.md")
    shutil.copyfile(letter, tmp_path / "out.md")
    assert "Check names, dates and figures against the document:" in err and "is a very small model" in err
    assert f"Wrote the summary to {letter}." in err  # -o says where it went
    # its one part done, the summary being written: "nearly finished", not "ETA 0s"
    assert "1/1 part · summarizing the parts · " in err and "ETA 0s" not in err and "nearly finished" in err, err
    assert "1/1 part done" in err, err  # one part (it said "1/1 parts done")
    # and so does the file, under its title: what is read the next morning (batch writes these too)
    written = letter.read_text(encoding="utf-8").split("\n")
    assert written[2].startswith("> Check names, dates and figures against the document: ") and "135M" in written[2]
    headline = written[4]
    assert headline.endswith("…") and "§" not in headline, headline
    # with what lets it finish, the file's note's words (it said no way on where the note and F6 do)
    finish = "a larger max_tokens (the profile's, or --max-tokens) lets it finish."
    assert f"bees.md: the summary stopped at its length limit of 16 tokens, so it ends mid-sentence (…); {finish}" \
        in err, err
    # and in the file, where batch's reader sees it (the console alone said it)
    assert f"> The summary above stopped at its length limit, so it ends mid-sentence (…); {finish}" \
        in "\n".join(written), written
    # an earlier summary, JSON (here) or Markdown (the Turkish run below), is replaced as before (a
    # run to one file each night)
    assert main(["summarize", str(doc), "-p", str(prof), "-o", str(out), "--json", "--quiet", *short]) == 0
    # but not one of another document (a contract's nine-minute summary went without a word)
    other = tmp_path / "judgment.txt"
    other.write_text(SUBJECT_PARAGRAPHS[2], encoding="utf-8")
    capsys.readouterr()
    for earlier in (tmp_path / "out.md", out):
        before = earlier.read_bytes()
        assert main(["summarize", str(other), "-p", str(prof), "-o", str(earlier), "--quiet"]) == 1
        err = capsys.readouterr().err
        assert earlier.read_bytes() == before
        said = "Summary of bees.md" if earlier.suffix == ".md" else "bees.md"
        assert f"{earlier} holds another summary ({said}), so it was left as it was; add --yes to replace it" in err, err
    # a name inside another's ("Q3 bees.md") is another document, in either language's title; and a
    # summary of more documents than these is another summary
    from workstation.core.summary_file import earlier_summary

    footer = "\n_Read in one go (about 8 words); the model was asked once; 1 s._\n"
    for title in ("# Summary of Q3 bees.md", "# Q3 bees.md özeti", "# Summary of bees.md\n\n# Summary of other.txt"):
        (tmp_path / "s.md").write_text(title + "\n\nText." + footer, encoding="utf-8")
        assert earlier_summary(tmp_path / "s.md") and not earlier_summary(tmp_path / "s.md", of=["bees.md"]), title
    for title in ("# Summary of bees.md", "# bees.md özeti"):
        (tmp_path / "s.md").write_text(title + "\n\nText." + footer, encoding="utf-8")
        assert earlier_summary(tmp_path / "s.md", of=["bees.md"]), title
    # its closing line in Turkish, and as it was written before it said its figures in words (last
    # night's summaries): whole, or stopped part-way (which a stopped run may write over)
    from workstation.core.summary_file import whole_summary

    for footer, whole in (("_4 bölümde okundu (yaklaşık 1.200 sözcük); modele 5 kez soruldu; 1 dk 1 sn._", True),
                          ("_4 bölümden 1'i okundu (belgenin yaklaşık 1.200 sözcüğünden 300'ü); modele bir kez "
                           "soruldu; 9 sn._", False),
                          ("_9 of 9 parts, 61,926 document tokens, 10 model calls, 212.4 s._", True),
                          ("_3 of 9 parts (1,200 of the document's 61,926 tokens), 3 model calls, 71.0 s._", False)):
        (tmp_path / "s.md").write_text(f"# Summary of bees.md\n\nText.\n\n{footer}\n", encoding="utf-8")
        assert earlier_summary(tmp_path / "s.md", of=["bees.md"]) and whole_summary(tmp_path / "s.md", ["bees.md"]) == whole
    from workstation.core.catalog import params_text
    from workstation.core.summarize import small_model

    assert small_model(profile) is not None and params_text(small_model(profile)[1]) == "135M"
    # one formatter for every count the app and the commands say (it was "1500M" in the chat's welcome)
    assert (params_text(1_500_000_000), params_text(8_030_000_000)) == ("1.5B", "8.0B")
    assert params_text(999_885_952) == "1.0B"  # Gemma 3 1B's count (it said "1000M")
    assert small_model(dataclasses.replace(profile, backend="openai")) is None  # nothing known of a server's model

    bad = tmp_path / "photo.txt"
    bad.write_bytes(bytes(range(256)) * 10)
    capsys.readouterr()
    assert main(["summarize", str(bad), "-p", str(prof)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "photo.txt" in err and "binary" in err
    # several files: every one that cannot be read is named in the one sentence, before loading
    assert main(["summarize", str(bad), str(doc), str(tmp_path / "gone.pdf"), "-p", str(prof)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "2 of 3 documents cannot be read" in err
    assert "photo.txt" in err and "gone.pdf" in err and "bees.md" not in err
    assert err.endswith("Leave them out, or put the documents in a folder: 'workstation batch FOLDER' summarizes "
                        "each one it can read and names the rest.")
    assert main(["summarize", str(bad), str(tmp_path / "gone.pdf"), "-p", str(prof)]) == 1  # none readable:
    err = capsys.readouterr().err.strip()  # nothing to leave out for
    assert "2 of 2 documents cannot be read" in err and "Leave" not in err and "batch" not in err
    # the app's language, as F9 saves it, is summarize's too: its Markdown, what it says on stderr and
    # its errors (a Turkish office got "# Summary of …" and English sentences); --lang says another
    from workstation.tui.settings import save_language

    assert save_language("tr")  # (over the earlier English Markdown summary of bees.md: replaced)
    assert main(["summarize", str(doc), "-p", str(prof), "-o", str(tmp_path / "out.md"), *short]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / "out.md").read_text(encoding="utf-8").startswith("# bees.md özeti\n")
    assert f"Özet {tmp_path / 'out.md'} dosyasına yazıldı." in err and "bees.md: 1 bölüm, " in err, err
    assert "Check names" not in err and "Adları, tarihleri ve rakamları belgeyle karşılaştırın" in err, err
    assert ("bees.md: özet 16 token'lık uzunluk sınırında durdu, bu yüzden cümlenin ortasında bitiyor (…); profildeki "
            "max_tokens ya da komut satırında --max-tokens seçeneği büyütülürse özet biter.") in err, err
    damaged = tmp_path / "bozuk.docx"
    damaged.write_bytes(b"PK\x03\x04 cut")
    assert main(["summarize", str(damaged), "-p", str(prof)]) == 1
    assert "'bozuk.docx' hasarlı ya da yarım kalmış bir DOCX dosyası" in capsys.readouterr().err
    assert main(["summarize", str(damaged), "-p", str(prof), "--lang", "en"]) == 1
    assert "'bozuk.docx' is a damaged or truncated DOCX file" in capsys.readouterr().err
    # what it says before any work in Turkish too (it said these in English): several files, -o, -c
    assert main(["summarize", str(bad), str(doc), str(damaged), "-p", str(prof)]) == 1
    err = capsys.readouterr().err
    assert "3 belgeden 2 tanesi okunamıyor" in err and "'bozuk.docx' hasarlı" in err and "Onları çıkarın" in err, err
    word = tmp_path / "mektup.docx"
    word.write_bytes(b"PK\x03\x04 a Word file")
    assert main(["summarize", str(doc), "-p", str(prof), "-o", str(word), "--quiet"]) == 1
    assert f"{word} zaten var ve summarize tarafından yazılmadı, bu yüzden olduğu gibi bırakıldı" in capsys.readouterr().err
    assert main(["summarize", str(doc), str(bad), "-p", str(prof), "-c", "Arılar"]) == 1
    assert "-c İSİM tek bir belgenin sohbetini kaydeder" in capsys.readouterr().err
    from workstation.commands.stopping import stopped_by

    assert (stopped_by(signal.SIGHUP, Texts("tr")), stopped_by(signal.SIGTERM)) == (
        "terminalinin kapanması", "a request to end (SIGTERM)")


def test_the_summarys_footer_says_what_it_took_in_plain_words() -> None:
    """F6 and `summarize -o` wrote "4540 document tokens" (the command line's stderr: 4,540), then
    "4 of 4 parts, 2,918 document tokens, 5 model calls, 61.2 s.": tokens and model calls meant
    nothing to the office staff who read the file, and 61.2 s made them count."""
    doc = Document("notes.txt", "text", "Meeting at ten. " * 733)  # 2,199 words
    totals = {"calls": 5.0, "document_tokens": 2918.0, "total_ms": 61200.0}
    from workstation.core.metrics import TurnMetrics

    quarter = len(doc.text) // 4
    parts = [Chunk(i, (i - 1) * quarter, i * quarter if i < 4 else len(doc.text), 700, 750, f"line {i}", "Points.",
                   TurnMetrics()) for i in range(1, 5)]
    assert render_markdown(doc, "", parts, False, totals).endswith(
        "_Read in 4 parts (about 2,200 words); the model was asked 5 times; 1 min 1 s._\n")
    # in Turkish: its words counted, the same count (tokens turned into words at Turkish's rate said an English
    # document's 2,200 words were 1,200)
    assert render_markdown(doc, "", parts, False, totals, Texts("tr").get).endswith(
        "_4 bölümde okundu (yaklaşık 2.200 sözcük); modele 5 kez soruldu; 1 dk 1 sn._\n")
    # stopped while the parts were put together: every part is summarized (it said "Stopped after 4 of 4
    # parts; the points below cover lines 1–4 only" of the whole document)
    stopped = render_markdown(doc, "", parts, True, {**totals, "calls_stopped": 1.0})
    assert "> All 4 parts were summarized; only putting them together into one summary was stopped" in stopped
    assert "Stopped after" not in stopped and stopped.endswith(
        "_Read in 4 parts (about 2,200 words); the model was asked 4 times; 1 min 1 s._\n"), stopped
    # a run gone on with: its time said as this run's (it said "…kept from a run that stopped; 2 s.")
    went_on = [dataclasses.replace(parts[0], metrics=None), *parts[1:]]
    assert render_markdown(doc, "", went_on, False, totals).endswith(
        "the model was asked 5 times, and 1 part was kept from a run that stopped; this run took 1 min 1 s._\n")
    assert render_markdown(doc, "", went_on, False, totals, Texts("tr").get).endswith(
        "1 bölüm yarıda kalan önceki özetten alındı; bu çalışma 1 dk 1 sn sürdü._\n")
    from workstation.core.summarize import duration

    assert (duration(0.3), duration(0.0), duration(1.6)) == ("1 s", "0 s", "2 s")  # ("0 s" of a quick one read as none)
    # whole minutes and hours without "0 s" ("1 dk 0 sn geçti" read clumsily), in both languages
    assert (duration(60.2), duration(120.0), duration(3630.0), duration(61.0)) == ("1 min", "2 min", "1 h", "1 min 1 s")
    assert (duration(60.2, Texts("tr").get), duration(7260.0, Texts("tr").get)) == ("1 dk", "2 sa 1 dk")
    one = {"calls": 1.0, "document_tokens": 4540.0, "total_ms": 1500.0}
    whole = [dataclasses.replace(parts[0], end=len(doc.text))]
    assert render_markdown(doc, "", whole, False, one).endswith(
        "_Read in one go (about 2,200 words); the model was asked once; 2 s._\n")
    # a Chinese document's words, as words_in counts them (by spaces it was "about 1 word")
    chinese = Document("会议.txt", "text", "我们今天开会。" * 300)  # 1,800 characters, 1.5 a word
    assert render_markdown(chinese, "", [dataclasses.replace(parts[0], end=len(chinese.text))], False, one).endswith(
        "_Read in one go (about 1,200 words); the model was asked once; 2 s._\n")


def test_the_progress_bar_writes_to_stderr_as_it_is_when_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its stream was bound when the module was imported: a test's capture closed since (or a
    redirected stderr) made a summary fail with 'I/O operation on closed file'."""
    import io
    import sys

    from workstation.commands.summarize import ProgressBar
    from workstation.core.summarize import SummaryProgress

    now = io.StringIO()
    monkeypatch.setattr(sys, "stderr", now)
    ProgressBar("notes.txt")(SummaryProgress("map", 1, 2, 1, 2, 3.0, 100.0))
    assert now.getvalue().startswith("notes.txt: [") and "1/2 parts · summarizing the parts" in now.getvalue()
    stopped = io.StringIO()
    ProgressBar("notes.txt", stopped, width=8)(SummaryProgress("cancelled", 1, 1, 1, 4, None, None))  # as sent
    assert stopped.getvalue() == "notes.txt: [##------] 1/4 parts, then stopped\n"  # it said a full bar
    from workstation.tui.i18n import Texts  # in the app's language (--lang), as the summary is

    turkish = io.StringIO()
    ProgressBar("notlar.txt", turkish, width=8, t=Texts("tr"))(SummaryProgress("map", 1, 2, 1, 2, 65.0, 100.0))
    assert turkish.getvalue() == ("notlar.txt: [####----] 1/2 bölüm · bölümler özetleniyor · istem saniyede 100 token "
                                  "· kalan süre: 1 dk 5 sn\n")
    # one part: "part" (it said "0/1 parts", batch's log "0 of 1 parts done"); Turkish writes "1 bölüm" after any number
    one = io.StringIO()
    ProgressBar("notes.txt", one, width=8)(SummaryProgress("done", 1, 1, 1, 1, None, None))
    ProgressBar("notlar.txt", one, width=8, t=Texts("tr"))(SummaryProgress("done", 1, 1, 1, 1, None, None))
    assert one.getvalue() == "notes.txt: [########] 1/1 part done\nnotlar.txt: [########] 1/1 bölüm bitti\n"
    assert Texts("en")("batch_cmd.parts_done", done=0, total=1, eta="") == "0 of 1 part done"
    assert Texts("tr")("batch_cmd.parts_done", done=0, total=1, eta="") == "1 bölümden 0'ı bitti"
    # a desk PC's office server silent (behind the person's chat request): the line once, not each second
    from workstation.core.events import ServerWaiting

    waited = io.StringIO()
    bar = ProgressBar("notes.txt", waited)
    for seconds in (5.0, 6.0):
        bar(SummaryProgress("map", 0, 2, 0, 2, None, None, inside_part=True, waiting=ServerWaiting(seconds, own=True)))
    assert waited.getvalue() == ("notes.txt: waiting: the server is busy with your other request; this one starts "
                                 "when it ends (Ctrl-C stops)…\n")
    turkish = io.StringIO()  # in the app's language too (it was English there alone)
    ProgressBar("notlar.txt", turkish, t=Texts("tr"))(
        SummaryProgress("map", 0, 2, 0, 2, None, None, inside_part=True, waiting=ServerWaiting(5.0, own=True)))
    assert turkish.getvalue().startswith("notlar.txt: bekleniyor: sunucu diğer isteğinizle meşgul"), turkish.getvalue()


def test_the_progress_line_fits_the_terminal_it_is_redrawn_on() -> None:
    """A line longer than the terminal wrapped, and the redraw ("\\r") took back only its last
    row: each update left a copy of itself (39 of them for one summary in a 120-column window)."""
    import fcntl
    import struct
    import termios

    from workstation.commands.summarize import ProgressBar
    from workstation.core.summarize import SummaryProgress

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))  # 60 columns
    with os.fdopen(slave, "w", encoding="utf-8") as terminal:
        bar = ProgressBar("meeting-minutes-2026.md", terminal)
        for written, left in ((12, 90.0), (140, 84.0)):
            bar(SummaryProgress("map", 1, 4, 1, 4, left, 216.0, working=0.5, part=2, part_read=1.0,
                                part_written=written, inside_part=True))
    import select

    data = b""
    while select.select([master], [], [], 0.5)[0]:  # a pty hands over one write at a time
        try:
            data += os.read(master, 4096)
        except OSError:  # (Linux: the other end closed)
            break
    os.close(master)
    shown = data.decode("utf-8")
    lines = [line for line in shown.split("\r\x1b[2K") if line]
    assert len(lines) == 2 and all(len(line) < 60 for line in lines), lines
    # the time left in F6's words kept to the last (the part's tokens give way before it)
    assert lines[1] == "meeting-minutes-2026.md: 1/4 parts · time left: 1 min 24 s", lines


def test_a_terminal_that_cannot_move_its_cursor_gets_a_line_a_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """TERM=dumb (Emacs' shell, where Emacspeak reads a colleague the output) is a terminal
    all the same: each redraw came as "\\r^[[K" before the line, and was read out again.
    Each step is a line of its own there, with no escape codes, as in a log."""
    import select

    from workstation.commands.progress_bar import ProgressBar as StepBar
    from workstation.commands.summarize import ProgressBar
    from workstation.core.summarize import SummaryProgress
    from workstation.core.terminal import redraws_in_place

    monkeypatch.setenv("TERM", "dumb")
    master, slave = os.openpty()
    with os.fdopen(slave, "w", encoding="utf-8") as terminal:
        assert terminal.isatty() and not redraws_in_place(terminal)
        bar = ProgressBar("notes.txt", terminal, width=8)
        bar(SummaryProgress("map", 1, 2, 1, 2, 3.0, 100.0))
        bar(SummaryProgress("done", 2, 2, 2, 2, None, None))
        steps = StepBar(terminal, width=4)
        steps(0.5, "reading your message")
        steps.finish()
    data = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            data += os.read(master, 4096)
        except OSError:
            break
    os.close(master)
    shown = data.decode("utf-8").replace("\r\n", "\n")  # (the pty's own line ends)
    assert "\x1b" not in shown and "\r" not in shown, repr(shown)
    assert shown.count("\n") == 3 and shown.startswith("notes.txt: [####----] 1/2 parts"), repr(shown)
    monkeypatch.setenv("TERM", "xterm-256color")
    with open(os.devnull, "w") as nowhere:
        assert not redraws_in_place(nowhere)


def test_a_summary_that_goes_round_in_circles_is_cut_where_it_began_to() -> None:
    """A long document's summary by the 135M model was a page of "2022-2023 Top 15 High Tech
    Industry 2022-2023 Top 15 List …" and rows of "* * *", burying its first sentences. The
    text is cut where a run of words comes a second time (ending in "…" mid-sentence)."""
    from workstation.core.summarize import clean_summary

    looped = ("The board approved the budget. " + "Top 15 High Tech Industry 2022-2023 list of firms. " * 6)
    assert clean_summary(looped) == "The board approved the budget. Top 15 High Tech Industry 2022-2023 list of firms."
    stars = "Sales rose by a tenth in Q3.\n* * * * *\n* * * * *\n* * * * *\n* * * * *"
    assert clean_summary(stars) == "Sales rose by a tenth in Q3."
    assert clean_summary("The minutes cover the budget and " + "the the plan plan " * 5) == \
        "The minutes cover the budget and the the plan plan…"
    # the parts' summaries go to the last step as paragraphs: labelled "Part 1: …", the labels came
    # back in the summary ("Part 3: The goal of this text…" of a document read in 2 parts)
    from workstation.core.summarize import PartSummary, reduce_body

    assert reduce_body([PartSummary(0, 1, "The team met."), PartSummary(1, 2, "The budget grew.")]) == \
        "The team met.\n\nThe budget grew."
    plain = "The office moves in May. Desks go by team, and the kitchen stays on the third floor."
    assert clean_summary(plain) == plain  # a sentence that says new things each time is kept whole
    # a phrase that comes back later is no loop: every point of the list is kept
    points = ("- Revenue rose 5% in the first quarter of the year.\n- Costs rose 2% in the first quarter of the "
              "year.\n- Profit rose 9% in the first quarter of the year.\n- Staff grew by 4 in the first quarter of "
              "the year.")
    assert clean_summary(points).endswith("Staff grew by 4 in the first quarter of the year.")


def test_a_summary_written_in_markdown_reads_as_one_paragraph() -> None:
    """F6 showed "… impact the entire business. ## Next steps To ensure … ### Key points - The
    meeting …": the reply's headings and list marks stayed in the one paragraph."""
    from workstation.core.summarize import clean_summary

    reply = ("The outage will impact the entire business.\n\n## Next steps\nTo ensure it does not happen again, "
             "IT replaces the switch.\n### Key points:\n- The meeting is on Monday.\n* Bring the report.\n"
             "2. Ayla chairs it.")
    assert clean_summary(reply) == ("The outage will impact the entire business. Next steps: To ensure it does not "
                                     "happen again, IT replaces the switch. Key points: The meeting is on Monday. "
                                     "Bring the report. Ayla chairs it.")
    # items without a full stop stay apart; a number that wraps a sentence is no list's; a
    # heading that ends the reply is no lead-in
    assert clean_summary("Key points\n- Revenue up 5%\n- Costs down 3%") == "Key points: Revenue up 5%. Costs down 3%."
    assert clean_summary("The steps are listed in section\n3. Each takes a week.") == \
        "The steps are listed in section 3. Each takes a week."
    assert clean_summary("Hiring comes first.\n# 1 priority is hiring") == "Hiring comes first. 1 priority is hiring"


def test_a_label_alone_on_a_summarys_last_line_is_left_out() -> None:
    """A school letter's summary (SmolLM2, `batch`) ended "… from the main gate.\n\nSummary:": a
    label the model began and did not go on with. The one cleaner F6, `summarize` and `batch`
    use leaves it out, in Turkish too; a label with words after it on its line is a lead-in."""
    from workstation.core.summarize import clean_summary

    reply = ("The school trip to the museum takes place next Friday. Pupils bring a packed lunch, a raincoat and "
             "the signed permission form; the bus leaves at 8:30 from the main gate.\n\nSummary:")
    assert clean_summary(reply) == reply.removesuffix("\n\nSummary:")
    assert clean_summary("Veli toplantısı salı günü saat 18.00'de.\n\n**Özet:**\n") == \
        "Veli toplantısı salı günü saat 18.00'de."
    assert clean_summary("The hall is booked.\nAnswer:\nQuestion:") == "The hall is booked."
    assert clean_summary("Summary: The hall is booked.") == "The hall is booked."
    # a label of two words before it (a school letter's began "Text Summary: School trip number 5 …"), Turkish too
    for said in ("Text Summary: The hall is booked.", "Short summary: The hall is booked.",
                 "Özet: The hall is booked.", "Metnin özeti: The hall is booked."):
        assert clean_summary(said) == "The hall is booked.", said
    for own in ("Pay summary: nets rose.", "Özetle, salon ayrıldı."):  # a document's own words stay
        assert clean_summary(own) == own, own


def test_the_prompts_markers_echoed_in_a_summary_are_left_out() -> None:
    """A desk PC's summary of meeting minutes read "… on 19 December. END OF SUMMARIES. The
    team …": the prompt's closing marker, echoed by the model in the middle of its reply."""
    from workstation.core.summarize import clean_summary

    said = ("The team met on Monday. END OF SUMMARIES. Write the summary of the whole document. "
            "The budget grew.\nEND OF TEXT.")
    assert clean_summary(said) == "The team met on Monday. The budget grew."
    assert clean_summary("The team met on Monday. END OF SUMMARIES.\n\nSUMMARIES:\nThe budget grew.") \
        == "The team met on Monday. The budget grew."  # its label on a line of its own
    for own in ("The report covers the end of summaries written by hand, and the text: a letter.",
                "The memo quotes the FULL TEXT: the parties agree to pay. Section 4 (TEXT: see annex) holds."):
        assert clean_summary(own) == own  # the document's own words stay


def test_summarize_to_a_log_says_each_part_once(profile, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """stderr to a file (a nightly `summarize … 2> log`) got a line each half second a part was
    written ("part 1: 18 tokens written", "35 tokens written", …); a terminal's bar is redrawn in place."""

    from workstation.cli import main

    path = tmp_path / "bees.txt"
    path.write_text(honeybee_text(2), encoding="utf-8")
    prof = write_profile_file(tmp_path / "p.yaml", profile)
    assert main(["summarize", str(path), "-p", str(prof), "-o", str(tmp_path / "s.md")]) == 0
    err = capsys.readouterr().err
    assert "tokens written" not in err and "reading part" not in err, err
    assert err.count("parts · summarizing the parts") >= 2, err



def test_a_document_of_one_part_gets_a_whole_summarys_length(eng, profile, tmp_path: Path) -> None:
    """A document in one part has no combining call after it: its part's summary is the whole
    summary, and was cut at a part's budget (256 tokens, a three-page memo's mid-sentence)."""
    import dataclasses

    path = tmp_path / "note.txt"
    path.write_text(honeybee_text(1)[:600], encoding="utf-8")
    doc = read_document(path)
    endless = dataclasses.replace(profile, sampling=dataclasses.replace(profile.sampling, ignore_eos=True))
    result = summarize_document(eng, doc, endless, options=SummarizeOptions(map_tokens=6, reduce_tokens=20))
    assert len(result.chunks) == 1 and result.chunks[0].metrics is not None
    assert result.chunks[0].metrics.predicted_n == 20, result.chunks[0].metrics


def test_a_cut_summary_is_advised_by_what_held_it(tmp_path: Path) -> None:
    """A summary's reply is held by the least of the profile's longest reply, a share of the
    context and the longest a summary is written (256 a part, 512 combining); "raise the longest
    reply" was said of all three. The profile's longest reply only where it was the least."""
    from workstation.core.summarize import _answer_budgets, _totals

    def held(context: int, max_tokens: int) -> tuple[tuple[int, str], tuple[int, str]]:
        profile = make_profile(context=context, sampling={"max_tokens": max_tokens})
        return _answer_budgets(profile, context, SummarizeOptions())

    assert held(4096, 100) == ((100, "reply"), (100, "reply"))
    assert held(256, 400) == ((48, "context"), (64, "context"))
    assert held(8192, 1024) == ((256, "longest"), (512, "longest"))  # (the shipped profiles' kind)
    assert held(1024, 128) == ((128, "context"), (128, "reply"))  # (a part's share of the context is 128 too)
    assert held(2048, 512)[1] == (512, "longest")
    doc = tmp_path / "bees.md"
    doc.write_text("# Bees\n\n" + SUBJECT_PARAGRAPHS[0], encoding="utf-8")
    document = read_document(doc)
    cut, totals = "Honeybees live in colonies of thousands and…", _totals([], [], 1000.0)
    for lookup, advice, not_said in ((None, "ask a question about a point for more on it", "max_tokens"),
                                     (Texts("en").in_app, "For more on a point, ask a question about it (Ctrl+K).",
                                      "Longest reply"),
                                     (Texts("tr").in_app, "(Ctrl+K)", "En uzun yanıt")):
        text = render_markdown(document, cut, [], False, totals, lookup, None, "longest")
        assert advice in text and not_said not in text, text
    assert "(F3 → E, Longest reply)" in render_markdown(document, cut, [], False, totals, Texts("en").in_app, None, "reply")


def test_a_stopped_summary_goes_on_from_its_kept_parts_until_the_document_changes(
        eng, profile, tmp_path: Path) -> None:
    """The parts a stopped run finished are kept on disk as each is done (a summary stopped at
    part 40 of 50, by Ctrl-C, a closed laptop or a quit app, began again at part 1): the next
    run of the same document and profile goes on from them; a whole summary forgets them, and
    a document changed since, or another profile, starts again."""
    from workstation.core.kept_parts import kept_count, parts_for

    path = tmp_path / "bees.txt"
    path.write_text("\n\n".join(SUBJECT_PARAGRAPHS[:3]), encoding="utf-8")
    options = SummarizeOptions(chunk_tokens=50)
    cancel = threading.Event()

    def stop_after_one(p: SummaryProgress) -> None:
        if p.stage == "map" and p.chunks_done == 1:
            cancel.set()

    parts = parts_for(path, profile)
    assert parts is not None and parts.done == {}
    first = summarize_document(eng, read_document(path), profile, on_progress=stop_after_one, cancel=cancel,
                               options=options, done_parts=parts.done, on_part=parts.keep)
    parts.close()
    assert first.cancelled and kept_count(path, profile) == 1
    other = dataclasses.replace(profile, sampling=dataclasses.replace(profile.sampling, max_tokens=MAX_TOKENS + 1))
    assert kept_count(path, other) == 0  # another part budget cuts other parts
    assert kept_count(path, dataclasses.replace(profile, context=CTX * 2)) == 0  # and another context

    seen: list[SummaryProgress] = []
    parts = parts_for(path, profile)  # as a new process finds them
    assert parts is not None and list(parts.done.values()) == [(first.chunks[0].reply, first.chunks[0].summary)]
    second = summarize_document(eng, read_document(path), profile, on_progress=seen.append, options=options,
                                done_parts=parts.done, on_part=parts.keep)
    assert not second.cancelled and second.chunks[0].summary == first.chunks[0].summary
    assert second.chunks[0].metrics is None  # not summarized again
    assert [p.chunks_done for p in seen if p.stage == "kept"] == [1]
    # the command line's last line says the part kept apart (it said the whole document was read now)
    from workstation.commands.summarize import closing_line

    rest = sum(c.tokens for c in second.chunks[1:])
    assert closing_line(second, 1.5).startswith(
        f"bees.txt: {len(second.chunks)} parts, 1 kept from the run that stopped, {rest:,} document tokens of the rest "
        "read and summarized at "), closing_line(second, 1.5)
    # its closing line counts the calls of this run, and says the part kept (only this run's were counted)
    calls = int(second.totals["calls"])
    assert f" parts (about {words_of(read_document(path), second.chunks)} words); the model was asked {calls} times, and " \
           "1 part was kept from a run that stopped; " in second.summary, second.summary
    assert len(second.chunks) >= 2 and all(c.metrics is not None for c in second.chunks[1:])
    assert kept_count(path, profile) == len(second.chunks)
    # asked about, a document of several parts is answered from its summary, and the question says so
    intro = Texts("en")(second.intro_key, name="bees.txt")
    assert second.conversation(intro)[0]["content"] == intro and not second.follow_up
    assert intro.endswith("from your summary (the document is longer than you can read at once).")
    parts.forget()  # whole: what the callers do
    parts.close()
    assert kept_count(path, profile) == 0

    cancel.clear()
    parts = parts_for(path, profile)
    assert parts is not None
    summarize_document(eng, read_document(path), profile, on_progress=stop_after_one, cancel=cancel,
                       options=options, done_parts=parts.done, on_part=parts.keep)
    parts.close()
    assert kept_count(path, profile) == 1
    path.write_text("\n\n".join(SUBJECT_PARAGRAPHS[:3]) + "\n\nOne more line.", encoding="utf-8")  # edited since
    assert kept_count(path, profile) == 0
    assert kept_count(path, profile, other=True) == 1  # (F6 says they will not be used)
    parts = parts_for(path, profile)
    assert parts is not None and parts.done == {} and parts.dropped == 1  # (summarize says so)
    parts.close()


def test_the_time_left_takes_a_parts_summary_and_a_combining_step_as_long_as_they_are_written() -> None:
    """A resumed run of 6 parts on this PC's busy 2 cores (SmolLM2, 2 kept): its parts wrote 44 to
    224 tokens of 256, its combining step 512 of 512 in 20 s after reading 948 tokens in 15 s (56
    in another run). Taken as 128 a part and a step as long as a part's summary, the step was said
    to take 15 s of its 35 (then "…"), and a run whose parts wrote 50 each was said to take twice its time."""
    from workstation.core.summarize import answer_length, combining_time

    assert answer_length([], 0.0, 256) == 128  # nothing written yet: half the budget
    assert answer_length([], 52.0, 256) == 52  # a stopped run's parts kept: as long as they were
    assert answer_length([44, 224, 59, 143], 52.0, 256) == 117.5  # this run's own
    # the step measured: 6 parts of 117.5 tokens, a 72-token instruction, 61 tokens a second read, 26 written
    step = combining_time(1, 6 * 117.5, 72, 1900, 1, [], 512, 61.0, 26.0)
    assert step == pytest.approx((705 + 72) / 61 + 256 / 26)  # half its budget: 23 s (it took 35, and 11)
    assert combining_time(1, 6 * 117.5, 72, 1900, 1, [512], 512, 61.0, 26.0) > step  # as this run's steps wrote
    assert combining_time(0, 6 * 117.5, 72, 1900, 1, [], 512, 61.0, 26.0) == 0.0
    # before this run has written: the plan's pace, but at most a third of this run's pace of reading
    # (the plan's 78 a second, where this run wrote 31, said "under a minute" of 80 s, reading)
    from workstation.core.summarize import early_write_pace

    assert early_write_pace(77.6, 104.0, []) == pytest.approx(104.0 / 3)
    assert early_write_pace(77.6, 5000.0, []) == 77.6  # (a GPU's reading: the plan's)
    assert early_write_pace(77.6, 104.0, [(60, 2.0), (30, 1.0)]) == 30.0  # this run's own
    # two steps share the summaries, each at most a part's prompt
    assert combining_time(2, 40 * 100, 72, 1900, 3, [], 512, 61.0, 26.0) == pytest.approx(2 * ((4000 / 3 + 72) / 61 + 256 / 26))


def test_a_part_gone_on_with_from_a_stopped_runs_cells_is_not_the_pace_of_reading() -> None:
    """Ctrl+R after a stop mid-part: that part's prompt is in the cells (a token or two read) and
    it ends in a second. Counted as this run's pace, the next part's reading moved F6's bar (and
    the command line's) by 0.02 of a part at 74% read, and the time left said 3 s of 15."""
    from workstation.core.metrics import TurnMetrics
    from workstation.core.summarize import part_under_way, reading_calls

    prefix = 60  # the instruction every part's prompt begins with
    read = TurnMetrics(prompt_n=1500, cache_n=prefix, prompt_ms=10_000.0, predicted_n=40, predicted_ms=1_000.0)
    went_on = TurnMetrics(prompt_n=1, cache_n=prefix + 1500, prompt_ms=20.0, predicted_n=40, predicted_ms=1_000.0)
    assert reading_calls([went_on, read], prefix) == [read]
    assert reading_calls([TurnMetrics(prompt_n=30, cache_n=prefix)], prefix)  # a short part read whole
    working, first = part_under_way({2: [0.74, 0.0]}, [went_on], 256, prefix)
    assert first == 2 and working == pytest.approx(0.37)  # half and half, none measured yet (it was 0.015)
    working, _ = part_under_way({2: [0.74, 0.0]}, [went_on, read], 256, prefix)
    assert working == pytest.approx(0.74 * 10 / 11)


def test_the_time_left_is_a_range_while_rough_then_counts_down_and_says_when_it_goes_up() -> None:
    """F6 said "55 s" of a run that took 1 min 40 s (its first estimate, before a part had ended),
    then held "44 s" for 20 s (a higher estimate blended in gently: frozen, to a reader). Rough,
    it is a range of minutes; once a part has ended it counts down by the second, and a higher
    estimate is said as it is, with words saying it went up."""
    from workstation.core.summarize import TimeLeft, eta_text

    left = TimeLeft()
    assert left.update(None, 0.0) is None  # nothing measured: "…"
    said = left.update(55.0, 1.0, high=2.0)  # rough: up to twice it
    assert eta_text(said, "time left:", high=left.high) == "time left: about 1–2 min"
    assert eta_text(left.update(None, 2.0), "time left:", high=left.high) == "time left: about 1–2 min"
    assert eta_text(20.0, "left", high=30.0) == "left under a minute"
    assert eta_text(20.0, "kalan", high=300.0, lookup=Texts("tr").get) == "kalan yaklaşık 1–5 dk"
    assert eta_text(8000.0, "left", high=12000.0) == "left about 2–4 h"  # two hours and more: in hours
    assert eta_text(0.0, "left", soon="nearly done", high=30.0) == "nearly done"  # (no range of nothing left)
    # a part has ended, and more is left than the range's top: said as gone up ("4–6 dk", then "2 dk 40 sn"
    # went down; above it, the switch read as a jump nobody was told of)
    assert left.update(172.0, 10.0) == 172.0 and left.high is None and left.revised
    left = TimeLeft()
    left.update(150.0, 9.0, high=1.5)  # ("about 2–4 min": 172 s is inside it)
    # a part has ended: confident, counting down by the second, never held
    shown = [left.update(172.0, 10.0)] + [left.update(None, 10.0 + s / 2) for s in range(1, 41)]
    assert left.high is None and shown == [172.0 - s / 2 for s in range(41)]
    assert not left.revised
    # the next part ended later than foreseen: said as it is, and that it went up ("44 s" held for 20 s)
    assert left.update(185.0, 35.0) == 185.0 and left.revised
    assert eta_text(185.0, "time left:", revised=True) == "time left: 3 min 5 s (longer than first thought)"
    assert eta_text(185.0, "kalan", revised=True, lookup=Texts("tr").get) == "kalan 3 dk 5 sn (ilk tahminden uzun)"
    left.update(None, 36.0)
    assert left.revised and left.update(None, 46.0) == 174.0 and not left.revised  # (said for a while, then not)
    assert left.update(100.0, 47.0) == 100.0 and not left.revised  # lower: at once
    assert left.update(102.0, 48.0) == 102.0 and not left.revised  # (a second or two more is not news)
    # a part longer than foreseen: "…", not "0 s" for minutes; the next estimate said as it is
    left = TimeLeft()
    left.update(5.0, 0.0)
    assert left.update(None, 4.0) == pytest.approx(1.0) and left.update(None, 6.0) is None
    assert left.update(40.0, 7.0) == 40.0
    # a combining step writing its whole budget (512 of 512, said to take 15 s of its 35, then "…"): counting
    # down, no more than its budget left at this run's pace; run out, that is said as gone up
    left = TimeLeft()
    left.update(15.0, 0.0)
    assert left.update(None, 5.0, at_most=30.0) == 10.0 and not left.revised  # (inside it: counts down)
    assert left.update(None, 10.0, at_most=4.0) == 4.0 and not left.revised  # (above it: lower at once)
    assert left.update(None, 18.0, at_most=12.0) == 12.0 and left.revised  # ran out: up, not "…"
    assert left.update(None, 19.0, at_most=11.0) == 11.0 and left.revised


def test_a_summary_is_cut_short_only_where_its_last_step_stopped_at_its_length() -> None:
    """``SummaryResult.cut_short``: the step that wrote the summary (its one part's, else its last
    combining step's) stopped at its length limit; not a summary stopped by the person, nor one
    with no summary written (nothing to finish), nor one of several parts read by no combining
    step. A reply length given as an option holds it as the profile's longest reply does."""
    from workstation.core.metrics import TurnMetrics
    from workstation.core.summarize import ReduceStep, SummaryResult, _answer_budgets
    from workstation.core.summary_chunks import Chunk

    def result(overall: str, chunks: int, reduced: str | None, cancelled: bool = False, first: str = "length") -> bool:
        parts = [Chunk(i + 1, 0, 10, 5, 20, "", "x", TurnMetrics(stop_reason=first)) for i in range(chunks)]
        steps = [] if reduced is None else [ReduceStep(1, chunks, "", 20, "x", TurnMetrics(stop_reason=reduced))]
        return SummaryResult("doc", "x", overall, parts, steps, {}, cancelled, 1024, 0, 100).cut_short

    assert result("A summary that", 1, None) is True
    assert result("A summary.", 1, None, first="eos") is False
    assert result("", 1, None) is False  # (none written)
    assert result("A summary that", 1, None, cancelled=True) is False
    assert result("A summary that", 2, "length", first="eos") is True
    assert result("A summary.", 2, "eos") is False
    assert result("A summary.", 2, None) is False
    profile = make_profile(context=8192, sampling={"max_tokens": 1024})
    assert _answer_budgets(profile, 8192, SummarizeOptions(map_tokens=40, reduce_tokens=80)) == ((40, "reply"), (80, "reply"))


def test_the_paragraphs_before_a_dense_line_are_not_read_one_a_part(eng) -> None:
    """A line that spends about a token a character (a code, digits, no spaces) after paragraphs:
    a part that took in the line's first piece was cut back by the document's sample's characters
    a token (3.7), which dropped every paragraph but the first, and each paragraph was a part of its
    own (a 45,000-character file at the default context of 4,096: 28 parts, 19 of them one paragraph).
    (Only counted here, with the model's tokenizer: a context of 4,096 is the default profile's.)"""
    twice = (read_document(real_long_text()).text.strip() + "\n\n") * 2
    paragraphs = twice[:twice.index("\n\n", 17_000) + 2]  # (about a part and a third of paragraphs)
    text = paragraphs + "x9Z" * 9000
    chunks, _, budget = make_chunks(Runner(eng, None), Document(source="x", kind="text", text=text), 4096,
                                    256, SummarizeOptions())
    assert "".join(text[c.start:c.end] for c in chunks) == text
    assert all(c.tokens <= budget for c in chunks)
    before = [c for c in chunks if c.end <= len(paragraphs)]
    tokens = len(eng.model.tokenize(paragraphs, add_special=False, parse_special=False))
    assert len(before) <= -(-tokens // budget) + 1, [(c.tokens, c.cite) for c in chunks]


def test_a_max_tokens_below_a_summarys_least_is_refused_in_a_sentence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`summarize --max-tokens 8` ran, then said "length limit of 16 tokens": below 16 the option
    was taken as 16 without a word. It is refused in one sentence, before a model is loaded, by
    `summarize` and `batch` alike, in Turkish too; 16 itself is taken."""
    from workstation.cli import main

    doc = tmp_path / "note.txt"
    doc.write_text("The canteen closes at two on Fridays.\n", encoding="utf-8")
    said = "--max-tokens is 8; a summary takes at least 16 tokens (fewer is a few words), so give 16 or more."
    for command in (["summarize", str(doc)], ["batch", str(tmp_path)]):
        assert main([*command, "--max-tokens", "8"]) == 1
        out = capsys.readouterr()
        assert said in out.err and "Traceback" not in out.err, out.err
        assert not (tmp_path / "summaries").exists()
    assert main(["summarize", str(doc), "--max-tokens", "8", "--lang", "tr"]) == 1
    assert "--max-tokens 8; bir özet en az 16 token alır" in capsys.readouterr().err
    assert main(["summarize", str(doc), "--max-tokens", "16", "--quiet"]) == 0
    assert capsys.readouterr().out.strip()  # (a summary printed: the tiny model's words are not checked)


@pytest.mark.parametrize("lang", ["en", "tr"])
def test_a_summary_cut_at_its_longest_names_ctrl_k_once(lang: str) -> None:
    """F6's line said "For more on a point, ask about it (Ctrl+K). Ctrl+K asks questions about it
    in the chat" (newuser22): its key once, in the sentence that says what it does."""
    t = Texts(lang)
    cut = t("summarize.done_cut_longest")
    for key in ("summarize.done", "summarize.done_attached", "summarize.done_attached_empty"):
        line = t(key, done=cut, name="agreement.txt")
        assert line.count("Ctrl+K") == 1, line


def test_a_summary_only_question_is_put_in_the_documents_language() -> None:
    """Ctrl+K on an English report's summary (several parts: asked from the summary) under --lang
    tr: the question the model read was the UI's Turkish ("report.txt belgesini özetle; …"), and an
    English question got a Turkish answer. The model reads it in the summary's language
    (``SummaryResult.asked_in``); the chat shows it in the UI's."""
    from workstation.core.summarize import SummaryResult

    overall = ("The office will move to the new building in March. The staff are asked to pack their desks "
               "and to send the list of their equipment to the manager by the end of the month.")
    result = SummaryResult("report.txt", overall, overall, [], [], {}, False, 4096, 0, 0)
    assert result.asked_in("tr") == "en"
    shown = Texts("tr")(result.intro_key, name="report.txt")
    sent = Texts(result.asked_in("tr"))(result.intro_key, name="report.txt")
    first = result.conversation(shown, sent)[0]
    assert first["content"] == sent and sent.startswith("Summarize the document report.txt;"), first
    assert first["shown"] == shown and shown.startswith("report.txt belgesini özetle"), first
    turkish = SummaryResult("rapor.txt", "Ofis mart ayında yeni binaya taşınacak ve bu yüzden herkes masasını "
                            "toplamalı.", "", [], [], {}, False, 4096, 0, 0)
    assert turkish.asked_in("en") == "tr"
    assert result.conversation(shown)[0] == {"role": "user", "content": shown}  # (one language: nothing more)


def test_a_document_read_in_one_go_is_asked_about_whole_where_the_chat_keeps_it_whole(eng, profile) -> None:
    """F6 read a report in one go, but Ctrl+K asked about it from its summary alone ("the document
    is longer than you can read at once"): the question's room was counted with the whole reply
    room (max_tokens up to a quarter of the context), where the chat keeps such a conversation
    whole with less (``engine_api.least_answer``, ``fit_history``). One rule: the document goes
    with the question, and a question asked with it sees it (nothing left out)."""
    from workstation.core.engine_api import answer_reserve, least_answer
    from workstation.core.summarize import QUESTION_ROOM

    long_replies = dataclasses.replace(profile, sampling=dataclasses.replace(profile.sampling, max_tokens=400))
    reserve = answer_reserve(long_replies.sampling, CTX)
    options = SummarizeOptions(map_tokens=8, reduce_tokens=8)
    words = honeybee_text(8).split()
    text = ""
    for n in range(60, len(words), 10):  # the longest text that leaves the chat's least answer room beside it
        longer = " ".join(words[:n])
        chunks = make_chunks(Runner(eng, None), Document(source="x", kind="text", text=longer), CTX, 8, options)[0]
        if len(chunks) > 1 or chunks[0].prompt_tokens + 8 + QUESTION_ROOM + least_answer(reserve, CTX) > CTX:
            break
        text = longer
    result = summarize_document(eng, Document(source="report.txt", kind="text", text=text), long_replies, options=options)
    [part] = result.chunks
    written = part.metrics.predicted_n if part.metrics is not None else 0
    assert part.prompt_tokens + written + QUESTION_ROOM + reserve > CTX  # (no room by the whole reply room: the case)
    assert result.follow_up and result.intro_key == "summarize.context", (part.prompt_tokens, written)
    asked = [*({"role": m["role"], "content": m["content"]} for m in result.conversation("Asked")),
             {"role": "user", "content": "What is it about?"}]
    turn = eng.run_chat(asked, long_replies.sampling)
    assert turn.metrics.left_out_n == 0, turn.metrics  # the document stays with the question


def test_a_small_models_summary_says_what_it_names_that_the_document_does_not(tmp_path: Path) -> None:
    """The chat said "“420,000” … are not in Q3_report.txt." under a small model's reply; its
    summaries (F6, `summarize`, `batch`) said nothing of "estimated $5 million" and "$5.10" that a
    note never names, nor of "January 2027" where the report says February. The reply check's
    line, under the summary in its file (still ours, its closing line last), in the run's language."""
    from workstation.core.metrics import TurnMetrics
    from workstation.core.summary_file import whole_summary

    note = Document("note_04.txt", "text", "Client Acme Ltd paid invoice INV-1042 late.\n"
                    "Charge the 2% late fee per contract.\nSend a polite reminder for INV-1047.\n")
    made_up = ("The client Acme paid INV-1042 late, an estimated $5 million, and paid $5.10 of the 2% late fee "
               "on 3 January 2026.")
    part = [Chunk(1, 0, len(note.text), 40, 80, "line 1", made_up, TurnMetrics())]
    totals = {"calls": 1.0, "document_tokens": 40.0, "total_ms": 1500.0}
    small = ("smollm2-135m-instruct-q4_1", 135_000_000)
    text = render_markdown(note, made_up, part, False, totals, None, small)
    assert "> “$5”, “$5.10” and “3 January 2026” are not in note_04.txt.\n" in text, text
    assert text.index("are not in") > text.index(made_up) and text.rstrip().splitlines()[-1].startswith("_Read in")
    out = tmp_path / "note_04.txt.summary.md"
    out.write_text(text, encoding="utf-8")
    assert whole_summary(out, ["note_04.txt"])  # (its closing line last: a later run knows it as ours)
    turkish = render_markdown(note, made_up, part, False, totals, Texts("tr").in_app, small)
    assert "> “$5”, “$5.10” ve “3 January 2026” note_04.txt içinde yok.\n" in turkish, turkish
    # a report's February written "January 2027" (the document names no January), and "3 January 2026" of its
    # "3 February 2026" (its month was taken as any 1 in the document)
    report = Document("Q3_report.txt", "text", "Q3 2026. The office will move to 1 new accounting software on "
                      "3 February 2026.\n")
    said = "The office moves to new accounting software on 3 January 2026, in January 2027, then in January 2028."
    text = render_markdown(report, said, [dataclasses.replace(part[0], end=len(report.text), summary=said)], False,
                           totals, None, small)
    assert "> “3 January 2026”, “January 2027” and “January 2028” are not in Q3_report.txt." in text, text
    # a month the document names another way is in it ("October" of a note's "3 Oct" was said not to be)
    rent = Document("note_09.txt", "text", "Rent increase of 5% from January.\nLandlord sent the letter on 3 Oct.\n")
    said = "The rent goes up 5% from January; the landlord wrote in October."
    assert " not in " not in render_markdown(rent, said, [dataclasses.replace(part[0], summary=said)], False, totals,
                                             None, small)
    # what the document has is not said; nor anything of a model the app trusts with facts
    true = "Acme Ltd paid INV-1042 late; charge the 2% late fee."
    assert " not in " not in render_markdown(note, true, [dataclasses.replace(part[0], summary=true)], False, totals,
                                             None, small)
    assert "not in" not in render_markdown(note, made_up, part, False, totals)
