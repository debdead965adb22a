"""``workstation conversations [list|show|export|rename|delete]``: the saved conversations, the
names ``chat -c`` and ``summarize -c`` continue (the app lists the same ones). A conversation
is named by its title (the newest of a title; case aside) or by its number (#12, as ``list``
shows it): titles the app gives are a message's first words, long to type."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

from workstation.commands import (
    add_lang_arg,
    asked_yes,
    default_verb,
    print_json,
    said_in,
    text_table,
    texts_of,
)
from workstation.core.atomic import named_output
from workstation.core.conversation_records import Conversation
from workstation.core.conversation_titles import NUMBER_TITLE, clean_title
from workstation.core.errors import WorkstationError
from workstation.core.invocation import cli, shell_word
from workstation.core.kv_state import KvStateStore, conversation_tag
from workstation.core.letters import fold
from workstation.core.store import ConversationStore


class NoSuchConversation(WorkstationError):
    """A name or number that no saved conversation has."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conversations", help="the saved conversations: list, show, export, rename, delete")
    verbs = p.add_subparsers(dest="verb", metavar="list|show|export|rename|delete")
    ls = verbs.add_parser("list", help="each conversation: its number, title, messages, last use")
    ls.add_argument("--json", action="store_true", help="print them as JSON")
    ls.add_argument("-s", "--search", metavar="WORDS", default="",
                    help="only those whose title or messages hold WORDS, case aside (as the app's Ctrl+F)")
    add_lang_arg(ls)  # (it was English on a Turkish PC)
    ls.set_defaults(func=run)
    show = verbs.add_parser("show", help="a conversation as Markdown, as the app's F7 writes it")
    show.add_argument("name", metavar="NAME", help="its title, or its number (12 for #12)")
    show.add_argument("--json", action="store_true", help="its messages as JSON")
    add_lang_arg(show)  # a name no conversation has, said in it
    show.set_defaults(func=run_show)
    export = verbs.add_parser("export", help="a conversation written to a Markdown file")
    export.add_argument("name", metavar="NAME", help="its title, or its number (12 for #12)")
    export.add_argument("-o", "--output", metavar="FILE", help="the Markdown file to write (by default a new file "
                                                                  "in this folder, named after the conversation's title)")
    export.add_argument("--yes", "-y", action="store_true", help="replace FILE if it is there, without asking")
    add_lang_arg(export)  # the Markdown's words (You, Assistant) as F7 writes them, and what it says
    export.set_defaults(func=run_export)
    rename = verbs.add_parser("rename", help="give a conversation another title")
    rename.add_argument("name", metavar="NAME", help="its title, or its number (12 for #12)")
    rename.add_argument("title", metavar="TITLE", help="the new title")
    add_lang_arg(rename)
    rename.set_defaults(func=run_rename)
    delete = verbs.add_parser("delete", help="delete a conversation, with its saved KV cache")
    delete.add_argument("name", metavar="NAME", help="its title, or its number (12 for #12)")
    delete.add_argument("--yes", "-y", action="store_true", help="without asking")
    add_lang_arg(delete)
    delete.set_defaults(func=run_delete)
    default_verb(p, verbs.choices["list"])  # 'conversations' alone lists, as before


NUMBER = NUMBER_TITLE  # a conversation by its number (#12), as `list` shows it
# its number as a shell takes it too: `show #12`, pasted unquoted, was `show` and a comment ("needs NAME")
NUMBERED = re.compile(r"#?([0-9]{1,9})")


def find_conversation(store: ConversationStore, name: str) -> Conversation | None:
    """The saved conversation ``name`` names: its title (the newest of it; case aside), else,
    written 12 or #12, the one of that number (a title "12" or "#12" is its own conversation's)."""
    titles = store.list()
    title = clean_title(name)
    found = next((c for c in titles if c.title == title), None) or next(
        (c for c in titles if fold(c.title) == fold(title)), None)
    number = NUMBERED.fullmatch(name.strip())
    if found is None and number is not None:
        found = next((c for c in titles if c.id == int(number.group(1))), None)
    return found


def likely_meant(titles: list[Conversation], name: str, cutoff: float) -> Conversation | None:
    """The conversation a name no title has most likely means: the newest whose title starts
    with its words as they were written, else case and Turkish letters aside ("isik faturasi"
    is the start of "Işık faturası için hatırlatma yaz"), else the closest title at least ``cutoff`` alike (a typo),
    else the one whose first words it is a typo of ("Write a short e-mal": ``_typed_start``).
    ``conversations show`` suggested one title and ``chat -c`` another for the same words."""
    folded = fold(name.strip())
    if not folded:
        return None
    starts = [c for c in titles if re.match(re.escape(folded) + r"\b", fold(c.title))]
    if starts:  # one that starts with them as they were written first ("ışık faturası …" before "IŞIK FATURASI …")
        return min(starts, key=lambda c: not c.title.startswith(name.strip()))
    close = difflib.get_close_matches(folded, [fold(c.title) for c in titles], n=1, cutoff=cutoff)
    if close:
        return next((c for c in titles if fold(c.title) == close[0]), None)
    typo = [(alike, c) for c in titles if (alike := _typed_start(folded, fold(c.title), cutoff))]
    return max(typo, key=lambda found: found[0])[1] if typo else None  # (the closest; of those the newest)


def _typed_start(folded: str, title: str, cutoff: float) -> float:
    """How alike a folded name of two words or more is to a folded title's first as many words, where
    it is a typo of them: at least ``cutoff`` alike, and each word it has other than the title's a
    typo of that word ("write a short e-mal" of "Write a short e-mail to my colleague …"); 0 for none.
    One word other ("write a long e-mail") is another name, and a single word no start of a title's."""
    words = folded.split()
    start = title.split()[:len(words)]
    if len(words) < 2 or len(start) < len(words):
        return 0.0
    if any(difflib.SequenceMatcher(None, typed, word).ratio() < cutoff
           for typed, word in zip(words, start, strict=True) if typed != word):
        return 0.0
    alike = difflib.SequenceMatcher(None, folded, " ".join(start)).ratio()
    return alike if alike >= cutoff else 0.0


def meant_name(titles: list[Conversation], name: str, cutoff: float) -> str | None:
    """How to write the conversation a name no title has most likely means: ``likely_meant``'s
    title, quoted; None for none."""
    meant = likely_meant(titles, name, cutoff)
    return f'"{meant.title}"' if meant is not None else None


def find_saved(store: ConversationStore, name: str) -> Conversation:
    """``find_conversation``'s, or NoSuchConversation naming the one likely meant."""
    found = find_conversation(store, name)
    if found is not None:
        return found
    meant = meant_name(store.list(), name, cutoff=0.6)
    guess = [("saved.did_you_mean", {"meant": meant})] if meant is not None else []
    raise NoSuchConversation(said=[("saved.no_such", {"name": name, "command": cli("conversations")}), *guess])


def run(args: argparse.Namespace) -> int:
    search = getattr(args, "search", "") or ""
    store = ConversationStore(read_only=True)
    try:
        convs = store.list(search)
        counts = store.message_counts()
    finally:
        store.close()
    if args.json:
        print_json({"conversations": [{"id": c.id, "title": c.title, "profile": c.profile,
                                       "messages": counts.get(c.id, 0), "updated": c.updated}
                                      for c in convs]})
        return 0
    t = texts_of(args)
    follow = cli(f'chat -c {t("cli.name")} "..."')  # (NAME on a Turkish PC)
    if not convs and search.strip():  # (as the app's list says it)
        print(t("sidebar.none_found", search=search.strip()))
        return 0
    if not convs:
        print(t("conversations_cmd.none_yet", command=follow))
        return 0
    home = str(Path.home())
    rows = [[f"#{c.id}", c.title, t.number(f"{counts.get(c.id, 0):,}"), t.moment(c.updated),
             # a profile file's path with ~ for the home folder, as a shell takes it back (narrower)
             ("~" + c.profile[len(home):] if c.profile.startswith(home + "/") else c.profile) or "-"] for c in convs]
    heads = ["#", *(t(f"conversations_cmd.col.{k}") for k in ("conversation", "messages", "last", "profile"))]
    print(text_table(heads, rows, right={0, 2}))
    # a number from the list, as a shell takes it pasted ('show #N' was 'show' and a comment)
    print(t("conversations_cmd.follow", command=follow, name=t("cli.name"), show=cli(f"conversations show {convs[0].id}"),
            n=convs[0].id))
    return 0


def run_show(args: argparse.Namespace) -> int:
    store = ConversationStore(read_only=True)
    try:
        conv = store.get(find_saved(store, args.name).id)
        if args.json:
            print_json({"id": conv.id, "title": conv.title, "profile": conv.profile, "instructions": conv.instructions,
                        "messages": [{"role": m.role, "content": m.content, "reasoning": m.reasoning or None,
                                      "metrics": m.metrics, "created": m.created, "facts": m.facts}
                                     for m in conv.messages]})  # (facts: the program's counts of an attached table)
        else:
            sys.stdout.write(store.to_markdown(conv.id, texts_of(args).get))  # as F7 writes it, in its language
    finally:
        store.close()
    return 0


def run_export(args: argparse.Namespace) -> int:
    t = texts_of(args)
    store = ConversationStore()
    try:
        conv = find_saved(store, args.name)
        if args.output is None:  # a new file here, named after its title ("needs -o/--output")
            out = store.export_markdown_new(conv.id, Path.cwd(), t.get)
            print(t("conversations_cmd.exported", title=conv.title, path=str(out.resolve())), file=sys.stderr)
            return 0
        out = named_output(args.output)
        from workstation.tui.documents_of import is_document_of

        if is_document_of(out, store, conv.id):  # (--yes wrote the conversation over it)
            raise WorkstationError(t("conversations_cmd.export_is_document", path=str(out)))
        if out.exists() and not args.yes and not asked_yes(
                t("conversations_cmd.export_replace_q", path=str(out), title=conv.title),
                t("conversations_cmd.export_there", path=str(out)), t):
            print(t("conversations_cmd.nothing_written"), file=sys.stderr)
            return 1
        store.export_markdown(conv.id, out, t.get)  # (F7's words, in its language)
    finally:
        store.close()
    print(t("conversations_cmd.exported", title=conv.title, path=str(out.resolve())), file=sys.stderr)
    return 0


def run_rename(args: argparse.Namespace) -> int:
    store = ConversationStore()
    try:
        conv = find_saved(store, args.name)
        store.rename(conv.id, args.title)
        title = store.get(conv.id, with_messages=False).title
    finally:
        store.close()
    print(texts_of(args)("conversations_cmd.renamed", old=conv.title, new=title,
                         command=cli("chat -c " + shell_word(title))))
    return 0


def run_delete(args: argparse.Namespace) -> int:
    from workstation.core.kept_summary import forget_summary_asked_in

    t = texts_of(args)
    store = ConversationStore()
    try:
        conv = find_saved(store, args.name)
        n = len(store.messages(conv.id))
        asked = t("conversations_cmd.delete_q_one" if n == 1 else "conversations_cmd.delete_q", title=conv.title, n=n)
        if not args.yes and not asked_yes(asked, t("conversations_cmd.delete_unasked", question=asked), t):
            print(t("commands.kept"), file=sys.stderr)
            return 1
        tag = conversation_tag(store.identity, conv.id, conv.created)
        stuck = store.delete(conv.id)
        forget_summary_asked_in(store, conv.id)  # a summary the app kept, asked about in it, goes too (as F8)
    finally:
        store.close()
    try:  # its KV cells saved on disk hold its text: they go with it (as F8's)
        KvStateStore().forget(tag)
    except (OSError, WorkstationError) as err:
        print(t("conversations_cmd.cache_kept", error=said_in(err, args), command=cli("cache clear")), file=sys.stderr)
    for kept_copy in stuck:  # (as F8 says it)
        print(f"workstation: {t('conv.copy_kept', path=str(kept_copy))}", file=sys.stderr)
    print(t("conversations_cmd.deleted", title=conv.title))
    return 0
