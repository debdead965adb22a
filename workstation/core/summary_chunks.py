"""A document's text as a summary reads it, cut into parts (``Chunk``) whose prompts fit the
context: a table's facts before its rows (``with_facts``), special-token strings broken up
(``neutralize``), and contiguous spans cut at paragraph, line, sentence, then word boundaries
(``split_spans``), measured with the engine's own tokenizer and chat template (``make_chunks``).
Every part is asked with the same instruction before its text, so the parts' prompts share
their first tokens and the engine's KV prefix reuse serves them (``_shared_prefix``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from workstation.core.documents import Document, Section
from workstation.core.events import Message
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import ENGLISH, Lookup, say
from workstation.core.summary_options import SummarizeError, SummarizeOptions
from workstation.core.table_facts import SheetFacts


class PromptMeasure(Protocol):
    """What cutting a document into parts asks of the engine (summarize's runner): a prompt's
    length in tokens, and its token ids where the engine has them locally (else None)."""

    def count(self, messages: list[Message]) -> int: ...

    def tokens(self, messages: list[Message]) -> list[int] | None: ...

MAP_INSTRUCTION = (
    "Summarize the following part of a document in two or three short sentences. "
    "Say what it is about and keep the important names and numbers. Write in the language "
    "of the text.\n\nTEXT:\n"
)
MAP_SUFFIX = "\n\nEND OF TEXT. Write the summary of this text."
# a table's (a workbook's sheets, a CSV file): its facts counted by the program come first in its
# text (``with_facts``), and the model is told to take its figures from them: given the rows
# alone, SmolLM2 wrote totals and growth that were nowhere in the workbook
MAP_FACTS_INSTRUCTION = (
    "Summarize the following part of a spreadsheet in two or three short sentences. Say what its "
    "rows are about. The lines under 'Facts counted by the program' were counted exactly from every "
    "row: for totals, counts, averages and dates use only the figures written there, exactly as "
    "written, and do not work out or guess any other figure (no percentages, growth or trends "
    "that are not written there). Write in the language of the text.\n\nTEXT:\n"
)
FACTS_LABEL = say([("facts.label", {})])  # (the model's words: English, as MAP_FACTS_INSTRUCTION names it)


# the kinds whose tables are whole sections (a CSV file, a workbook's sheets); another's (a Word
# document's) sit among its paragraphs
TABLE_KINDS = ("text", "xlsx", "ods")
FACT_ROWS = 100  # a table of more rows is summarized from its facts and its first SAMPLE_ROWS rows
SAMPLE_ROWS = 10  # (enough for the model to see what a row holds; its figures come from the facts)


def map_instruction(document: Document) -> str:
    """The instruction a part of ``document`` is summarized with: a table's tells the model to
    take its figures from the facts the program counted (a Word document's tables' facts are read
    beside its words, summarized as a document's)."""
    return MAP_FACTS_INSTRUCTION if document.facts and document.kind in TABLE_KINDS else MAP_INSTRUCTION


def with_facts(document: Document, all_rows: bool = False) -> Document:
    """``document`` as a summary reads it: each table's facts (``Document.facts``) before its rows,
    and of a table longer than FACT_ROWS rows only the first SAMPLE_ROWS, a line saying the rest
    are left out (3,000 invoice rows were 33 parts, about an hour on a 2-core CPU, and the model's figures were made
    up; the facts are a few hundred tokens and true). ``all_rows``: every row after the facts."""
    from workstation.core.table_facts import as_written, facts_text

    if not document.facts:
        return document
    by_section: dict[int, list[SheetFacts]] = {}
    for f in document.facts:
        by_section.setdefault(f.section, []).append(f)
    parts: list[str] = []
    sections: list[Section] = []
    at = 0  # in the old text
    length = 0
    for i, sec in enumerate(document.sections):
        gap = document.text[at:sec.start]
        parts.append(gap)
        length += len(gap)
        body = document.text[sec.start:sec.end]
        found = by_section.get(i, [])
        lines = body.split("\n")
        if found and FACTS_LABEL not in lines[:2] and document.kind not in TABLE_KINDS:
            # a Word or OpenDocument text's tables among its paragraphs: their facts after the section's
            # heading, its lines as they are (a table of a few rows in a letter, not a sheet's thousands)
            head = [lines.pop(0)] if sec.title and lines and lines[0] == sec.title else []
            said = [line for f in found for line in facts_text(f, as_written(f))]
            body = "\n".join([*head, FACTS_LABEL, *said, "", *lines])
        elif found and FACTS_LABEL not in lines[:2]:  # (not twice: a document given as summarize read it)
            facts = found[0]
            sheet = document.kind != "text"
            if not sheet:  # a CSV's rows: a quoted cell's line breaks in its row, blank lines none (a table of
                lines = _csv_records(lines, document.name)  # 60 rows of two-line notes was cut to its first 5, "rows 11 to 121")
            head = [lines.pop(0)] if sec.title and lines and lines[0] == sec.title else []
            columns = [lines.pop(0) for _ in range(facts.above + facts.header) if lines]  # (a title above it)
            tail = [lines.pop()] if sheet and lines and lines[-1].startswith("[") else []  # (a sheet read in part says so)
            if not all_rows and len(lines) > FACT_ROWS:
                left_out = say([("facts.rows_left_out", {"a": f"{SAMPLE_ROWS + 1:,}", "b": f"{len(lines):,}"})],
                               as_written(facts))
                lines = [*lines[:SAMPLE_ROWS], left_out]
            # (its figures as its rows write them: 45.600,50 beside 45.600,50)
            body = "\n".join([*head, FACTS_LABEL, *facts_text(facts, as_written(facts)), "", *columns, *lines, *tail])
        sections.append(dataclasses.replace(sec, start=length, end=length + len(body)))
        parts.append(body)
        length += len(body)
        at = sec.end
    parts.append(document.text[at:])
    return dataclasses.replace(document, text="".join(parts), sections=sections)


def with_counted(text: str, tables: list[SheetFacts], items: list[dict[str, Any]]) -> str:
    """``text`` (a document as ``with_facts`` gave it) with the counts of the rows a question named
    (``counted_answer``'s "where" items: "unpaid invoices over 1,000") after their table's facts,
    for the model: given the facts of all rows only, it took their total for the unpaid ones'.
    Those of an earlier question (a message put back by Up) go (``without_counted``)."""
    from workstation.core.table_facts import question_lines

    lines = without_counted(text).split("\n")
    for facts in tables:
        said = question_lines(facts, items)
        inside, head = False, None  # (in a block of facts: from its label to the blank line after it)
        for i, line in enumerate(lines if said else []):
            inside = line == FACTS_LABEL or inside and line != ""
            if inside and line.startswith(f"{facts.title}: "):
                head = i
                break
        if head is None:
            continue
        end = head + 1
        while end < len(lines) and lines[end].startswith("- "):  # (its columns' lines)
            end += 1
        lines[end:end] = said
    return "\n".join(lines)


ATTACHED_SEPARATOR = "\n\n---\n"  # between a message's words and the line that names its document


@cache
def attached_named() -> re.Pattern[str]:
    """The rule and the line that name a document attached to a message, in every language the
    app speaks ("Document: lease.txt", ``tui/attachment.with_attached``): where the user's own
    words end."""
    from workstation.core.locales import locale_languages, locale_texts

    labels = []
    for lang in locale_languages():  # (English's is a core phrase: en.yaml has none)
        head, _, tail = (locale_texts(lang).get("chat.document") or ENGLISH["chat.document"]).partition("{name}")
        labels.append(rf"{re.escape(head)}(?P<name{len(labels)}>[^\n]+?){re.escape(tail)}")
    return re.compile(rf"(?:\A---\n|{re.escape(ATTACHED_SEPARATOR)})(?:{'|'.join(labels)})\n\n")


def without_counted(text: str) -> str:
    """``text`` without the lines ``with_counted`` put in it, nor the changes from an earlier
    version put after it (``document_changes.for_the_model``): the document as it was attached."""
    from workstation.core.document_changes import without_changes

    text = without_changes(text)
    mark = say([("facts.for_question", {"item": "\0"})]).partition("\0")[0]
    if mark not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not line.startswith(mark))


def attached_said(text: str, lookup: Lookup | None) -> str:
    """``text`` with the line that names its attached document (``attached_named``: "Document:
    x", stored in the language the UI spoke when it was sent) said in ``lookup``'s language; a
    message shown folded, ending at that line, too. What is stored and sent stays as it was."""
    whole = text + "\n\n"  # (a folded message's question ends at the name)
    found = attached_named().search(whole)
    if found is None:
        return text
    name = next(v for v in found.groupdict().values() if v is not None)
    rule = found.group(0)[: found.group(0).index("---\n") + len("---\n")]
    line = f"{rule}{say([('chat.document', {'name': name})], lookup)}\n\n"
    return f"{whole[:found.start()]}{line}{whole[found.end():]}"[:-2]


def facts_said(text: str, tables: list[SheetFacts], lookup: Lookup | None) -> str:
    """``text`` (a document as ``with_facts`` gave it, for the model: English) with the facts of
    ``tables`` in it said in ``lookup``'s language, for the user to read: a Turkish screen showed an
    attached document's "Facts counted by the program from every row:" and "Table 1: 6 rows ...".
    A block of facts not of ``tables`` (not counted in this run of the app) stays as it is. The line
    naming the document too (``attached_said``): the chat and F7's export say the whole block alike."""
    from workstation.core.table_facts import as_written, facts_text

    text = attached_said(text, lookup)
    if FACTS_LABEL not in text:
        return text
    lines = text.split("\n")
    said: set[int] = set()  # where a table's facts were said again
    for facts in tables:
        written = facts_text(facts, as_written(facts))
        at = next((i for i in range(len(lines) - len(written) + 1) if lines[i:i + len(written)] == written
                   and i not in said), None)
        if at is not None:
            lines[at:at + len(written)] = facts_text(facts, lookup)
            said.add(at)
    label = say([("facts.label", {})], lookup)
    return "\n".join(label if line == FACTS_LABEL and i + 1 in said else line for i, line in enumerate(lines))


def facts_length(text: str) -> int:
    """The characters of the facts ``with_facts`` put in ``text`` (each block: its label, its lines,
    the blank line after): a document's own size is its text's less these (a CSV of 80 bytes was
    said "423 characters" when attached, the program's facts counted as the file's)."""
    return min(sum(len(line) + 1 for line, facts in _lines_facts(text) if facts), len(text))


def own_text(text: str) -> str:
    """``text`` without the facts ``with_facts`` put in it: the document's own (its words counted)."""
    return "\n".join(line for line, facts in _lines_facts(text) if not facts)


def _lines_facts(text: str) -> Iterator[tuple[str, bool]]:
    """Each line of ``text``, and whether it is of a block of facts (its label, its lines, the blank line after)."""
    inside = False
    for line in text.split("\n"):
        inside = inside or line == FACTS_LABEL
        yield line, inside
        if inside:
            inside = line != ""


def _csv_records(lines: list[str], name: str) -> list[str]:
    """A CSV's lines as its rows, as the csv module reads them (``documents.csv_delimiter``): a
    quoted cell's line breaks in its row; blank lines, which are no rows, left out."""
    import csv

    from workstation.core.documents import csv_delimiter

    columns = next((line for line in lines if line.strip()), "")
    reader = csv.reader(iter(lines), delimiter=csv_delimiter(name, columns))
    records: list[str] = []
    at = 0
    try:
        for _ in reader:
            record = "\n".join(lines[at:reader.line_num])
            at = reader.line_num
            if record.strip():
                records.append(record)
    except csv.Error:  # (not read as a table: table_facts gave it no facts)
        return lines
    return records


@dataclass
class Chunk:
    index: int  # 1-based
    start: int  # character span in Document.text
    end: int
    tokens: int  # tokens of the chunk text as sent
    prompt_tokens: int  # the whole prompt (template + instruction + chunk)
    cite: str  # "pp. 3–4", "§ Methods", "lines 10–80"
    summary: str | None = None
    metrics: TurnMetrics | None = None
    reply: str = ""  # the model's reply as generated (``summary`` is it cleaned up)
    lead: str = ""  # read before the chunk's text (``Section.lead``: a sheet's name and columns), counted in ``tokens``

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in dataclasses.asdict(self).items() if k != "metrics"}
        data["metrics"] = self.metrics.to_dict() if self.metrics else None
        return data


# --- text preparation ----------------------------------------------------------------------
_SPECIAL = re.compile(
    r"<\|[^<>|\s]{0,40}\|>|</?(?:s|bos|eos|unk|pad|start_of_turn|end_of_turn|start_of_image)>|\[/?INST\]"
)


def neutralize(text: str) -> str:
    """Break up special-token strings a document may contain, so they stay plain text."""
    return _SPECIAL.sub(lambda m: m.group(0)[0] + "\u200b" + m.group(0)[1:], text)


_BOUNDARIES = (
    re.compile(r"\n\s*\n"),  # paragraphs
    re.compile(r"\n"),  # lines
    re.compile(r"(?<=[.!?;:])\s+"),  # sentences
    re.compile(r"\s+"),  # words
)


def split_spans(text: str, start: int, end: int, max_chars: int, level: int = 0) -> list[tuple[int, int]]:
    """Contiguous spans covering [start, end), each at most ``max_chars`` long where possible,
    cut at the coarsest boundary that works (paragraph, line, sentence, word, character)."""
    if end - start <= max_chars:
        return [(start, end)]
    if level >= len(_BOUNDARIES):
        return [(i, min(i + max_chars, end)) for i in range(start, end, max_chars)]
    cuts = [m.end() for m in _BOUNDARIES[level].finditer(text, start, end) if start < m.end() < end]
    spans: list[tuple[int, int]] = []
    prev = start
    for cut in [*cuts, end]:
        spans.append((prev, cut))
        prev = cut
    out: list[tuple[int, int]] = []
    for a, b in spans:
        out.extend(split_spans(text, a, b, max_chars, level + 1))
    return out


def prompt_messages(instruction: str, body: str, suffix: str) -> list[Message]:
    """A summary's prompt (a part's, a reduce step's, a whole document's): one user message of the
    instruction, the text and what follows it."""
    return [{"role": "user", "content": instruction + body + suffix}]


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# --- chunking -------------------------------------------------------------------------------
def prompt_room(n_ctx: int, answer: int, options: SummarizeOptions, most: int = 0) -> int:
    """The most tokens a summary's prompt may have: the context less the answer and the margin,
    and no more than ``most`` (a server's ``--max-prompt-tokens``, its ``/models`` meta; 0: none)
    less the margin. A desk PC cut a document by its context alone, and a server started with a
    lower limit refused every part ("the server reads at most 800 tokens a request")."""
    room = n_ctx - answer - options.margin
    return min(room, most - options.margin) if most > 0 else room


def make_chunks(
    runner: PromptMeasure, document: Document, n_ctx: int, answer: int, options: SummarizeOptions, most: int = 0
) -> tuple[list[Chunk], int, int]:
    """(chunks, prefix_tokens, chunk_budget): contiguous chunks whose prompts fit the context and
    ``most``, the prompt tokens the engine reads a request where fewer (``prompt_limit``)."""
    instruction = map_instruction(document)
    empty_messages = prompt_messages(instruction, "", MAP_SUFFIX)
    overhead = runner.count(empty_messages)
    prompt_limit = prompt_room(n_ctx, answer, options, most)
    budget = prompt_limit - overhead
    if options.chunk_tokens:
        budget = min(budget, options.chunk_tokens)
    if budget < 32:
        raise SummarizeError(
            f"The context of {n_ctx} tokens is too small to summarize with a {answer}-token answer; "
            "use a profile with a larger context."
        )
    text = document.text
    # characters per token, measured on a sample of this document
    sample = neutralize(text[:8000])
    sample_tokens = runner.count(prompt_messages(instruction, sample, MAP_SUFFIX)) - overhead
    ratio = max(0.5, len(sample) / max(1, sample_tokens))
    piece_chars = max(16, int(budget * ratio * 0.5))
    pieces = split_spans(text, 0, len(text), piece_chars)

    cut = _PartCutter(runner, document, instruction, budget, prompt_limit, overhead, ratio)
    chunks = cut.parts(pieces, budget)
    if len(chunks) > 1 and chunks[-1].tokens < budget * TAIL_SHARE and not runner.cancelled():
        chunks = cut.without_small_tail(pieces, chunks)
    return chunks, _shared_prefix(runner, text, chunks, empty_messages, instruction), budget


# a last part under this share of a part's room was a line or two read alone ("part 3 (line 69)"):
# a model call of its own, and a point made up for it; it joins the part before, or the parts are
# cut evenly (``_PartCutter.without_small_tail``)
TAIL_SHARE = 0.25


@dataclass
class _PartCutter:
    """Cuts a document's pieces into parts whose prompts fit ``budget`` and ``prompt_limit``."""

    runner: PromptMeasure
    document: Document
    instruction: str
    budget: int
    prompt_limit: int
    overhead: int
    ratio: float

    def measure(self, lead: str, start: int, end: int) -> int:
        """The prompt's tokens of a part of the text from ``start`` to ``end`` read after ``lead``."""
        body = lead + neutralize(self.document.text[start:end])
        return self.runner.count(prompt_messages(self.instruction, body, MAP_SUFFIX))

    def fits(self, n_prompt: int) -> bool:
        return n_prompt <= self.prompt_limit and n_prompt - self.overhead <= self.budget

    def without_small_tail(self, pieces: list[tuple[int, int]], chunks: list[Chunk]) -> list[Chunk]:
        """``chunks`` whose last part is small (under TAIL_SHARE of a part): that part joined to
        the one before where their prompt fits with the margin; else the parts cut again to even
        sizes (their number kept), as far as the pieces allow; else ``chunks`` as they were."""
        before, tail = chunks[-2], chunks[-1]
        n_prompt = self.measure(before.lead, before.start, tail.end)
        if self.fits(n_prompt):
            joined = dataclasses.replace(before, end=tail.end, tokens=n_prompt - self.overhead, prompt_tokens=n_prompt,
                                         cite=self.document.cite(before.start, tail.end))
            return [*chunks[:-2], joined]
        even = sum(c.tokens for c in chunks) / len(chunks)
        for slack in (1.05, 1.15, 1.3, 1.5):
            fill = min(self.budget, int(even * slack))
            evened = self.parts(list(pieces), fill)
            if len(evened) == len(chunks) and (len(evened) < 2 or evened[-1].tokens > tail.tokens):
                return evened
            if self.runner.cancelled():
                break
        return chunks

    def parts(self, pieces: list[tuple[int, int]], fill: int) -> list[Chunk]:
        """The parts of ``pieces`` (split finer where one alone does not fit), each filled up to
        ``fill`` tokens (at most ``budget``)."""
        runner, document, instruction, text = self.runner, self.document, self.instruction, self.document.text
        budget, prompt_limit, overhead, ratio = self.budget, self.prompt_limit, self.overhead, self.ratio
        pieces = list(pieces)
        chunks: list[Chunk] = []
        i = 0
        while i < len(pieces):
            if chunks and runner.cancelled():  # (Ctrl-C while a long document is measured: stops there, nothing run)
                break
            lead = _lead(document, pieces[i][0])
            if len(lead) > budget * ratio * 0.25:  # (a sheet's row wider than a quarter of a part: not said again)
                lead = ""
            target = fill * ratio * 0.95 - len(lead)
            j, chars = i + 1, pieces[i][1] - pieces[i][0]
            while j < len(pieces) and chars + (pieces[j][1] - pieces[j][0]) <= target:
                chars += pieces[j][1] - pieces[j][0]
                j += 1
            grow = True  # once a chunk had to shrink it never grows again (no oscillation)
            while True:
                body = lead + neutralize(text[pieces[i][0] : pieces[j - 1][1]])
                n_prompt = runner.count(prompt_messages(instruction, body, MAP_SUFFIX))
                if n_prompt <= prompt_limit and n_prompt - overhead <= budget:
                    # room left: try the pieces that fit in it as measured, at least one (one at a
                    # time, a text with no line breaks, cut into words, was measured again for each
                    # word: 909 counts and 13 s for 140,000 characters, against 27 with paragraphs)
                    room = fill * 0.98 - (n_prompt - overhead)
                    if grow and j < len(pieces) and (pieces[j][1] - pieces[j][0]) / ratio <= room:
                        chars, j = pieces[j][1] - pieces[j][0], j + 1
                        while j < len(pieces) and (chars + pieces[j][1] - pieces[j][0]) / ratio <= room * 0.9:
                            chars += pieces[j][1] - pieces[j][0]
                            j += 1
                        continue
                    break
                grow = False
                if j - i > 1:
                    over = n_prompt - overhead - budget
                    # by the part's own characters a token, not the document's sample's: a line of
                    # a token a character (digits, a code) after paragraphs of 3.7 dropped them all
                    # but the first, and each paragraph before it was a part of its own (20 parts)
                    drop_chars = max(1.0, over * (pieces[j - 1][1] - pieces[i][0]) / max(1, n_prompt - overhead))
                    while j - i > 1 and drop_chars > 0:
                        j -= 1
                        drop_chars -= pieces[j][1] - pieces[j][0]
                elif lead and pieces[i][1] - pieces[i][0] <= 1:  # not even a character fits after the lead: without it
                    lead = ""
                else:  # one piece too big for the context: split it finer
                    a, b = pieces[i]
                    half = max(1, (b - a) // 2)
                    sub = split_spans(text, a, b, half)
                    if len(sub) < 2:
                        sub = [(a, a + half), (a + half, b)]
                    pieces[i : i + 1] = sub
                    j = i + 1
            start, end = pieces[i][0], pieces[j - 1][1]
            chunks.append(
                Chunk(
                    index=len(chunks) + 1,
                    start=start,
                    end=end,
                    tokens=n_prompt - overhead,
                    prompt_tokens=n_prompt,
                    cite=document.cite(start, end),
                    lead=lead,
                )
            )
            i = j
        return chunks


def _shared_prefix(runner: PromptMeasure, text: str, chunks: list[Chunk], empty: list[Message], instruction: str) -> int:
    """Prompt tokens every chunk's prompt starts with (0 where the engine cannot tell)."""
    first = runner.tokens(empty if len(chunks) == 1 else chunk_messages(text, chunks[0], instruction))
    if first is None:
        return 0
    prefix = len(first)
    for chunk in chunks[1:]:  # the body's first token may merge with the instruction's last
        prefix = min(prefix, _common_prefix(first, runner.tokens(chunk_messages(text, chunk, instruction)) or []))
    return prefix


def _lead(document: Document, start: int) -> str:
    """What a chunk beginning at ``start`` is read after: the ``lead`` of the section it begins
    inside of (a workbook's rows after the first part were numbers without their columns'
    names, and the model made up what they were), nothing at a section's start (it says it)."""
    for s in document.sections:
        if s.start < start < s.end and s.lead:
            return neutralize(s.lead) + "\n"
    return ""


def chunk_messages(text: str, chunk: Chunk, instruction: str = MAP_INSTRUCTION) -> list[Message]:
    """The prompt that asks for a part's summary: its lead (where in the document it is) and its text."""
    return prompt_messages(instruction, chunk.lead + neutralize(text[chunk.start : chunk.end]), MAP_SUFFIX)
