"""Letters as an English and a Turkish reader see them: case set aside for matching
(``fold``) and the alphabet's order for lists (``alphabetical``).

Python's ``casefold`` follows English: "İ" became "i̇" (i and a combining dot) and "I" "i", so
"İŞ PLANI" did not match "iş planı"; SQLite's LIKE and NOCASE fold ASCII only ("çalışan" did
not find "Şirket Çalışanları"); and sorting by code point put Ç Ğ Ö Ş Ü ı after z.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable


def _caseless(text: str) -> str:
    """``text`` with case set aside, İ, I, ı and i one letter, the Turkish letters kept."""
    return unicodedata.normalize("NFC", text).replace("İ", "i").replace("I", "i").replace("ı", "i").casefold()


def fold(text: str) -> str:
    """``text`` with case set aside, for matching in English and Turkish: fold("İŞ PLANI"),
    fold("iş planı"), fold("Iş Planı") and fold("IS PLANI") are one string. İ, I, ı and i are
    one letter (Turkish pairs İ/i and I/ı, English I/i: a name typed in capitals by either finds
    the other's writing), and ç ğ ö ş ü their base letters (typed on a keyboard without them, or
    in haste: "disa" finds "Dışa aktar", "CALISANLAR" "ÇALIŞANLAR"). One Unicode form first
    (NFC), so a letter typed with a combining mark matches its composed self. (str.replace, not
    str.translate: search folds every message as the user types, and translate was 200 times
    slower on Turkish text.) Each letter stays one character (but for casefold's own: ß is ss)."""
    return (_caseless(text).replace("ç", "c").replace("ş", "s").replace("ğ", "g").replace("ö", "o")
            .replace("ü", "u"))


def bare(name: str) -> str:
    """A name's letters and digits, case set aside (``fold``): "SmolLM2-135M-Instruct.Q8_0" and
    "smollm2-135m-instruct-q8_0" are one, as a person who typed the one meant the other."""
    return re.sub(r"[\W_]", "", fold(name))


def closest_name(typed: str, names: Iterable[str], cutoff: float) -> str | None:
    """The name of ``names`` that ``typed`` most likely means (a profile's, a model's): the one of
    its letters and digits (``bare``), else difflib's closest, at least ``cutoff`` alike, of those;
    None for none. Case and punctuation are no typo: "smollm2-135m-instruct-q8_0" found no
    "SmolLM2-135M-Instruct.Q8_0", its capitals counted as letters changed."""
    by_bare: dict[str, str] = {}
    for name in names:
        by_bare.setdefault(bare(name), name)
    typed_bare = bare(typed)
    if typed_bare in by_bare:
        return by_bare[typed_bare]
    close = difflib.get_close_matches(typed_bare, list(by_bare), n=1, cutoff=cutoff)
    return by_bare[close[0]] if close else None


# Turkish letters of their own: each right after its base letter (c, ç, d ... s, ş, t)
_OWN_PLACE = str.maketrans({"ç": "c\uffff", "ğ": "g\uffff", "ö": "o\uffff", "ş": "s\uffff", "ü": "u\uffff"})


def alphabetical(text: str) -> tuple[str, tuple[bool, ...], str]:
    """A sort key that orders names as a Turkish or English reader expects, case aside:
    c, ç, d ... g, ğ, h ... o, ö, p ... s, ş, t ... u, ü, v; ı and i together (I with them, as
    ``fold`` has them), ı before i where that is all that differs; other accented letters (é, ñ) beside
    their base letter. The name itself breaks a last tie, so the order is always the same."""
    folded = _caseless(text).translate(_OWN_PLACE)
    base = "".join(c for c in unicodedata.normalize("NFD", folded) if not unicodedata.combining(c))
    dotted = tuple(c in "iİ" for c in unicodedata.normalize("NFC", text) if c in "iİıI")
    return base, dotted, text


def shortened(text: str, most: int, whole: bool = False) -> str:
    """``text`` in at most ``most`` characters: a longer one cut and ended with "…", so a reader
    sees that it goes on (a title cut at "e-postası ya" read as the whole name). ``whole``: cut
    after the last of its parts (" · ") that fit, or of its first part's words, so no word shows
    cut off (F4's list ended "can read up to abo", "Llama 3.1 Community Lic"); "…" where none fits."""
    if len(text) <= most:
        return text
    if not whole:
        return text[: most - 1] + "…"
    parts = text.split(" · ")
    for n in range(len(parts) - 1, 0, -1):
        if len(kept := " · ".join(parts[:n]) + " …") <= most:
            return kept
    words = parts[0].split(" ")
    for n in range(len(words) - 1, 0, -1):
        if len(kept := " ".join(words[:n]) + "…") <= most:
            return kept
    return "…"


# the last word a number is read with in Turkish, by its last non-zero digit's place (ones, tens)
_ONES = ("sıfır", "bir", "iki", "üç", "dört", "beş", "altı", "yedi", "sekiz", "dokuz")
_TENS = ("", "on", "yirmi", "otuz", "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan")
_GROUPS = ("bin", "milyon", "milyar", "trilyon", "katrilyon")


def _last_word(digits: str) -> str:
    """The word a Turkish reader says last in the whole number ``digits``: 21 -> bir, 40 -> kırk,
    300 -> yüz, 5.000 -> bin, 2.000.000 -> milyon."""
    n = int(digits or "0")
    if n == 0:
        return _ONES[0]
    if n % 10:
        return _ONES[n % 10]
    if n % 100:
        return _TENS[n // 10 % 10]
    if n % 1000:
        return "yüz"
    group = 0
    while n % 1000 == 0:
        n //= 1000
        group += 1
    return _GROUPS[min(group, len(_GROUPS)) - 1]


def number_suffix(number: int | str, suffix: str) -> str:
    """The Turkish case or possessive ``suffix`` that follows ``number`` written in figures, as
    it is read aloud: ``suffix`` is written as it follows 2 (iki): "si" (its possessive: 3
    bölümden 1'i, 2'si, 3'ü, 6'sı, 9'u, 10'u), "yi" (the accusative: 1'i, 2'yi, 6'yı), "ye",
    "de", "den", "nin". Its vowels take the last word's (vowel harmony: i ı u ü, e a), a first
    s, y or n goes after a consonant, and d is t after a voiceless one (3'te, 40'tan). A number
    with a decimal comma (Turkish 2,5) is read to its last decimal (iki virgül beş: 2,5'i), a
    time by its minutes, or on the hour by its hour (14:30'a, 14:00'e)."""
    text = str(number).strip()
    text = re.sub(r"(\d{1,2})[:.]00$", r"\1", text)  # a time on the hour is read by its hour: 14:00'e
    found = re.search(r"(\d[\d.,]*)\D*$", text)
    figures = found.group(1).rstrip(".,") if found else "0"
    whole, _, decimals = figures.partition(",")
    word = _last_word(decimals or whole.replace(".", ""))
    vowel = next(c for c in reversed(word) if c in "aeıioöuü")
    back, rounded = vowel in "aıou", vowel in "oöuü"
    after_vowel = word[-1] in "aeıioöuü"
    out = ""
    for i, c in enumerate(suffix):
        if i == 0 and c in "syn" and not after_vowel:
            continue  # the buffer letter goes after a consonant: 1'i, not 1'si
        if c == "d" and i == 0 and word[-1] in "fstkçşhp":
            c = "t"
        elif c == "i":
            c = ("u" if rounded else "ı") if back else ("ü" if rounded else "i")
        elif c == "e":
            c = "a" if back else "e"
        out += c
    return out
