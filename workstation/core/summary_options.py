"""What a summary is asked with (``SummarizeOptions``: the answer and prompt budgets, a long
table's rows) and the error a document that cannot be summarized with a profile raises
(``SummarizeError``): apart from summarize.py, so that summary_chunks, which summarize imports,
takes them at its top."""

from __future__ import annotations

from dataclasses import dataclass

from workstation.core.errors import WorkstationError


class SummarizeError(WorkstationError):
    """A document cannot be summarized with this profile (context too small, engine failed)."""


@dataclass
class SummarizeOptions:
    map_tokens: int | None = None  # answer budget per chunk (default: from profile and context)
    reduce_tokens: int | None = None  # answer budget of a reduce step
    chunk_tokens: int | None = None  # cap a chunk's text below what the context allows
    reduce_prompt_tokens: int | None = None  # cap a reduce prompt below what the context allows
    all_rows: bool = False  # a long table's every row after its facts, not its first rows only (``with_facts``)
    margin: int = 8  # tokens kept free in every prompt
