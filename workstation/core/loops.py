"""A reply that goes round in circles: small models write the same sentence or list item again
and again until their token limit (SmolLM2 135M did on most Turkish questions: 1,024 tokens,
about 40 s on a 2-core PC). One rule, used while a chat reply streams (``LoopWatch``: the
scheduler stops it there) and on a finished summary (``cut_loop``).

The rule: a stretch of words written again at once, its first copy followed by at least
``times - 1`` more copies' worth of the same words, each worth at least ``LOOP_WORDS`` words (a
one-word stretch "ok" needs ``(times - 1) * LOOP_WORDS`` more). Words are compared without case,
and a numbered list's marks alike ("1. Elma … 2. Armut … 3. Elma …" went round to the token limit).
A longer stretch (``NUMBER_WORDS`` words or more, with ``NUMBER_KINDS`` different words without a
digit in it) is compared with its numbers alike too: a paragraph written again and again under
"06_summer.txt", "07_summer.txt" …, invented invoices "F-011 … F-012 …" or "Day 3: … Day 4: …" with
the same words; a list that counts ("1\n2\n3", "Room 101: free", "2 x 3 = 6") has too few words
for it, and two copies of it are two things said ("Sales were 1.2 million TL in 2023 …", "… in 2024"):
it takes three, even in a summary.
A phrase that comes back later ("in the first quarter of the year" in three points of a list)
is not a loop; neither is anything in a fenced code block, a table's row (a line with ``|``) or
a form's line of blanks ("Name: ____", "İmza: ......"; a lone "-" is a bullet or "9:00 - 10:00"), where the same line again is normal: the
watch starts afresh after them; nor a reply to a message that asks for copies (``watched``)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from workstation.core.summary_chunks import attached_named

LOOP_WORDS = 8  # a run of this many words written again right after itself: the model is going round in circles
MOST_PERIOD = 256  # the longest stretch looked for, in words (a paragraph written again)
NUMBER_WORDS = 12  # a stretch whose copies differ only in their numbers: at least this many words long
NUMBER_KINDS = 5  # and this many different words without a digit in it (not a list that counts: "Room 101: free")
CHAT_TIMES = 3  # a chat reply: the stretch and two more copies' worth (a summary's cut: the stretch and one)

SENTENCE_ENDS = frozenset(".!?…\"'»”’)]。！？")  # (a summary's and a loop's cut:) a text that ends in one of these was not cut mid-sentence
_FULL_STOPS = frozenset(".!?…。！？")  # of those, the ones that end a sentence where a quote or a bracket closes after them
# a numbered list's items that go round count up: "3." and "4." at a line's start alike ("1. 1\n2. 2\n…",
# counting to 10, is no loop: only the marks are)
_LIST_NUMBER = re.compile(r"\d{1,4}[.)]")
_WORD = re.compile(r"\S+")
_DIGITS = re.compile(r"\d+")
_FENCE = ("```", "~~~")
# a form's blanks ("Name: ____ Signature: ____", "Ad Soyad: .......", a dashed rule "- - -"): a line
# of them written again is a sign-in sheet, not a loop
_BLANK = re.compile(r"[_.\-–—…·]+")
# a question that asks for copies ("write it 10 times", "10 kez yaz", "beş kere"): its reply repeats
_NUMBERS = {w: n for n, words in enumerate(("", "one bir", "two iki", "three üç", "four dört", "five beş", "six altı",
                                             "seven yedi", "eight sekiz", "nine dokuz", "ten on"))
            for w in words.split()} | {"twenty": 20, "yirmi": 20}
_SAID_NUMBER = r"(\d{1,4}|" + "|".join(_NUMBERS) + r")"
_COPIES = re.compile(r"\b" + _SAID_NUMBER + r"\s*(?:times|copies|kez|kere|defa|sefer|kopya|lines|rows|"
                     r"items|entries|satır|madde)\b", re.IGNORECASE)
# things counted out ("these 3 invoices", "all five customers", "şu 3 fatura için", "bu üç mektup"): a reply
# for each, alike but for their names and numbers ("1,200" or "2024 report" is no count: three digits at most)
_THESE = re.compile(r"\b(?:these|those|all|şu|bu|tüm|bütün)\s+(\d{1,3}|" + "|".join(_NUMBERS)
                    + r")\s+[^\W\d_]", re.IGNORECASE)
# a list the message names ("for each of invoices F-011, F-012 and F-013", "F-011, F-012 ve F-013 için"): its
# items, each of them a reply's part; the items "each of" lists, and any list of two or more with a number in each
_LIST_JOIN = r"(?:\s*[,;]\s+(?:(?:and|or|ve|veya|ya da)\s+)?|\s+(?:and|or|ve|veya|ya da|&)\s+)"
_EACH_OF = re.compile(r"\b(?:each|every one|all)\s+of\s+([^.?!:\n]+)", re.IGNORECASE)
_ITEM = r"[^\s,;]*\d(?:[,.]\d|[^\s,;])*"  # (a word with a number in it: "F-011", "1,200")
_NUMBERED_LIST = re.compile(_ITEM + "(?:" + _LIST_JOIN + _ITEM + ")+", re.IGNORECASE)
# a line asked for each day ("office hours for every day of January", "a line for each day", "her gün için", "her
# günü için bir satır"): lines alike but for their dates, as many as a month has. Not the bare phrase: "I get 40
# e-mails every day" and "Her gün gelen bu raporu özetle" ask for one reply
_EACH_DAY = re.compile(r"\b(?:for|on|per)\s+(?:each|every)\s+(?:single\s+)?(?:day|date)\b"
                       r"|\b(?:each|every)\s+(?:single\s+)?(?:day|date)\s+(?:of|in|from)\b"
                       r"|\bher\s+gün(?:ü|e)?\s+için\b|\bher\s+güne\b", re.IGNORECASE)
MONTH_DAYS = 31


def _said(number: str) -> int:
    said = number.casefold()
    return int(said) if said.isdigit() else _NUMBERS.get(said, 0)


def _items(listed: str) -> int:
    """The items in "F-011, F-012 and F-013" (3)."""
    return len([item for item in re.split(_LIST_JOIN, listed, flags=re.IGNORECASE) if item.strip()])


def copies_asked(text: str) -> int:
    """The copies a message asks for ("write 'ok' 20 times", "10 kez yaz", "beş kere", "20 lines", a line
    for every day: a month's); 0: none. Copies word for word: that many allowed before the loop stop."""
    counts = [_said(m.group(1)) for m in _COPIES.finditer(text)]
    if _EACH_DAY.search(text):
        counts.append(MONTH_DAYS)
    return max(counts, default=0)


def items_asked(text: str) -> int:
    """The things a message counts out or lists, a part of the reply each ("a reminder for each of
    invoices F-011, F-012 and F-013", "these 3 invoices", "şu 3 fatura"): as many copies alike but for
    their names and numbers allowed (``LoopWatch``'s numbers-changed rule), never copies word for word
    ("Explain the 100 year flood", "Compare 2023 and 2024" let a sentence go round 60 times: review31);
    at most ``MONTH_DAYS``; 0: none."""
    counts = [_said(m.group(1)) for m in _THESE.finditer(text)]
    counts += [_items(m.group(1)) for m in _EACH_OF.finditer(text)]
    counts += [_items(m.group()) for m in _NUMBERED_LIST.finditer(text)]
    return min(max(counts, default=0), MONTH_DAYS)


def question_part(content: str) -> str:
    """A message's own words: without the document attached to it (``tui/attachment.with_attached``), whose
    text may hold hundreds of numbers and lists that no one asked a copy for."""
    found = attached_named().search(content)
    return content if found is None else content[:found.start()]


def watched(messages: list[Any], sampling: Any) -> Any:
    """``sampling`` for a reply to ``messages``: the copies its last message asks for allowed before
    the loop stop ("Write I will not talk in class 10 times" was cut to one line: review29), and the
    things it lists (three reminders for the invoices it listed were cut to one: loopstop3). What is
    already decided is kept where it is more (serve's own ``watched`` of a desk PC's request)."""
    last = messages[-1] if messages else None
    asked = last.get("content") if isinstance(last, dict) and last.get("role") == "user" else None
    question = question_part(asked) if isinstance(asked, str) else ""
    copies, items = copies_asked(question), items_asked(question)
    if not hasattr(sampling, "loop_copies"):
        return sampling
    copies, items = max(copies, sampling.loop_copies or 0), max(items, sampling.loop_items or 0)
    if (copies, items) == (sampling.loop_copies, sampling.loop_items):
        return sampling
    return dataclasses.replace(sampling, loop_copies=copies, loop_items=items)


def chat_times(sampling: Any) -> int:
    """The copies of a stretch that stop a reply: ``CHAT_TIMES``, or one more than it asked for."""
    return max(CHAT_TIMES, int(getattr(sampling, "loop_copies", 0) or 0) + 1)


def loop_watch(sampling: Any) -> LoopWatch:
    """The watch of a chat reply under ``sampling`` (``watched``'s copies and things asked for)."""
    return LoopWatch(chat_times(sampling), items=int(getattr(sampling, "loop_items", 0) or 0))


class LoopWatch:
    """Feed it a reply's text as it streams; ``push`` returns where to cut it (a character
    offset: the end of the looping stretch's first copy; of a stretch repeated with its numbers changed,
    of the copies asked for, ``times`` more than ``CHAT_TIMES``) once it repeats, else None."""

    def __init__(self, times: int = CHAT_TIMES, least: int = LOOP_WORDS, items: int = 0) -> None:
        self.times, self.least = times, least
        # the copies kept of a loop whose numbers change: those asked for ("these 3 invoices": three reminders,
        # then a fourth, F-014, cut; ``items``), else the first; a copy word for word says nothing new: the
        # first kept ("Write ok five times" went round on "Ok, five times:")
        self.kept = items or (times - 1 if times > CHAT_TIMES else 1)
        self.number_times = max(times, CHAT_TIMES, items + 1)  # (copies of one whose numbers change that stop it)
        self.text = ""
        self._done = 0  # offset up to which words were read (a word is read once blank space follows it)
        self._words: list[str] = []  # the words since the watch last started afresh, folded
        self._starts: list[int] = []  # each one's offset in ``text``
        self._ends: list[int] = []  # and where each ends
        self._runs: dict[int, int] = {}  # period (in words) -> words so far that equal the word that far back
        self._plain: list[str] = []  # the words with each run of digits as "#" ("f-011" and "f-012": "f-#")
        self._number_runs: dict[int, int] = {}  # period -> words so far that equal that far back, so compared
        self._in_code = False
        self._in_table = False
        self._lone_before = False  # the word before on this line was a lone dash or dot

    def push(self, text: str) -> int | None:
        self.text += text
        for m in _WORD.finditer(self.text, self._done):
            if m.end() == len(self.text):  # not complete yet: more of it may come
                break
            self._done = m.end()
            cut = self._word(m.group(), m.start(), m.end())
            if cut is not None:
                return cut
        return None

    def finish(self) -> int | None:
        """The reply ended: its last word is complete."""
        return self.push(" ")

    def _restart(self) -> None:
        self._words.clear()
        self._starts.clear()
        self._ends.clear()
        self._runs.clear()
        self._plain.clear()
        self._number_runs.clear()

    def _word(self, word: str, start: int, end: int) -> int | None:
        first_in_line = not self.text[self.text.rfind("\n", 0, start) + 1:start].strip()
        if first_in_line:
            self._in_table = self._lone_before = False
            if word.startswith(_FENCE):
                self._in_code = not self._in_code
                self._restart()
                return None
        # a lone dash is a bullet or a separator ("- Elma", "9:00 AM - 10:00 AM": such a line went round
        # to the token limit unwatched); two in a line, a dashed rule
        lone = len(word) == 1 and _BLANK.fullmatch(word) is not None
        if "|" in word or (_BLANK.fullmatch(word) and (not lone or self._lone_before)) \
                or re.search(r"_{2,}|\.{3,}", word):
            self._in_table = True  # (a table's row, "Ad | Soyad" without a leading bar too; a form's blanks)
        self._lone_before = lone
        if self._in_code or self._in_table:
            self._restart()
            return None
        words, plain, n = self._words, self._plain, len(self._words)
        words.append("#" if first_in_line and _LIST_NUMBER.fullmatch(word) else word.casefold())
        plain.append(_DIGITS.sub("#", words[n]))
        self._starts.append(start)
        self._ends.append(end)
        runs, number_runs = self._runs, self._number_runs
        for p in range(1, min(n, MOST_PERIOD) + 1):
            r = runs.get(p, 0) + 1 if words[n] == words[n - p] else 0
            runs[p] = r
            if r and r >= (self.times - 1) * max(p, self.least):
                first = n - r - p + 1  # where the stretch's first copy began
                return self._sentence_end(first, first + p)
            if p < NUMBER_WORDS:
                continue
            r = number_runs.get(p, 0) + 1 if plain[n] == plain[n - p] else 0
            number_runs[p] = r
            # (two copies whose numbers differ say two things: "Sales were 1.2 million TL in 2023 …", "… in
            # 2024": even a summary's cut waits for a third)
            if r and r >= (self.number_times - 1) * p and self._wordy(n - p + 1, n + 1):
                first = n - r - p + 1
                return self._sentence_end(first + (self.kept - 1) * p, first + self.kept * p)
        return None

    def _wordy(self, begin: int, end: int) -> bool:
        """Whether words ``begin``..``end`` have ``NUMBER_KINDS`` different words without a digit:
        more than a list that counts ("Room 101: free", "2 x 3 = 6") written with its numbers."""
        kinds = {w for w in self._plain[begin:end] if "#" not in w and any(c.isalpha() for c in w)}
        return len(kinds) >= NUMBER_KINDS

    def _sentence_end(self, first: int, repeats: int) -> int:
        """Where to cut a loop whose first copy is words ``first``..``repeats``: after the last
        sentence (or line) that ends in it, where one does; the words after that begin the
        sentence the repeats go on with ("… for the delay.\n\nDear" kept, of a loop that began
        at "customer" after its first "Dear"), else where the repeats begin."""
        for k in range(repeats - 1, first - 1, -1):
            after = self.text[self._ends[k]:self._starts[k + 1]]
            word = self.text[self._starts[k]:self._ends[k]].rstrip("\"'»”’)]")
            if word[-1:] in _FULL_STOPS or "\n" in after:
                return self._starts[k + 1]
        return self._starts[repeats]


def cut_loop(text: str, times: int = 2) -> str:
    """``text`` up to where it began to repeat itself (the first copy of the repeated stretch
    kept, without the blank space after it); ``text`` where it does not."""
    watch = LoopWatch(times)
    cut = watch.push(text)
    if cut is None:
        cut = watch.finish()
    return text if cut is None else text[:cut].rstrip()
