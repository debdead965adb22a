"""Letters as an English and a Turkish reader see them: case set aside for matching
(``fold``) and the alphabet's order for lists (``alphabetical``).

Python's ``casefold`` follows English: "İ" became "i̇" (i and a combining dot) and "I" "i", so
"İŞ PLANI" did not match "iş planı"; SQLite's LIKE and NOCASE fold ASCII only ("çalışan" did
not find "Şirket Çalışanları"); and sorting by code point put Ç Ğ Ö Ş Ü ı after z.
"""

from __future__ import annotations

import unicodedata


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


def shortened(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters: a longer one cut and ended with "…", so a reader
    sees that it goes on (a title cut at "e-postası ya" read as the whole name)."""
    return text if len(text) <= most else text[: most - 1] + "…"
