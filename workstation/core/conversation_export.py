"""A conversation as Markdown: its title, when it was made, its instructions and its
messages with their figures, in the UI's language, written to a file atomically."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workstation.core.atomic import write_named_file, write_new_file
from workstation.core.conversation_records import StoreError
from workstation.core.conversation_titles import profile_key
from workstation.core.document_changes import changes_lines, recorded_changes
from workstation.core.metrics import figures_line
from workstation.core.moments import local_text
from workstation.core.pasted_tables import as_markdown
from workstation.core.phrases import ENGLISH, Lookup, say
from workstation.core.reply_check import unchecked_phrases
from workstation.core.summary_chunks import (
    attached_named,
    facts_said,
    without_counted,
)
from workstation.core.table_facts import SheetFacts, counted_phrases, recorded_facts

if TYPE_CHECKING:
    from workstation.core.store import ConversationStore


def export_file_name(title: str) -> str:
    """The file a conversation is exported to where no name is given (F7 offers it, ``conversations
    export`` without -o writes it): its title as a file's name, ``Weekly-notes.md``."""
    slug = re.sub(r"[^\w-]+", "-", title, flags=re.UNICODE).strip("-")[:60].strip("-")
    return f"{slug or 'conversation'}.md"  # (no leading '-': a shell would read the name as an option)


EXPORT_HEAD_BYTES = 64 * 1024  # its first lines: a title and when it was written


@functools.lru_cache(maxsize=1)
def _export_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    """An export's line of when it was written, and its messages' headings, in each language."""
    from workstation.core.locales import phrase_patterns

    return (tuple(re.compile(said) for said in phrase_patterns(("export.when",))),
            tuple(re.compile("## " + said) for said in phrase_patterns(("role.user", "role.assistant"))))


def conversation_export(path: Path) -> bool:
    """Whether ``path`` is a conversation the app exported (F7, ``conversations export``): Markdown
    whose first lines are a title and when it was written ("Started …; last message …", in any
    language the app speaks), with a message's heading ("## You") after, as ``to_markdown``
    writes them. F7 offers the folder documents were opened from, and the next ``batch`` of that
    folder summarized the export as a document."""
    if path.suffix.lower() != ".md":
        return False
    try:
        with path.open("rb") as f:
            lines = f.read(EXPORT_HEAD_BYTES).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return False
    when, headings = _export_patterns()
    return (len(lines) > 3 and lines[0].startswith("# ") and not lines[1] and any(p.fullmatch(lines[2]) for p in when)
            and any(p.fullmatch(line) for line in lines[3:] for p in headings))


def _tables_as_markdown(content: str) -> str:
    """A user's message with the tables pasted in its own words as Markdown tables
    (``as_markdown``), the document attached after them as it was: the program's facts of an
    attached CSV ("invoices.csv: 5 rows under the header row, 4 columns.") were read as a
    pasted table and cut at their commas into a table of two columns."""
    found = attached_named().search(content)
    at = found.start() if found is not None else len(content)
    return as_markdown(content[:at]) + content[at:]


class MarkdownExport:
    """``to_markdown`` and ``export_markdown``. A part of ``ConversationStore``: the
    conversation and its messages (``get``) are the store's."""

    def to_markdown(self: ConversationStore, conversation_id: int, lookup: Lookup | None = None,
                    tables: list[SheetFacts] | None = None) -> str:
        """The conversation as Markdown, its words (You, Thinking, how a reply ended) in
        ``lookup``'s language (the TUI's ``texts.get``) or English, as the chat shows them. For
        a colleague (F7, ``conversations show|export``): the conversation, not the dashboard's
        figures under each reply (TTFT, tok/s, cache; the chat, F5 and ``show --json`` keep
        them); the figures the program counted for a question about a table, under its reply
        (the model's own may be wrong). An attached document's line and its tables' facts (those
        the store keeps with the message, and those of ``tables``: the TUI's ``counted_tables``)
        in ``lookup``'s language too, as the chat shows them
        (``facts_said``): the export said "## Siz" over "Document: invoices.csv" and English facts."""

        def said(key: str, **values: Any) -> str:
            return say([(key, values)], lookup)

        conv = self.get(conversation_id)
        lines = [f"# {conv.title}", ""]
        if conv.messages:  # when it was written: a colleague sent the file could not tell
            moment = (lookup("date.moment") if lookup is not None else None) or "%Y-%m-%d %H:%M"
            lines += [said("export.when", first=local_text(conv.messages[0].created, moment),
                           last=local_text(conv.messages[-1].created, moment)), ""]
        ran_on = list(dict.fromkeys(str(m.metrics["profile"]) for m in conv.messages
                                    if m.role == "assistant" and m.metrics and m.metrics.get("profile")))
        several = len(ran_on) > 1  # each reply names its profile (the header named the last one for all)
        if several:
            lines += [said("export.profiles", profiles=", ".join(f"`{profile_key(r)}`" for r in ran_on)), ""]
        elif conv.profile:
            served = list(dict.fromkeys(str(m.metrics["served_model"]) for m in conv.messages if m.role == "assistant"
                                        and m.metrics and m.metrics.get("served_model")))
            lines += [said("export.profile", profile=f"`{conv.profile}`")
                      + (said("export.served_model", model=", ".join(f"`{s}`" for s in served)) if served else ""), ""]
        if conv.instructions:  # as a quote: a heading or a list in them stays theirs
            lines += [said("export.instructions"), "", *(f"> {line}".rstrip() for line in conv.instructions.splitlines()), ""]
        for msg in conv.messages:
            role = f"role.{msg.role}"
            lines += [f"## {said(role) if role in ENGLISH else msg.role.title()}", ""]
            if msg.reasoning:  # folded, as the chat shows it (GitHub and most viewers fold <details>)
                lines += [f"<details><summary>{said('thought.saved')}</summary>", "", msg.reasoning.rstrip(), "",
                          "</details>", ""]
            m = msg.metrics or {}
            if msg.role == "assistant" and not msg.content.strip() and not msg.reasoning:
                if m.get("stop_reason") == "cancelled":  # as the chat shows it
                    lines += [said("chat.stopped_before"), ""]
                continue
            # (a document's prompt: as the chat shows it; the program's counts given to the model with a
            # question, ``with_counted``, not: they are said under the reply)
            # (a table pasted in a message: as a Markdown table, ``as_markdown``; its lines ran into one)
            content = msg.shown or (_tables_as_markdown(without_counted(msg.content)) if msg.role == "user" else msg.content)
            if msg.role == "user":  # (its facts as the store keeps them: they were English after a restart)
                content = facts_said(content, [*recorded_facts(msg.facts), *(tables or [])], lookup)
            lines += [content.rstrip(), ""]
            if m:  # the chat's line, with how it ended (cut off by an error, the key's day over)
                whose = profile_key(str(m["profile"])) if several and m.get("profile") else ""
                line = " · ".join(part for part in (whose, figures_line(m, lookup, speed=False)) if part)
                lines += ["*" + line + "*", ""] if line else []
            counted = m.get("counted")
            if isinstance(counted, list) and counted:  # the program's figures for the question, as the chat says them under it
                lines += ["*" + say(counted_phrases(counted), lookup) + "*", ""]
            comparison = recorded_changes(m.get("changes"))
            if comparison is not None:  # what changed between two versions of the document, as the chat lists it
                head, *items = [say([p], lookup) for p in changes_lines(comparison)]
                lines += ["*" + head + "*", "", *items, *([""] if items else [])]
            summarized = m.get("from_summary")
            if isinstance(summarized, str) and summarized:  # as the chat says it under the reply
                lines += ["*" + say([("chat.from_summary", {"name": summarized})], lookup) + "*", ""]
            if unchecked := unchecked_phrases(m.get("unchecked")):  # as the chat says it under the reply
                lines += ["*" + say(unchecked, lookup) + "*", ""]
        return "\n".join(lines).rstrip() + "\n"

    def export_markdown(self: ConversationStore, conversation_id: int, path: Path, lookup: Lookup | None = None,
                        tables: list[SheetFacts] | None = None) -> Path:
        """Write the conversation to ``path`` as Markdown (atomically), in ``lookup``'s
        language (``tables``: as ``to_markdown``'s); returns the path."""
        text = self.to_markdown(conversation_id, lookup, tables)
        write_named_file(path, text, StoreError)
        return path

    def export_markdown_new(self: ConversationStore, conversation_id: int, folder: Path,
                            lookup: Lookup | None = None) -> Path:
        """Write the conversation as Markdown to a new file in ``folder`` named after its title
        (``export_file_name``; a number added where one of that name is there: none is written
        over), atomically, in ``lookup``'s language; returns its path."""
        text = self.to_markdown(conversation_id, lookup)
        title = self.get(conversation_id, with_messages=False).title
        return write_new_file(folder, export_file_name(title), text, StoreError)
