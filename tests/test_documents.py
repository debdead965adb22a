"""Document readers: real files made by pypdf / python-docx, encodings, and hostile files."""

from __future__ import annotations

import datetime as dt
import os
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from docmaker import add_docx_table, make_docx, make_docx_bomb, make_pdf, make_pptx, make_xlsx

from workstation.core.documents import (
    Document,
    DocumentError,
    Limits,
    Section,
    decode_text,
    read_document,
)

TURKISH = (
    "Türkiye'nin başkenti Ankara'dır. İstanbul en büyük şehirdir. Öğretmen Şükrü Bey "
    "ödevleri dağıttı; çocuklar ılık rüzgârda ağaçların gölgesinde şarkı söyledi.\n"
)


def test_pdf_pages_are_numbered(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "report.pdf", ["First page about honeybees.", "Second page (hives).", "Third."])
    doc = read_document(path)
    assert doc.kind == "pdf" and doc.pages == 3
    assert [s.number for s in doc.sections] == [1, 2, 3]
    assert "honeybees" in doc.text[doc.sections[0].start : doc.sections[0].end]
    assert "(hives)" in doc.text[doc.sections[1].start : doc.sections[1].end]
    assert doc.cite(doc.sections[1].start, doc.sections[2].end) == "pp. 2–3"
    assert doc.cite(doc.sections[0].start, doc.sections[0].end) == "p. 1"
    # locked only for copying and printing (an owner password, none to open it: what Acrobat's and
    # Word's "restrict editing" write, with AES): read as any PDF; it was "a damaged PDF"
    from pypdf import PdfWriter

    for algorithm in ("RC4-128", "AES-128", "AES-256"):
        locked = PdfWriter(clone_from=path)
        locked.encrypt(user_password="", owner_password="the boss", permissions_flag=0, algorithm=algorithm)
        locked.write(tmp_path / f"locked-{algorithm}.pdf")
        assert read_document(tmp_path / f"locked-{algorithm}.pdf").text == doc.text, algorithm


def test_scanned_pdf_has_a_clear_message(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "scan.pdf", ["", ""], text_layer=False)
    with pytest.raises(DocumentError, match=r"'scan\.pdf' has no text in it, only pictures of its pages.*text recognition \(OCR\)"):
        read_document(path)


def test_a_pdf_of_blank_pages_is_said_to_hold_no_text_not_pictures(tmp_path: Path) -> None:
    """Blank pages were said to be "only pictures of its pages (a scanned PDF, probably)"."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    path = tmp_path / "blank.pdf"
    with path.open("wb") as out:
        writer.write(out)
    with pytest.raises(DocumentError) as info:
        read_document(path)
    assert str(info.value) == "'blank.pdf' contains no text."


def test_docx_headings_become_sections(tmp_path: Path) -> None:
    path = make_docx(
        tmp_path / "memo.docx",
        [("Introduction", ["Bees make honey.", "They live in hives."]), ("Costs", ["A hive costs 200 euros."])],
    )
    doc = read_document(path)
    assert doc.kind == "docx"
    assert [s.title for s in doc.sections] == ["Introduction", "Costs"]
    costs = doc.sections[1]
    assert "200 euros" in doc.text[costs.start : costs.end]
    assert doc.cite(costs.start, costs.end) == "§ Costs"


@pytest.mark.parametrize("encoding", ["cp1254", "iso-8859-9", "utf-8", "utf-8-sig", "utf-16", "utf-16-le-bom"])
def test_turkish_text_in_common_encodings(tmp_path: Path, encoding: str) -> None:
    text = TURKISH * 3
    if encoding == "utf-16-le-bom":
        data = b"\xff\xfe" + text.encode("utf-16-le")
    else:
        data = text.encode(encoding)
    path = tmp_path / "metin.txt"
    path.write_bytes(data)
    doc = read_document(path)
    assert doc.text == text


def test_markdown_and_html_sections(tmp_path: Path) -> None:
    md = tmp_path / "notes.md"
    md.write_text("Intro line.\n\n# Bees\nHoney.\n\n## Hive\nWax.\n", encoding="utf-8")
    doc = read_document(md)
    assert [s.label for s in doc.sections] == ["section 1", "§ Bees", "§ Hive"]
    assert doc.sections[0].start == 0 and doc.sections[-1].end == len(doc.text)

    html = tmp_path / "page.html"
    html.write_text(
        "<html><head><title>x</title><script>var secret=1;</script></head><body>"
        "<h1>Bees</h1><p>Honey <b>bees</b> live in hives.</p><h2>Wax</h2><ul><li>combs</li></ul>"
        "</body></html>",
        encoding="utf-8",
    )
    doc = read_document(html)
    assert "secret" not in doc.text
    assert [s.title for s in doc.sections] == ["Bees", "Wax"]
    assert "Honey bees live in hives." in doc.text


# --- hostile and broken files: a clear sentence naming the file, and no work on them -------
def _fails_fast(path: Path, match: str, limits: Limits | None = None, isolate: bool = False) -> str:
    """Refused with one sentence naming the file. (How fast is not asserted: the machine is
    shared; the tests below check instead that the costly work was never started.)"""
    with pytest.raises(DocumentError, match=match) as info:
        read_document(path, limits, isolate=isolate)
    message = str(info.value)
    assert path.name in message and "\n" not in message
    return message


@pytest.fixture
def unzipped(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The zip members anything in this process opened for reading (decompression starts there)."""
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def spy(self: zipfile.ZipFile, name: str | zipfile.ZipInfo, mode: str = "r", *args: object, **kwargs: object) -> object:
        if mode == "r":
            opened.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return real_open(self, name, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    yield opened


def test_docx_zip_bomb_is_refused_before_unpacking(tmp_path: Path, unzipped: list[str]) -> None:
    bomb = make_docx_bomb(tmp_path / "bomb.docx", size=48 << 20)  # ~50 KB on disk, 48 MiB inside
    assert bomb.stat().st_size < 1 << 20
    _fails_fast(bomb, r"zip bomb")
    # the total declared size counts too, whatever the ratio
    _fails_fast(bomb, r"unpack to more than", Limits(max_unzipped_bytes=16 << 20, max_zip_ratio=1e9))
    assert unzipped == []  # refused from the zip's directory: not one byte was inflated
    # the same file under limits it passes is opened: the spy sees real reads
    with pytest.raises(DocumentError):
        read_document(bomb, Limits(max_unzipped_bytes=1 << 30, max_zip_ratio=1e9, max_text_chars=1000))
    assert unzipped


def test_docx_with_too_many_members(tmp_path: Path) -> None:
    path = tmp_path / "many.docx"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(60):
            zf.writestr(f"m{i}.xml", "<a/>")
    _fails_fast(path, r"zip members", Limits(max_zip_members=50))


def test_not_a_docx(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    path.write_bytes(b"\x89PNG\r\n\x1a\n a picture under a Word name")
    _fails_fast(path, r"'fake.docx' is not a real DOCX file: its content is something else \(perhaps a file renamed")
    # a real DOCX cut short (a copy or a download that stopped) was called a renamed file
    whole = make_docx(tmp_path / "whole.docx", [("Travel", ["Meals: 30 euros a day."] * 40)])
    cut = tmp_path / "truncated.docx"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    _fails_fast(cut, r"'truncated.docx' is a damaged or truncated DOCX file \(its end is missing\); copy or download")
    letter = tmp_path / "letter.docx"  # a text file saved under a Word name
    letter.write_text("Dear colleague, the invoice is attached.", encoding="utf-8")
    _fails_fast(letter, r"open it in its program and save it as DOCX again")
    path2 = tmp_path / "empty-zip.docx"
    with zipfile.ZipFile(path2, "w") as zf:
        zf.writestr("hello.txt", "hi")
    _fails_fast(path2, r"'empty-zip.docx' is a zip archive but not a Word document")


def test_truncated_pdf(tmp_path: Path) -> None:
    full = make_pdf(tmp_path / "full.pdf", ["Some text on a page."] * 3)
    data = full.read_bytes()
    for frac in (0.2, 0.5, 0.9):
        cut = tmp_path / f"cut{int(frac * 100)}.pdf"
        cut.write_bytes(data[: int(len(data) * frac)])
        # said plainly: it ended with pypdf's own words, "(Stream has ended unexpectedly)"
        _fails_fast(cut, rf"^'cut{int(frac * 100)}.pdf' is a damaged or truncated PDF; copy or download it again, or "
                         r"open it in the program it came from and save it as a PDF again\.$")
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(os.urandom(4096))
    _fails_fast(garbage, r"not really a PDF")


def test_pdf_page_cap(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "long.pdf", ["page"] * 12)
    _fails_fast(path, r"12 pages, more than the limit of 10", Limits(max_pages=10))


def test_binary_file_named_txt(tmp_path: Path) -> None:
    path = tmp_path / "photo.txt"
    path.write_bytes(bytes(range(256)) * 64)
    _fails_fast(path, r"binary file")
    noisy = tmp_path / "noise.txt"
    noisy.write_bytes(os.urandom(20000).replace(b"\0", b"x"))
    _fails_fast(noisy, r"binary|unknown text encoding")
    # too short for the share of control characters to tell: a cut PNG was read as UTF-16
    # text ('襐乇ഊ'), a cut JPEG as some single-byte text
    for name, data in (("cut.txt", b"\x89PNG\r\n"), ("cut.md", b"\xff\xd8\xff\xe0ab")):
        (tmp_path / name).write_bytes(data)
        _fails_fast(tmp_path / name, r"binary file")
    with pytest.raises(DocumentError, match="binary file or uses an unknown text encoding"):
        decode_text(b"\x80\x81\x82\x83", "x")  # no BOM, no NUL: a UTF-16 guess is no text to read
    assert decode_text(b"GGUF notes: the model files", "x")[0].startswith("GGUF notes")  # a text, not a model
    # while a short text in a single-byte code page still reads
    assert decode_text("çalışma odası".encode("cp1254"), "x") == ("çalışma odası", "cp1254")


@pytest.mark.parametrize(("text", "encoding"), [
    ("Café crème brûlée... Señor Müller, niño, mañana.\n", "latin-1"),  # was read as cp1250: crčme, nińo
    ("Le déjeuner est prêt à midi, « voilà » – 20 €.\n", "cp1252"),  # was read as hp_roman8: dÕjeuner
    ("Grüße aus München: die Größe passt.\n", "latin-1"),
    ("Привет, как дела? Это документ о продажах.\n", "cp1251"),  # not Western: each as it is
    ("Příliš žluťoučký kůň úpěl ďábelské ódy.\n", "cp1250"),
    ("Çalışanların ığdır şubesi öğleden sonra.\n", "cp1254"),
])
def test_a_single_byte_text_reads_in_its_own_letters(text: str, encoding: str) -> None:
    """Western European text saved in latin-1 or cp1252 came out with wrong letters ("Café crčme
    brűlée", "nińo"), and summaries then had wrong words, with no warning."""
    assert decode_text(text.encode(encoding), "x")[0] == text


def test_a_name_that_is_not_utf8_is_one_sentence(tmp_path: Path) -> None:
    """A file unpacked from an old zip archive (its name in latin-1 bytes) was read, then its
    name broke every text it went into: the app fell over saving the summary, and summarize -o
    said "unexpected error: UnicodeEncodeError"."""
    doc = tmp_path / os.fsdecode(b"lat\xfc\xdf.txt")
    doc.write_text("The canteen closes at two.\n", encoding="utf-8")
    for isolate in (False, True):
        with pytest.raises(DocumentError) as info:
            read_document(doc, isolate=isolate)
        assert str(info.value) == ("The file name 'lat\ufffd\ufffd.txt' is not UTF-8 text (it probably came from another "
                                   "computer or an old zip archive); rename the file, then try again.")


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """A named pipe with nobody writing would block a read for ever: one sentence at once."""
    fifo = tmp_path / "notes.txt"
    os.mkfifo(fifo)
    _fails_fast(fifo, r"not a regular file")


def test_an_unreadable_document_is_one_sentence_for_a_user_without_rights(tmp_path: Path) -> None:
    """A file the user may not read (mode 000) through the real CLI in a process of its own:
    as root, without the capabilities that let root read anything, so the kernel refuses it
    as it refuses an office user; one sentence naming the file and the reason, exit 1."""
    import shutil
    import subprocess
    import sys

    doc = tmp_path / "salaries.txt"
    doc.write_text("Confidential figures for March.\n", encoding="utf-8")
    doc.chmod(0)
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is needed to drop root's right to read any file")
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]
    code = "import sys; from workstation.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([*prefix, sys.executable, "-c", code, "summarize", str(doc)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "WORKSTATION_DATA": str(tmp_path / "data")})
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == "workstation: 'salaries.txt' cannot be read (Permission denied)."
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_huge_file_is_refused_without_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as f:  # sparse: 10 GiB apparent size, nothing written
        f.truncate(10 * 2**30)
    read: list[Path] = []
    real_read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self) or real_read_bytes(self))
    _fails_fast(path, r"10,240 MiB, more than the 64 MiB limit")
    assert read == []  # refused from its size alone
    small = tmp_path / "small.txt"
    small.write_text("a few words", encoding="utf-8")
    assert read_document(small).text == "a few words" and read == [small]


def test_text_cap_and_misc(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_text("word " * 50_000, encoding="utf-8")
    _fails_fast(path, r"more than 100,000 characters", Limits(max_text_chars=100_000))
    _fails_fast(tmp_path / "missing.pdf", r"does not exist\.$")
    with pytest.MonkeyPatch.context() as mp:  # a name typed alone: where it was looked for
        mp.chdir(tmp_path)
        with pytest.raises(DocumentError) as missing:
            read_document("notes.txt")
    assert str(missing.value) == f"'notes.txt' does not exist in {tmp_path}."
    odd = tmp_path / "sheet.xlsx"
    with zipfile.ZipFile(odd, "w") as zf:  # a workbook of no sheets, slides of no slides
        zf.writestr("xl/workbook.xml", "<workbook/>")
    _fails_fast(odd, r"^'sheet.xlsx' contains no text\.$")
    slides = tmp_path / "deck.pptx"
    with zipfile.ZipFile(slides, "w") as zf:
        zf.writestr("ppt/presentation.xml", "<presentation/>")
    _fails_fast(slides, r"^'deck.pptx' contains no text\.$")
    other = tmp_path / "files.txt"
    with zipfile.ZipFile(other, "w") as zf:  # any other ZIP
        zf.writestr("a.txt", "a")
    _fails_fast(other, r"ZIP archive, not a document \(Word, Excel, PowerPoint, OpenDocument\) or text\.$")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    _fails_fast(empty, r"is empty")


def test_isolated_reader_returns_the_same_document_and_bounds_bombs(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "memo.docx", [("Intro", ["Bees make honey."])])
    assert read_document(path, isolate=True).text == read_document(path).text
    bomb = make_docx_bomb(tmp_path / "bomb.docx", size=48 << 20)
    _fails_fast(bomb, r"zip bomb", isolate=True)


def test_the_isolated_reader_starts_without_llama_cpp() -> None:
    """The reader process (every attached file, summary and batch document is read in one)
    imported llama.cpp's bindings and numpy with the package, as every process of the program
    does before it loads a model: 0.3 s of CPU a document where 0.1 s starts it. Another
    process of the program still loads them first."""
    from child_probe import loaded_in_a_child

    from workstation import READER_PROCESS

    assert loaded_in_a_child(READER_PROCESS, "workstation.core.documents", ["llama_cpp", "numpy"]) == []
    assert loaded_in_a_child("workstation-engine", "workstation.core.documents", ["llama_cpp"]) == ["llama_cpp"]


def test_the_isolated_readers_memory_budget_is_its_reading_s_own(tmp_path: Path) -> None:
    """The reader's address-space limit counted what its imports hold: once every process loaded
    llama.cpp's bindings first (numpy and its threads: 159 MiB on 2 cores, more with more
    cores), so a budget of 100 MiB refused any document. The budget bounds the reading itself,
    and still stops one that needs more than it."""
    letter = tmp_path / "letter.txt"
    letter.write_text("Dear team, the canteen closes at two on Fridays.\n" * 200_000, encoding="utf-8")  # 10 MB
    roomy = Limits(max_memory_bytes=100 * 2**20)
    assert read_document(letter, roomy, isolate=True).text == read_document(letter).text
    huge = tmp_path / "huge.txt"
    huge.write_text("Dear team, the canteen closes at two on Fridays.\n" * 1_200_000, encoding="utf-8")  # 60 MB
    tight = Limits(max_memory_bytes=32 * 2**20, max_text_chars=10**9)
    with pytest.raises(DocumentError, match="needs more than 32 MiB of memory to read"):
        read_document(huge, tight, isolate=True)


def test_every_document_problem_is_said_in_turkish_too(tmp_path: Path) -> None:
    """Ctrl+O in the Turkish UI showed "'fake.pdf' is not a PDF file" and the zip-bomb and
    size sentences in English: each is a phrase now, carried out of the isolated reader too."""
    from workstation.tui.i18n import Texts

    turkish = Texts("tr")
    fake = tmp_path / "fake.pdf"
    fake.write_text("just text", encoding="utf-8")
    bomb = make_docx_bomb(tmp_path / "bomb.docx", size=48 << 20)
    pages = make_pdf(tmp_path / "long.pdf", [f"Page {i} about bees." for i in range(4)])
    for path, isolate, limits, english, words in (
            (fake, False, None, "'fake.pdf' is damaged or not really a PDF; open it in the program it came from and save it "
                                 "as a PDF again.", "'fake.pdf' bozuk ya da aslında bir PDF değil; onu geldiği programda"),
            (bomb, True, None, "zip bomb", "zip bombası"),
            (pages, True, Limits(max_pages=2), "'long.pdf' has 4 pages, more than the limit of 2", "'long.pdf' 4 sayfa; sınır 2")):
        with pytest.raises(DocumentError) as caught:
            read_document(path, limits, isolate=isolate)
        assert english in str(caught.value)
        said = turkish.error(caught.value)
        assert words in said and said != str(caught.value)


def test_documents_are_recognised_by_content(tmp_path: Path) -> None:
    """Issue 15: a suffix-less text file reads as text, a PDF renamed .txt as a PDF, HTML
    without a suffix as HTML, a Word file without its suffix as DOCX; binary is refused."""
    license_file = tmp_path / "LICENSE"
    license_file.write_text("Permission is hereby granted, free of charge.\n", encoding="utf-8")
    doc = read_document(license_file)
    assert doc.kind == "text" and "Permission is hereby granted" in doc.text

    pdf = make_pdf(tmp_path / "report.pdf", ["Bees make honey in the hive."])
    renamed = tmp_path / "report.txt"
    renamed.write_bytes(pdf.read_bytes())
    as_pdf = read_document(renamed)
    assert as_pdf.kind == "pdf" and "Bees make honey" in as_pdf.text and "%PDF" not in as_pdf.text

    page = tmp_path / "export"
    page.write_text("<!DOCTYPE html><html><body><h1>Minutes</h1><p>Budget approved.</p></body></html>")
    html = read_document(page)
    assert html.kind == "html" and "Budget approved." in html.text and "<p>" not in html.text

    word = make_docx(tmp_path / "memo.docx", [("Intro", ["Bees make honey."])])
    bare = tmp_path / "memo"
    bare.write_bytes(word.read_bytes())
    assert read_document(bare).text == read_document(word).text

    blob = tmp_path / "firmware"
    blob.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(DocumentError, match=r"^'firmware' is a binary file, not text\.$"):
        read_document(blob)
    _fails_fast(blob, r"binary file", isolate=True)


def test_batch_scan_takes_suffix_less_documents_only(tmp_path: Path) -> None:
    from workstation.core.batch_queue import DB_NAME, BatchQueue

    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    (folder / "README").write_text("How to book a meeting room.\n", encoding="utf-8")
    (folder / "core-dump").write_bytes(bytes(range(256)) * 8)
    (folder / "notes.txt").write_text("Notes.", encoding="utf-8")
    (folder / "data.sqlite").write_bytes(b"SQLite format 3\x00")
    make_xlsx(folder / "budget.xlsx", [("S", [["Rent", 1200]])])  # Excel and PowerPoint files: read (they were left alone)
    make_pptx(folder / "deck", [("Plan", ["Sign"], None)])  # (told by its parts without a suffix)
    queue = BatchQueue(out / DB_NAME)
    try:
        assert queue.scan(folder, out) == 4
        assert queue.found == {"README", "notes.txt", "budget.xlsx", "deck"}
    finally:
        queue.close()


def test_a_folder_points_at_batch(tmp_path: Path) -> None:
    """The folder by its name, then the command to run ("Nothing of School Letters was summarized:
    '/…/School Letters' is a folder, not a document; '… batch …' summarizes every document in it.")."""
    folder = tmp_path / "School Letters"
    folder.mkdir()
    with pytest.raises(DocumentError) as said:
        read_document(folder)
    from workstation.core.invocation import shell_word

    assert str(said.value) == ("School Letters is a folder, not a document. To summarize every document in it, run: "
                               f"workstation batch {shell_word(str(folder))}")
    from workstation.tui.i18n import Texts

    assert Texts("tr").error(said.value) == ("School Letters bir klasör, belge değil. İçindeki her belgeyi özetlemek "
                                             f"için şunu çalıştırın: workstation batch {shell_word(str(folder))}")


def test_a_broken_link_says_where_it_points(tmp_path: Path) -> None:
    """A link whose file was moved or deleted was said to "not exist", though it is there."""
    from workstation.tui.i18n import Texts

    target = tmp_path / "archive" / "contract.pdf"
    link = tmp_path / "broken_link.pdf"
    link.symlink_to(target)
    for isolate in (False, True):
        with pytest.raises(DocumentError) as info:
            read_document(link, isolate=isolate)
        assert str(info.value) == f"'broken_link.pdf' is a link to {target}, which is not there."
    assert Texts("tr").error(info.value) == f"'broken_link.pdf', {target} dosyasına bir bağlantı, ama o dosya orada değil."
    relative = tmp_path / "notes.txt"
    relative.symlink_to("old/notes.txt")  # taken from the link's folder
    _fails_fast(relative, rf"^'notes.txt' is a link to {tmp_path}/old/notes.txt, which is not there\.$")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_text(tmp_path: Path, encoding: str) -> None:
    """UTF-16 saved without a BOM (an export of an old Windows program) was "a binary file"."""
    path = tmp_path / "dilekce.txt"
    path.write_bytes(TURKISH.encode(encoding) * 3)
    doc = read_document(path)
    assert doc.text == TURKISH * 3 and doc.encoding == encoding
    page = tmp_path / "page.html"
    page.write_bytes("<html><body><h1>Karar</h1><p>Dava reddedildi.</p></body></html>".encode(encoding))
    assert read_document(page).text == "Karar\nDava reddedildi."
    # while binaries with many NUL bytes are still refused: 16-bit numbers (a sound, a table of
    # small integers) read as UTF-16 are control characters, and random data has NULs everywhere
    numbers = tmp_path / "samples.txt"
    numbers.write_bytes(b"".join(i.to_bytes(2, "little") for i in range(20)) * 200)
    _fails_fast(numbers, r"binary file")
    for blob in (bytes(range(256)) * 64, os.urandom(8192), b"\x00" * 4096):
        (tmp_path / "blob.txt").write_bytes(blob)
        _fails_fast(tmp_path / "blob.txt", r"binary file|unknown text encoding")
    assert decode_text("Dilekçe".encode(encoding) + b"\x00", "x")[0] == "Dilekçe"  # a cut odd byte


W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _note_part(kind: str, notes: dict[int, str]) -> str:
    """word/footnotes.xml or word/endnotes.xml as Word writes it: two separators, then the notes."""
    parts = [f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>',
             f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:{kind}>']
    for note_id, text in notes.items():
        ref = "footnoteRef" if kind == "footnote" else "endnoteRef"
        paras = "".join(f'<w:p><w:r><w:t xml:space="preserve">{t}</w:t></w:r></w:p>' for t in text.split("\n"))
        parts.append(f'<w:{kind} w:id="{note_id}"><w:p><w:pPr><w:pStyle w:val="FootnoteText"/></w:pPr>'
                     f'<w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:{ref}/></w:r></w:p>'
                     f'{paras}</w:{kind}>')
    return f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:{kind}s {W_NS}>{"".join(parts)}</w:{kind}s>'


def make_docx_with_notes(path: Path) -> Path:
    """A Word file with footnotes and endnotes: python-docx writes the document (it cannot add
    notes), the references go into its runs, and the notes' parts into the zip with their
    relationships and content types, as Word lays them out."""
    import docx
    from docx.oxml import parse_xml

    def ref(kind: str, note_id: int) -> object:
        return parse_xml(f'<w:r {W_NS}><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr>'
                         f'<w:{kind}Reference w:id="{note_id}"/></w:r>')

    doc = docx.Document()
    doc.add_heading("Facts", level=1)
    p = doc.add_paragraph("The claim was time-barred")
    p._p.append(ref("footnote", 7))  # Word's ids need not follow the text's order
    p.add_run(" and the appeal failed.")
    p._p.append(ref("endnote", 3))
    doc.add_paragraph("A paragraph without notes:\tit stays as it was.")
    q = doc.add_paragraph("See also the earlier ruling")
    q._p.append(ref("footnote", 2))
    q.add_run(", and again")
    q._p.append(ref("footnote", 7))  # the same note again keeps its number
    table = doc.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Case"
    table.cell(0, 1).paragraphs[0].add_run("2019/123")
    table.cell(0, 1).paragraphs[0]._p.append(ref("footnote", 5))
    doc.save(str(path))

    parts = {
        "word/footnotes.xml": _note_part("footnote", {2: "Yargıtay 9. HD, E. 2017/45, K. 2018/99.",
                                                      5: "Docket of the court of first instance.",
                                                      7: "Art. 146 of the Code of Obligations;\nsee also Art. 147."}),
        "word/endnotes.xml": _note_part("endnote", {3: "The appeal was filed on 12 May 2020."}),
    }
    rels = {"word/footnotes.xml": "footnotes", "word/endnotes.xml": "endnotes"}
    with zipfile.ZipFile(path) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    members["word/_rels/document.xml.rels"] = members["word/_rels/document.xml.rels"].replace(b"</Relationships>", "".join(
        f'<Relationship Id="rIdN{i}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}" '
        f'Target="{part.split("/")[1]}"/>' for i, (part, kind) in enumerate(rels.items())).encode() + b"</Relationships>")
    members["[Content_Types].xml"] = members["[Content_Types].xml"].replace(b"</Types>", "".join(
        f'<Override PartName="/{part}" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}+xml"/>'
        for part, kind in rels.items()).encode() + b"</Types>")
    members.update({name: text.encode() for name, text in parts.items()})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_word_footnotes_and_endnotes_are_read(tmp_path: Path) -> None:
    """A legal text's footnotes (citations, case numbers) were dropped: python-docx has no
    footnotes. The references are marked where they stand, numbered as Word shows them, and
    the notes follow under 'Footnotes' and 'Endnotes'."""
    import docx

    path = make_docx_with_notes(tmp_path / "opinion.docx")
    assert len(docx.Document(str(path)).paragraphs) == 4  # (python-docx still opens it)
    doc = read_document(path)
    assert doc.text == (
        "Facts\n"
        "The claim was time-barred[1] and the appeal failed.[i]\n"
        "A paragraph without notes:\tit stays as it was.\n"
        "See also the earlier ruling[2], and again[1]\n"
        "Case | 2019/123[3]\n\n"
        "Footnotes\n"
        "[1] Art. 146 of the Code of Obligations; see also Art. 147.\n"
        "[2] Yargıtay 9. HD, E. 2017/45, K. 2018/99.\n"
        "[3] Docket of the court of first instance.\n\n"
        "Endnotes\n"
        "[i] The appeal was filed on 12 May 2020."
    )
    assert [s.title for s in doc.sections] == ["Facts", "Footnotes", "Endnotes"]
    notes = doc.sections[1]
    assert doc.cite(notes.start, notes.end) == "§ Footnotes"
    # a part of a body without headings and its notes is cited by its lines, not "§ Footnotes" for all
    body = "The claim was time-barred.\n" * 4  # 108 characters, lines 1-4
    text = body + "\nFootnotes\n[1] Case 2017/45."
    untitled = Document("memo.docx", "docx", text, [Section(0, len(body) - 1, 1, None),
                                                    Section(len(body) + 1, len(text), 2, "Footnotes")])
    assert untitled.cite(0, len(text)) == "lines 1–7" and untitled.cite(len(body) + 1, len(text)) == "§ Footnotes"
    assert read_document(path, isolate=True).text == doc.text
    # a document without notes reads as before
    plain = make_docx(tmp_path / "memo.docx", [("Intro", ["Bees make honey."])])
    assert read_document(plain).text == "Intro\nBees make honey."


ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
          'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
          'xmlns:dc="http://purl.org/dc/elements/1.1/"')


def make_odf(path: Path, body: str, kind: str = "text", styles: str = "") -> Path:
    """An OpenDocument file as LibreOffice lays it out: the member 'mimetype' first and stored,
    then content.xml and the manifest, compressed."""
    mime = f"application/vnd.oasis.opendocument.{kind}"
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODF_NS} office:version="1.3">'
               f'{styles}<office:body><office:{kind}>{body}</office:{kind}></office:body></office:document-content>')
    manifest = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
                'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
                f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mime}"/>'
                '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
                '</manifest:manifest>')
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), mime, compress_type=zipfile.ZIP_STORED)
        zf.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr("META-INF/manifest.xml", manifest, compress_type=zipfile.ZIP_DEFLATED)
    return path


def test_opendocument_text_is_read(tmp_path: Path) -> None:
    """An .odt (LibreOffice) was refused as "a ZIP archive, not a Word document or text"."""
    body = (
        '<text:sequence-decls><text:sequence-decl text:display-outline-level="0" text:name="Table"/></text:sequence-decls>'
        '<text:p>Preamble  before any heading.</text:p>'
        '<text:h text:outline-level="1">Olaylar</text:h>'
        '<text:p>Davacı<text:s/>vekili<text:s text:c="3"/>dava<text:tab/>dilekçesinde'
        '<text:note text:id="ftn1" text:note-class="footnote"><text:note-citation>1</text:note-citation>'
        '<text:note-body><text:p>Yargıtay 9. HD, E. 2017/45.</text:p></text:note-body></text:note>'
        ' <text:span>özetle</text:span> <text:a xlink:href="http://x" xmlns:xlink="http://www.w3.org/1999/xlink">şunu</text:a>'
        '<text:line-break/>ileri sürdü.<office:annotation><dc:creator>A</dc:creator><text:p>a comment</text:p></office:annotation>'
        '</text:p>'
        '<text:list><text:list-item><text:p>birinci madde</text:p></text:list-item>'
        '<text:list-item><text:p>ikinci madde<text:note text:id="ftn2" text:note-class="endnote">'
        '<text:note-citation>i</text:note-citation><text:note-body><text:p>Son not.</text:p></text:note-body>'
        '</text:note></text:p></text:list-item></text:list>'
        '<text:tracked-changes><text:changed-region><text:deletion><text:p>deleted words</text:p></text:deletion>'
        '</text:changed-region></text:tracked-changes>'
        '<text:h text:outline-level="2">Tablo</text:h>'
        '<table:table table:name="T1"><table:table-column table:number-columns-repeated="3"/>'
        '<table:table-row><table:table-cell><text:p>Esas</text:p></table:table-cell>'
        '<table:table-cell><text:p>Karar</text:p></table:table-cell><table:table-cell/></table:table-row>'
        '<table:table-row><table:table-cell><text:p>2017/45</text:p></table:table-cell>'
        '<table:table-cell><text:p>2018/99</text:p><text:p>kesin</text:p></table:table-cell>'
        '<table:table-cell><text:p>ret<text:note text:id="ftn3" text:note-class="footnote">'
        '<text:note-citation>2</text:note-citation><text:note-body><text:p>Hücre notu.</text:p></text:note-body>'
        '</text:note></text:p><draw:frame xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0">'
        '<draw:text-box><text:p>kutu</text:p></draw:text-box></draw:frame></table:table-cell>'
        '</table:table-row></table:table>'
    )
    path = make_odf(tmp_path / "dilekce.odt", body)
    doc = read_document(path)
    assert doc.kind == "odt"
    assert doc.text == (
        "Preamble  before any heading.\n\n"
        "Olaylar\n"
        "Davacı vekili   dava\tdilekçesinde[1] özetle şunu\nileri sürdü.\n"
        "birinci madde\n"
        "ikinci madde[i]\n\n"
        "Tablo\n"
        "Esas | Karar | \n"
        "2017/45 | 2018/99 kesin | ret[2]\n\n"  # a note in a cell: marked, said once below (it was said twice)
        "Footnotes\n[1] Yargıtay 9. HD, E. 2017/45.\n[2] Hücre notu.\n\n"
        "Endnotes\n[i] Son not."
    )
    assert [s.title for s in doc.sections] == [None, "Olaylar", "Tablo", "Footnotes", "Endnotes"]
    assert read_document(path, isolate=True).text == doc.text
    bare = tmp_path / "dilekce"  # without its suffix: told by its stored mimetype
    bare.write_bytes(path.read_bytes())
    assert read_document(bare).text == doc.text


def test_opendocument_spreadsheets_slides_and_fakes_are_one_sentence(tmp_path: Path, unzipped: list[str]) -> None:
    """An .ods and an .odp were refused ("save it as CSV", "as PDF"): read now, a sheet's rows as
    'a | b', its cells as LibreOffice shows them; the million empty cells LibreOffice declares
    after the last row (a repeated row of repeated cells) are not unrolled."""
    from workstation.core.phrases import say

    table = ('<table:table table:name="Bütçe"><table:table-column table:number-columns-repeated="1024"/>'
             '<table:table-header-rows><table:table-row><table:table-cell><text:p>Kalem</text:p></table:table-cell>'
             '<table:table-cell><text:p>Tutar</text:p></table:table-cell></table:table-row></table:table-header-rows>'
             '<table:table-row><table:table-cell/><table:table-cell office:value-type="float" office:value="1200.5">'
             '<text:p>1.200,50</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="3"/>'
             '</table:table-row><table:table-row table:number-rows-repeated="1048574">'
             '<table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table>'
             '<table:table table:name="Gizli" table:style-name="ta2"><table:table-row table:number-rows-repeated="2">'
             '<table:table-cell table:number-columns-repeated="2"><text:p>x</text:p></table:table-cell></table:table-row>'
             '</table:table>')
    hide = ('<office:automatic-styles><style:style style:name="ta2" style:family="table" '
            'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"><style:table-properties table:display="false"/>'
            '</style:style></office:automatic-styles>')  # (a hidden sheet: hidden by its style)
    sheet = make_odf(tmp_path / "budget.ods", table, kind="spreadsheet", styles=hide)
    doc = read_document(sheet)
    # its hidden sheet (a lookup, scratch work) left out, and said where the person sees it
    assert doc.kind == "ods" and doc.text == "Sheet: Bütçe\nKalem | Tutar\n | 1.200,50 | 3"
    assert say(doc.notes) == "The hidden sheet 'Gizli' was left out; show it in Excel or LibreOffice to have it read."
    renamed = tmp_path / "budget.odt"  # the same under a text's name: read as what it is
    renamed.write_bytes(sheet.read_bytes())
    assert read_document(renamed).text == doc.text
    pages = ('<draw:page draw:name="page1"><draw:frame presentation:class="title"><draw:text-box><text:p>Bütçe</text:p>'
             '</draw:text-box></draw:frame><draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item>'
             '<text:p>Kira</text:p></text:list-item></text:list></draw:text-box></draw:frame>'
             '<draw:frame presentation:class="page-number"><draw:text-box><text:p>1</text:p></draw:text-box></draw:frame>'
             '<presentation:notes><draw:page-thumbnail presentation:class="page"/><draw:frame presentation:class="notes">'
             '<draw:text-box><text:p>Önce kira.</text:p></draw:text-box></draw:frame></presentation:notes></draw:page>'
             '<draw:page draw:name="page2"><draw:frame><table:table><table:table-row><table:table-cell><text:p>a</text:p>'
             '</table:table-cell><table:table-cell><text:p>b</text:p></table:table-cell></table:table-row></table:table>'
             '</draw:frame></draw:page>')
    slides = make_odf(tmp_path / "talk.odp", pages, kind="presentation")
    assert read_document(slides).text == "Slide 1: Bütçe\nKira\nSpeaker notes: Önce kira.\n\nSlide 2\na | b"
    letter = tmp_path / "letter.odt"
    letter.write_text("Dear colleague.", encoding="utf-8")
    _fails_fast(letter, r"^'letter.odt' is not a real ODT file: its content is something else \(perhaps a file renamed to \.odt\)")
    no_content = tmp_path / "other.odt"
    with zipfile.ZipFile(no_content, "w") as zf:
        zf.writestr("hello.txt", "hi")
    _fails_fast(no_content, r"^'other.odt' is a zip archive but not an OpenDocument text")
    broken = make_odf(tmp_path / "broken.odt", "<text:p>unclosed")
    _fails_fast(broken, r"^'broken.odt' is not a valid ODT file \(")
    unzipped.clear()
    bomb = tmp_path / "bomb.odt"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        zf.writestr("content.xml", b"<a>" + b" " * (48 << 20) + b"</a>")
    _fails_fast(bomb, r"zip bomb")
    assert unzipped == []  # refused from the zip's directory


TURKISH_RTF = (
    rb"{\rtf1\ansi\ansicpg1254\deff0\nouicompat{\fonttbl{\f0\fnil\fcharset162 Calibri;}{\f1\fnil\fcharset0 Arial;}}"
    b"\r\n"
    rb"{\colortbl ;\red255\green0\blue0;}{\stylesheet{\s1 heading 1;}}"
    rb"{\info{\title Gizli}{\author Av. Kaya}}{\*\generator Riched20 10.0.19041}"
    rb"{\header\pard Sayfa ba\'fel\'fd\'f0\'fd\par}"
    b"\r\n"
    rb"\viewkind4\uc1\pard\sa200\sl276\slmult1\f0\fs22\lang1055 D\'fczenlenmi\'fe s\'f6zle\'feme\par"
    b"\r\n"
    rb"\u304?stanbul \u350?irketi ile \uc2 g\u252\'3f\'3fmr\u252\'3f\'3fk\uc1  tarafl\'fdd\'fdr\{1\}.\line "
    rb"Yol: C:\\belgeler\tab Tutar: 5.000\~TL{\*\bkmkstart x}{\*\bkmkend x}"
    rb'{\field{\*\fldinst HYPERLINK "http://x"}{\fldrslt ba\'f0lant\'fd}}\par'
    b"\r\n"
    rb"{\v gizli metin}{\pict\wmetafile8\picw10 0123456789abcdef}"
    rb"{\super\chftn}{\footnote\pard\plain{\super\chftn} Yarg\'fdtay 9. HD, E. 2017/45.}\par"
    rb"\trowd\cellx1000\cellx2000 Esas\cell Karar\cell\row"
    rb"\trowd\cellx1000\cellx2000 2017/45\cell 2018/99\cell\row"
    b"\r\n}"
)


def test_rtf_is_read_as_text(tmp_path: Path) -> None:
    """An .rtf was fed to the model raw: '{\\rtf1\\ansi\\ansicpg1254…\\'fczenlenmi\\'fe'."""
    path = tmp_path / "sozlesme.rtf"
    path.write_bytes(TURKISH_RTF)
    doc = read_document(path)
    assert doc.kind == "rtf" and doc.encoding == "cp1254"
    assert doc.text == (
        "Düzenlenmiş sözleşme\n"
        "İstanbul Şirketi ile gümrük taraflıdır{1}.\n"
        "Yol: C:\\belgeler\tTutar: 5.000\u00a0TLbağlantı\n"
        "[1]\n"
        "Esas | Karar\n"
        "2017/45 | 2018/99\n\n"
        "Footnotes\n[1] Yargıtay 9. HD, E. 2017/45."
    )
    assert read_document(path, isolate=True).text == doc.text
    # told by its start, whatever its name (Word's "Rich Text" saved as .doc, or no suffix)
    for other in ("sozlesme.doc", "sozlesme"):
        (tmp_path / other).write_bytes(TURKISH_RTF)
        assert read_document(tmp_path / other).text == doc.text
    # without \ansicpg: Windows-1252; a \u letter beyond the BMP as a surrogate pair
    western = tmp_path / "note.rtf"
    western.write_bytes(rb"{\rtf1\ansi{\fonttbl\f0\fswiss Helvetica;}\f0 Caf\'e9 cr\'e8me \u-10179?\u-8704? ok\par}")
    assert read_document(western).text == "Café crème \U0001f600 ok"
    # a .rtf that is plain text reads as text
    plain = tmp_path / "plain.rtf"
    plain.write_text("Only words.", encoding="utf-8")
    assert read_document(plain).text == "Only words."


def test_hostile_rtf_is_bounded(tmp_path: Path) -> None:
    deep = tmp_path / "deep.rtf"
    deep.write_bytes(rb"{\rtf1 " + b"{" * 200_000 + b"x" + b"}" * 200_000 + b"}")
    _fails_fast(deep, r"^'deep.rtf' is nested too deeply to read safely\.$")
    _fails_fast(deep, r"nested too deeply", isolate=True)
    huge_bin = tmp_path / "bin.rtf"  # says 9,999,999,999 bytes of binary data follow: jumped to the end
    huge_bin.write_bytes(rb"{\rtf1\ansi Before.\par{\pict\bin9999999999 " + os.urandom(4096) + b"}} After.}")
    assert read_document(huge_bin).text == "Before."
    small_bin = tmp_path / "small-bin.rtf"  # a \bin that fits is skipped, text after it read
    small_bin.write_bytes(rb"{\rtf1 A{\*\blipuid x}{\pict\bin4 {}\\}B\par}")
    assert read_document(small_bin).text == "AB"
    only_tables = tmp_path / "empty.rtf"
    only_tables.write_bytes(rb"{\rtf1\ansi{\fonttbl{\f0 Arial;}}{\colortbl;\red1\green2\blue3;}\par\par}")
    _fails_fast(only_tables, r"^'empty.rtf' contains no text\.$")
    unbalanced = tmp_path / "unbalanced.rtf"
    unbalanced.write_bytes(rb"{\rtf1 one}}}} two\u99999999999 \ucx \'zz three\'")
    assert read_document(unbalanced).text.startswith("one")
    long_text = tmp_path / "long.rtf"
    long_text.write_bytes(rb"{\rtf1 " + b"word " * 50_000 + b"}")
    _fails_fast(long_text, r"more than 100,000 characters", Limits(max_text_chars=100_000))
    slow = tmp_path / "slow.rtf"
    slow.write_bytes(rb"{\rtf1 " + rb"\b\i " * 200_000 + b"}")
    _fails_fast(slow, r"took longer than 0 s", Limits(timeout_s=0.0))


def test_an_email_is_read_as_headers_body_and_attachment_names(tmp_path: Path) -> None:
    """An .eml was fed to the model raw: MIME headers, '=?utf-8?b?...?=' subjects,
    quoted-printable, base64 attachments."""
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["From"] = "Av. Ayşe Kaya <ayse@hukuk.example>"
    msg["To"] = "Şükrü Bey <sukru@example.com>, arsiv@hukuk.example"
    msg["Cc"] = "Müvekkil <info@firma.example>"
    msg["Date"] = "Tue, 12 May 2020 10:30:00 +0300"
    msg["Subject"] = "Dava dosyası: itiraz süresi doluyor"
    body = ("Sayın Şükrü Bey,\n\nİtiraz süresi 14 Mayıs günü doluyor; dilekçeyi ekte gönderiyorum. Esas numarası "
            "2017/45, karar numarası 2018/99 olan dosyada Yargıtay'a başvuru yapılacak.\n\nSaygılarımla,\nAyşe Kaya\n")
    msg.set_content(body, cte="quoted-printable")
    msg.add_alternative("<html><body><p>HTML copy of the letter</p></body></html>", subtype="html")
    msg.add_attachment(b"%PDF-1.4 secret attachment bytes\n" * 100, maintype="application", subtype="pdf",
                       filename="itiraz dilekçesi.pdf")
    raw = msg.as_bytes()
    assert b"=?utf-8?" in raw and b"quoted-printable" in raw and b"base64" in raw  # (as mail programs save it)
    path = tmp_path / "itiraz.eml"
    path.write_bytes(raw)
    doc = read_document(path)
    assert doc.kind == "email"
    assert doc.text == (
        "From: \"Av. Ayşe Kaya\" <ayse@hukuk.example>\n"  # (quoted, as the address is written)
        "To: Şükrü Bey <sukru@example.com>, arsiv@hukuk.example\n"
        "Cc: Müvekkil <info@firma.example>\n"
        "Date: Tue, 12 May 2020 10:30:00 +0300\n"
        "Subject: Dava dosyası: itiraz süresi doluyor\n\n"
        + body.strip() + "\n\n"
        "Attachments (1): itiraz dilekçesi.pdf (3 KB; not read: 'itiraz dilekçesi.pdf' is a damaged or truncated PDF;"
        " copy or download it again, or open it in the program it came from and save it as a PDF again)"
    )
    assert "secret" not in doc.text and "HTML copy" not in doc.text
    assert read_document(path, isolate=True).text == doc.text
    bare = tmp_path / "1589268600.M1P2"  # a mail program's file, without a suffix
    bare.write_bytes(raw)
    assert read_document(bare).kind == "email"

    # HTML alone: read as the HTML reader reads a page
    html_only = EmailMessage()
    html_only["From"], html_only["Subject"] = "a@b.example", "=?UTF-8?B?xZ51YmF0IHJhcG9ydQ==?="
    html_only.set_content("<html><head><style>p{}</style></head><body><h1>Özet</h1><p>Dava <b>kabul</b> edildi.</p>"
                          "<script>x()</script></body></html>", subtype="html", cte="base64")
    page = tmp_path / "page.eml"
    page.write_bytes(html_only.as_bytes())
    read = read_document(page)
    assert read.text == "From: a@b.example\nSubject: Şubat raporu\n\nÖzet\nDava kabul edildi."
    assert [s.title for s in read.sections] == [None, "Özet"]


def test_an_emails_attached_documents_are_read_after_it(tmp_path: Path) -> None:
    """'The contract is attached': the e-mail alone said nothing of what was asked about. Each
    attached document the app reads comes after the e-mail as a section of its own, with the
    e-mail's limits; one it cannot read, and one of a kind it does not read, are named."""
    from email.message import EmailMessage

    docx = make_docx(tmp_path / "src.docx", [("Madde 4", ["Fesih bildirimi 30 gün önceden yapılır."])])
    pdf = make_pdf(tmp_path / "src.pdf", ["Ek protokol: kira bedeli 12.500 TL."])
    msg = EmailMessage()
    msg["From"], msg["Subject"] = "a@b.example", "Sözleşme ekte"
    msg.set_content("Sözleşme ve protokol ekte.\n")
    msg.add_attachment(docx.read_bytes(), maintype="application", subtype="octet-stream", filename="../../sözleşme.docx")
    msg.add_attachment(pdf.read_bytes(), maintype="application", subtype="pdf", filename="protokol.pdf")
    msg.add_attachment(b"not,a,document\n", maintype="application", subtype="zip", filename="veri.zip")
    path = tmp_path / "ekli.eml"
    path.write_bytes(msg.as_bytes())
    doc = read_document(path)
    head, _, rest = doc.text.partition("\n\nAttachment: ")
    assert re.search(r"\nAttachments \(3\): sözleşme\.docx \(\d+ KB, read below\), protokol\.pdf \(\d+ bytes, read below\), "
                     r"veri\.zip \(15 bytes\)$", head), head
    assert "Fesih bildirimi 30 gün önceden yapılır." in rest and "kira bedeli 12.500 TL" in rest
    titles = [s.title for s in doc.sections if s.title]
    assert titles == ["Attachment: sözleşme.docx", "Attachment: protokol.pdf"]
    fesih = doc.text.index("Fesih")
    assert doc.cite(fesih, fesih + 10) == "§ Attachment: sözleşme.docx"
    assert not (tmp_path.parent / "sözleşme.docx").exists()  # (read from a folder of its own)
    assert read_document(path, isolate=True).text == doc.text
    # the e-mail's limit on text holds for what its attachments add
    with pytest.raises(DocumentError, match="more than"):
        read_document(path, Limits(max_text_chars=len(head) + 20))
    # twenty are read; the rest named only
    many = EmailMessage()
    many["Subject"] = "many"
    many.set_content("Notes attached.")
    for i in range(22):
        many.add_attachment(f"note {i}\n".encode(), maintype="text", subtype="plain", filename=f"n{i}.txt")
    lots = tmp_path / "many.eml"
    lots.write_bytes(many.as_bytes())
    read = read_document(lots)
    assert sum(1 for s in read.sections if (s.title or "").startswith("Attachment:")) == 20
    assert "n21.txt (8 bytes)" in read.text and "n19.txt (8 bytes, read below)" in read.text


def test_new_formats_are_taken_by_batch_and_the_picker() -> None:
    from workstation.core.documents import SUPPORTED_SUFFIXES

    assert {".eml", ".rtf", ".odt", ".xlsx", ".xlsm", ".ods", ".pptx", ".odp"} <= set(SUPPORTED_SUFFIXES)


def test_hostile_emails_are_one_sentence(tmp_path: Path) -> None:
    deep = tmp_path / "deep.eml"  # parts within parts, 3,000 deep
    n = 3000
    deep.write_bytes(b"From: a@b.example\r\nSubject: deep\r\nMIME-Version: 1.0\r\n"
                     + b"".join(b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i) for i in range(n))
                     + b"Content-Type: text/plain\r\n\r\nhello\r\n" + b"".join(b"--b%d--\r\n" % i for i in reversed(range(n))))
    _fails_fast(deep, r"^'deep.eml' is nested too deeply to read safely\.$")
    junk = tmp_path / "junk.eml"  # not an e-mail at all: read as a message of one body
    junk.write_bytes(b"just some words, no headers\n")
    assert "just some words" in read_document(junk).text
    nothing = tmp_path / "nothing.eml"
    nothing.write_bytes(b"X-Spam: 1\r\n\r\n")
    _fails_fast(nothing, r"^'nothing.eml' contains no text\.$")


def test_a_password_protected_odt_says_so(tmp_path: Path) -> None:
    """LibreOffice's password encrypts content.xml and says so in the manifest."""
    path = tmp_path / "secret.odt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        zf.writestr("content.xml", os.urandom(2000))
        zf.writestr("META-INF/manifest.xml", '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
                    '<manifest:file-entry manifest:full-path="content.xml"><manifest:encryption-data/></manifest:file-entry>'
                    '</manifest:manifest>')
    _fails_fast(path, r"^'secret.odt' is protected by a password; save an unprotected copy\.$")


def test_markdown_headings_are_their_own_lines(tmp_path: Path) -> None:
    """A heading's closing #s go ("## Methods ##"), a "C#" stays; a lone '#' line no longer
    makes the paragraph after the blank line a heading (its pattern ran across lines, and took
    cubic time in a run of spaces: 45 s for a 3 KB file)."""
    path = tmp_path / "notes.md"
    path.write_text("Intro.\n\n## Methods ##\nWe used C#.\n\n#\n\nNot a heading.\n\n# Learning C#\nDone.\n"
                    + "# x" + " " * 3000 + "y\n", encoding="utf-8")
    doc = read_document(path)
    assert [s.title for s in doc.sections] == [None, "Methods", "Learning C#", "x" + " " * 3000 + "y"]


def test_an_excel_workbook_is_read_sheet_by_sheet(tmp_path: Path) -> None:
    """An .xlsx was refused ("save it as CSV (File, Save As)"): each sheet a section now, a row
    a line of cells the model reads as a table; dates as dates, formulas' results."""
    from workstation.core.phrases import say
    from workstation.tui.i18n import Texts

    rows: list[list[object]] = [
        ["Item", "Amount", "Due", "Paid", None, "Share"],
        ["Rent", 1200.5, dt.date(2026, 1, 15), True, None, ("percent", 0.125)],
        [None, None, None],  # a row of nothing: left out
        ["Total", ("formula", "SUM(B2:B2)", 1200.5), dt.datetime(2026, 3, 1, 13, 30), False, ("error", "#DIV/0!"),
         ("inline", "see <notes>")],
    ]
    notes: list[list[object]] = [[None, "Sum", 0.30000000000000004], [None, ("formula", 'B1&"!"', "Sum!"), 45000.0]]
    # hidden sheets (Excel's lookups and scratch work) are left out, named in a line of their own
    path = make_xlsx(tmp_path / "budget.xlsx", [("Budget 2026", rows), ("Notes", notes), ("Rates", [["USD", 32.5]]),
                                                ("Tmp", [["x"]])], hidden=("Rates", "Tmp"))
    doc = read_document(path, isolate=True)
    assert doc.kind == "xlsx"
    assert doc.text == ("Sheet: Budget 2026\n"
                        "Item | Amount | Due | Paid |  | Share\n"
                        "Rent | 1200.5 | 2026-01-15 | TRUE |  | 12.5%\n"
                        "Total | 1200.5 | 2026-03-01 13:30 | FALSE | #DIV/0! | see <notes>\n\n"
                        "Sheet: Notes\n"  # (begun in column B: no empty column A)
                        "Sum | 0.3\n"
                        "Sum! | 45000")
    assert [s.title for s in doc.sections] == ["Sheet: Budget 2026", "Sheet: Notes"]
    assert doc.cite(doc.sections[1].start, doc.sections[1].end) == "§ Sheet: Notes"
    assert say(doc.notes, Texts("tr").get) == ("2 gizli sayfa ('Rates', 'Tmp') dışarıda bırakıldı; okunmaları için "
                                               "Excel'de ya da LibreOffice'te gösterin.")
    # a workbook whose only sheet with cells is hidden: that one read (marked), not "contains no text"
    only = read_document(make_xlsx(tmp_path / "only.xlsx", [("Cover", []), ("Data", [["Rent", 1200]])], hidden=("Data",)))
    assert only.text == "Sheet: Data (hidden)\nRent | 1200" and only.notes == []
    mac = make_xlsx(tmp_path / "mac.xlsx", [("S", [[dt.date(2026, 1, 15)]])], date1904=True)  # an old Mac's dates
    assert read_document(mac).text == "Sheet: S\n2026-01-15"
    # a workbook under a Word name is read as the workbook, a Word file under an Excel name as Word
    renamed = tmp_path / "budget.docx"
    renamed.write_bytes(path.read_bytes())
    assert read_document(renamed).text == doc.text
    word = make_docx(tmp_path / "memo.docx", [("Intro", ["Bees make honey."])])
    (tmp_path / "memo.xlsx").write_bytes(word.read_bytes())
    assert read_document(tmp_path / "memo.xlsx").text == "Intro\nBees make honey."


def test_a_tables_facts_are_counted_exactly_whichever_reader_read_it(tmp_path: Path) -> None:
    """A small model given 3,000 rows of numbers wrote "revenue up 20%"; the program counts each
    table's facts (rows, columns, per column its kind: totals, dates, most common values)
    exactly, for a workbook's sheet and a CSV alike: 0.1 + 0.2 is 0.3, a Total row is not counted
    twice, a cell of another kind is left out and said, a CSV split by ; has decimal commas."""
    from workstation.core.summary_chunks import FACTS_LABEL, with_facts
    from workstation.core.table_facts import facts_text
    from workstation.tui.i18n import Texts

    rows: list[list[object]] = [
        ["Date", "Customer", "Amount (EUR)", "Share"],
        [dt.date(2026, 3, 1), "Ayla", 0.1, ("percent", 0.25)],
        [dt.date(2026, 1, 15), "Mert", 0.2, ("percent", 0.5)],
        [dt.date(2026, 2, 1), "Ayla", 1200, None],
        [dt.date(2026, 2, 2), "Ayla", "n/a", ("percent", 0.125)],
        ["Total", None, 1200.3, None],
    ]
    doc = read_document(make_xlsx(tmp_path / "sales.xlsx", [("Sales", rows), ("Note", [["By", "Ayla"]])]))
    assert [f.section for f in doc.facts] == [0]  # (a note of one line: no table)
    expected = ["Sheet: Sales: 4 rows under the header row, 4 columns. Rows that read Total or VAT (1) are left out of "
                "these figures.",
                "- Date (column A): dates from 2026-01-15 to 2026-03-01.",
                "- Customer (column B): text, 2 different values; most common: Ayla (3).",
                "- Amount (EUR) (column C): numbers; total 1,200.3, smallest 0.1, largest 1,200, average 400.10. Cells of "
                "another kind, left out of these figures: 1.",
                "- Share (column D): percentages; smallest 12.5%, largest 50%, average 29.17%. Filled in 3 of 4 rows."]
    assert facts_text(doc.facts[0]) == expected
    assert facts_text(doc.facts[0], Texts("tr").get)[3] == (
        "- Amount (EUR) (C sütunu): sayılar; toplam 1.200,3, en küçük 0,1, en büyük 1.200, ortalama 400,10. Bu rakamlara "
        "katılmayan, başka türde hücreler: 1.")
    csv = tmp_path / "sales.csv"  # the same saved as CSV by an English Excel, and by a Turkish one
    csv.write_text('Date,Customer,Amount (EUR),Share\n2026-03-01,Ayla,0.1,25%\n2026-01-15,Mert,0.2,50%\n'
                   '2026-02-01,Ayla,"1,200",\n2026-02-02,Ayla,n/a,12.5%\nTotal,,"1,200.30",\n', encoding="utf-8")
    assert facts_text(read_document(csv).facts[0]) == [expected[0].replace("Sheet: Sales", "sales.csv"), *expected[1:]]
    turkish = tmp_path / "satis.csv"
    turkish.write_text("Tarih;Müşteri;Tutar\n01.03.2026;Ayla;0,1\n15.01.2026;Mert;0,2\n01.02.2026;Ayla;1.200\n",
                       encoding="utf-8")
    assert facts_text(read_document(turkish).facts[0])[1:] == [
        "- Tarih (column A): dates from 2026-01-15 to 2026-03-01.", "- Müşteri (column B): text, 2 different values; most common: Ayla (2).",
        "- Tutar (column C): numbers; total 1,200.3, smallest 0.1, largest 1,200, average 400.10."]
    # the model reads them as the rows beside them write theirs (given 1,200.3 beside rows of 1.200, a
    # Turkish summary quoted the English way); a table of English figures keeps English ones
    assert "\n- Tutar (column C): numbers; total 1.200,3, smallest 0,1, largest 1.200, average 400,10.\n" in with_facts(
        read_document(turkish)).text
    tab = tmp_path / "satis.tsv"  # a Turkish Excel's tab-separated text: decimal commas too, by its cells
    tab.write_text("Kalem\tTutar\na\t1.200\nb\t15.000\nc\t350,75\n", encoding="utf-8")
    tsv_total = "- Tutar (column B): numbers; total 16,550.75, smallest 350.75, largest 15,000, average 5,516.92."
    assert facts_text(read_document(tab).facts[0])[2] == tsv_total
    def cell(shown: str) -> str:
        return f"<table:table-cell><text:p>{shown}</text:p></table:table-cell>"

    ods_rows = "".join(f"<table:table-row>{cell(a)}{cell(b)}</table:table-row>"
                       for a, b in [("Kalem", "Tutar"), ("a", "1.200"), ("b", "15.000"), ("c", "350,75")])
    ods = make_odf(tmp_path / "butce.ods", f'<table:table table:name="B">{ods_rows}</table:table>', kind="spreadsheet")
    assert facts_text(read_document(ods).facts[0])[2] == tsv_total  # (its cells as a Turkish LibreOffice shows them)
    # whole amounts only (1.200, 15.000, 250.000): no decimal comma to tell, and read as 1.2 the
    # total was 266.2 of 266,200; a mark before three digits is thousands, said to be a guess where
    # nothing else in the file says (1.250.000, a Turkish letter, a ; CSV, a column's 2.5 do)
    whole = "- Tutar (column B): numbers; total 266,200, smallest 1,200, largest 250,000, average 88,733.33."
    for body, said in [("Kalem\tTutar\na\t1.200\nb\t15.000\nc\t250.000\n",
                        whole + " A guess: 1.200 was read as 1,200, not 1.2 (nothing in the file says which)."),
                       ("Kalem\tTutar\na\t1.200\nb\t15.000\nc\t250.000\nd\t1.250.000\n",
                        "- Tutar (column B): numbers; total 1,516,200, smallest 1,200, largest 1,250,000, average 379,050."),
                       ("Müşteri\tTutar\na\t1.200\nb\t15.000\nc\t250.000\n", whole),
                       ("Kalem\tTutar\tOran\na\t1.200\t2.5\nb\t15.000\t3\nc\t250.000\t4\n",
                        "- Tutar (column B): numbers; total 266.2, smallest 1.2, largest 250, average 88.73.")]:
        tab.write_text(body, encoding="utf-8")
        assert facts_text(read_document(tab).facts[0])[2] == said
    assert facts_text(read_document(tab).facts[0], Texts("tr").get)[2] == (  # (no guess: the 2.5 beside it says)
        "- Tutar (B sütunu): sayılar; toplam 266,2, en küçük 1,2, en büyük 250, ortalama 88,73.")
    tab.write_text("Kalem\tTutar\na\t1.200\nb\t15.000\nc\t250.000\n", encoding="utf-8")
    assert facts_text(read_document(tab).facts[0], Texts("tr").get)[2].endswith(
        " Tahmin: 1.200, 1,2 değil 1.200 olarak okundu (dosyada hangisi olduğu yazmıyor).")
    # an Excel's text cells 1.200 beside numbers it stored (written 2.5 by the program, not by a
    # person): those say nothing of the decimal mark
    typed = make_xlsx(tmp_path / "typed.xlsx", [("S", [["Kalem", "Tutar", "Oran"], ["a", "1.200", 2.5],
                                                       ["b", "15.000", 3], ["c", "250.000", 4]])])
    assert facts_text(read_document(typed).facts[0])[2].startswith(whole)
    english = tmp_path / "amounts.csv"  # split by commas (an English Excel's): 1,200 is 1,200, no guess to say
    english.write_text('Item,Amount\na,"1,200"\nb,"15,000"\nc,"250,000"\n', encoding="utf-8")
    assert facts_text(read_document(english).facts[0])[2] == whole.replace("Tutar", "Amount")
    # a question about the table answered by these figures, under the model's reply (a column by its name or letter)
    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases

    amounts = read_document(english).facts
    assert say(counted_phrases(counted_answer("Amount toplamı kaç?", amounts)), Texts("tr").get) == (
        "Programın hesabı: Amount (B sütunu), 3 satırın tümü: toplam 266.200")
    assert say(counted_phrases(counted_answer("largest in column b, and how many rows?", amounts))) == (
        "Counted by the program: amounts.csv: 3 rows, Amount (column B), all 3 rows: largest 250,000")
    assert counted_answer("What does this list mean?", amounts) == []
    # what was counted is said (all the rows), and a question with a condition (a value of the table:
    # "for Ink", "from Ankara", "Ankara'dan") has it counted on those rows (the figures of all rows
    # answer another question); one the program cannot apply ("except Ankara") gets no line; the
    # figures as the file writes them (0.80, 65.00, not 0.8, 65)
    supplies = tmp_path / "supplies.csv"
    supplies.write_text("Item,City,Price\nPens,Ankara,0.80\nPaper,İzmir,12.50\nInk,Ankara,65.00\n"
                        "Tape,Bursa,1.20\nClips,İzmir,0.15\n", encoding="utf-8")
    stock = read_document(supplies).facts
    assert say(counted_phrases(counted_answer("smallest and largest price?", stock))) == (
        "Counted by the program: Price (column C), all 5 rows: largest 65.00, smallest 0.15")
    assert facts_text(stock[0])[3] == "- Price (column C): numbers; total 79.65, smallest 0.15, largest 65.00, average 15.93."
    assert [say(counted_phrases(counted_answer(q, stock))) for q in (
        "What is the total price for Ink?", "How many customers are from Ankara?", "Ankara'dan kaç satır var?")] == [
        "Counted by the program: Price where Item is Ink: 1 row (Ink), total 65.00",
        "Counted by the program: 2 rows where City is Ankara (Pens, Ink)",
        "Counted by the program: 2 rows where City is Ankara (Pens, Ink)"]
    assert say(counted_phrases(counted_answer("İzmirde toplam fiyat?", stock)), Texts("tr").get) == (
        "Programın hesabı: City değeri İzmir olan satırlarda Price: 2 satır (Paper, Clips), toplam 12,65")
    assert counted_answer("Total price except Ankara?", stock) == []
    assert counted_answer("How many rows are there?", stock)[0]["rows"] == "5"
    signs = tmp_path / "signs.csv"  # a minus before the currency sign, in parentheses after it, U+2212; Turkish %12
    signs.write_text('Item,Amount,Share\na,"-$1,200.50",%12\nb,$(300),%8\nc,\u2212100,%10\n', encoding="utf-8")
    assert facts_text(read_document(signs).facts[0])[2:] == [
        "- Amount (column B): numbers; total -1,600.5, smallest -1,200.5, largest -100, average -533.50.",
        "- Share (column C): percentages; smallest 8%, largest 12%, average 10%."]
    # columns named by their years are a header row (not a row, 2,024 added to each total); a last
    # row of SUMs with its label's cell blank is not counted again
    years = tmp_path / "regions.csv"
    years.write_text("Region,2024,2025\nNorth,100,200\nSouth,300,400\nEast,5,6\n,405,606\n", encoding="utf-8")
    titled = make_xlsx(tmp_path / "report.xlsx", [("Report", [["Sales report 2025"], [None], ["Item", "Amount"],
                                                               *[[f"r{i}", i] for i in range(3)]])])
    assert with_facts(read_document(titled)).text.split("\n")[2:] == [
        "Sheet: Report: 3 rows under the header row, 2 columns.", "- Item (column A): text, different in every row (r0 to r2).",
        "- Amount (column B): numbers; total 3, smallest 0, largest 2, average 1.", "", "Sales report 2025", "Item | Amount",
        "r0 | 0", "r1 | 1", "r2 | 2"]
    labelled = tmp_path / "spend.csv"  # a total's row named otherwise: "Total amount"; no 13th month
    labelled.write_text("Item,Amount,Paid\npens,1.5,2026-01-02\npaper,2,2026-13-45\nink,0.5,31.01.2026\n"
                        "Total amount,4,\n", encoding="utf-8")
    assert facts_text(read_document(labelled).facts[0])[2:] == [
        "- Amount (column B): numbers; total 4, smallest 0.5, largest 2, average 1.33.",
        "- Paid (column C): dates from 2026-01-02 to 2026-01-31. Cells of another kind, left out of these figures: 1."]
    assert facts_text(read_document(years).facts[0]) == [
        "regions.csv: 3 rows under the header row, 3 columns. Its last row, the sum of the rows above, is left out "
        "of these figures.", "- Region (column A): text, different in every row (North to East).",
        "- 2024 (column B): numbers; total 405, smallest 5, largest 300, average 135.",
        "- 2025 (column C): numbers; total 606, smallest 6, largest 400, average 202."]
    # what a summary reads: the facts before the rows; of a long table its first rows, the rest said to be left out
    long = make_xlsx(tmp_path / "ledger.xlsx", [("Data", [["Item", "Amount"], *[[f"r{i}", i] for i in range(150)]])])
    digest = with_facts(read_document(long))
    assert digest.text.split("\n")[:5] == ["Sheet: Data", "Facts counted by the program from every row:",
                                           "Sheet: Data: 150 rows under the header row, 2 columns.",
                                           "- Item (column A): text, different in every row (r0 to r149).",
                                           "- Amount (column B): numbers; total 11,175, smallest 0, largest 149, average 74.50."]
    assert digest.text.endswith("\nItem | Amount\n" + "\n".join(f"r{i} | {i}" for i in range(10))
                                + "\n[Rows 11 to 150 of this table are left out here; the figures above were counted "
                                  "from every row.]")
    assert with_facts(read_document(long), all_rows=True).text.endswith("\nr148 | 148\nr149 | 149")
    semicolons = tmp_path / "kasa.csv"  # a long table of decimal commas: its rows left out said so too
    semicolons.write_text("Kalem;Tutar\n" + "".join(f"r{i};1.000,5\n" for i in range(1500)), encoding="utf-8")
    assert with_facts(read_document(semicolons)).text.split("\n")[3:4] == [
        "- Tutar (column B): numbers; total 1.500.750,0, smallest 1.000,5, largest 1.000,5, average 1.000,5."]  # (its decimals)
    assert with_facts(read_document(semicolons)).text.endswith("\n[Rows 11 to 1.500 of this table are left out here; "
                                                              "the figures above were counted from every row.]")
    assert with_facts(digest).text == digest.text  # (its facts not said twice)
    notes = tmp_path / "notes.csv"  # 60 rows of two-line notes (120 lines) under blank lines: kept whole, a fact a line
    notes.write_text("\n\nItem,Note\n" + "".join(f'r{i},"Call back\nnext week"\n' for i in range(60)) + "\n\n",
                     encoding="utf-8")
    kept = with_facts(read_document(notes)).text
    assert "\n- Note (column B): text, the same in every row: Call back next week.\n\nItem,Note\nr0," in kept
    assert kept.endswith('\nr59,"Call back\nnext week"') and "left out here" not in kept
    assert digest.sections[0].end == len(digest.text) and digest.sections[0].lead == "Sheet: Data (continued)\nItem | Amount"
    # a cost table in a letter (Word, LibreOffice): counted as a sheet is, its facts after the section's heading
    import docx

    letter = docx.Document()
    letter.add_paragraph("Quote")
    letter.add_heading("Costs", 1)
    letter.add_paragraph("The move costs:")
    add_docx_table(letter, [("Item", "Cost"), ("Boxes", "120.50"), ("Van", "800"), ("Tape", "15"), ("Insurance", "300")])
    letter.save(tmp_path / "quote.docx")
    cost = ["Table 1: 4 rows under the header row, 2 columns.", "- Item: text, different in every row (Boxes to Insurance).",
            "- Cost: numbers; total 1,235.5, smallest 15, largest 800, average 308.88."]
    quote = read_document(tmp_path / "quote.docx")
    assert [facts_text(f) for f in quote.facts] == [cost] and quote.facts[0].section == 1
    assert with_facts(quote).text == "\n".join(["Quote", "", "Costs", FACTS_LABEL, *cost, "", "The move costs:",
                                                "Item | Cost", "Boxes | 120.50", "Van | 800", "Tape | 15",
                                                "Insurance | 300"])
    cells = "".join(f"<table:table-row>{cell(a)}{cell(b)}</table:table-row>" for a, b in
                    [("Item", "Cost"), ("Boxes", "120.50"), ("Van", "800"), ("Tape", "15"), ("Insurance", "300")])
    odt = make_odf(tmp_path / "quote.odt", f'<text:p>The move costs:</text:p><table:table>{cells}</table:table>')
    assert [facts_text(f) for f in read_document(odt).facts] == [cost]
    # a table on a slide (PowerPoint, Impress) too; each numbered as the document has them: a table of
    # two rows before it gets no facts, and the cost table is Table 2 all the same (it was said "Table 1")
    from workstation.core.table_facts import counted_answer

    deck = make_pptx(tmp_path / "move.pptx", [("Move", ["Costs below"], None)], table=[
        ["Item", "Cost"], ["Boxes", "120.50"], ["Van", "800"], ["Tape", "15"], ["Insurance", "300"]])
    assert [facts_text(f) for f in read_document(deck).facts] == [cost]
    two = "<table:table-row><table:table-cell><text:p>Date</text:p></table:table-cell></table:table-row>" * 2
    odp = make_odf(tmp_path / "move.odp", f'<draw:page><draw:frame><table:table>{two}</table:table></draw:frame></draw:page>'
                                          f'<draw:page><draw:frame><table:table>{cells}</table:table></draw:frame></draw:page>',
                   kind="presentation")
    second = [cost[0].replace("Table 1", "Table 2"), *cost[1:]]
    assert [facts_text(f) for f in read_document(odp).facts] == [second]
    letter.tables[0]._tbl.addprevious(letter.add_table(rows=2, cols=1)._tbl)  # (a table of two rows first)
    letter.save(tmp_path / "quote2.docx")
    assert [facts_text(f) for f in read_document(tmp_path / "quote2.docx").facts] == [second]
    # a question about a text's table only where it names the table or a column: "how many pages, in
    # total?" of a quote showed its cost table's total; of a CSV or sheet, any question is of its table
    assert counted_answer("How many pages in total?", quote.facts) == []
    assert counted_answer("What is the total of table 2?", quote.facts) == []
    assert [i["figure"] for i in counted_answer("What is the table's total?", quote.facts)] == ["1,235.5"]
    assert [i["figure"] for i in counted_answer("Cost toplamı?", quote.facts)] == ["1,235.5"]
    assert [i["figure"] for i in counted_answer("total of table 2?", read_document(odp).facts)] == ["1,235.5"]
    assert [i["figure"] for i in counted_answer("What is the total?", amounts)] == ["266,200"]


INVOICES = ("Invoice,Client,Amount,Status\nINV-101,Acme,450.00,paid\nINV-102,Birch,2380.50,unpaid\n"
            "INV-103,Cedar,1200.00,paid\nINV-104,Acme,3200.00,unpaid\nINV-105,Delta,780.25,unpaid\n")


def test_a_question_with_a_condition_has_its_rows_counted(tmp_path: Path) -> None:
    """"Which unpaid invoices are over 1,000 EUR, and what is their total?": the default model
    said "514 invoices, $30 million", and the program said nothing (its facts were of all rows).
    The rows a question names (a value of a text column, a threshold on a column of numbers, both)
    are counted by the program, in English and Turkish, read as the table writes its numbers; a
    condition it cannot apply gets nothing, never a figure of other rows."""
    from workstation.core.phrases import say
    from workstation.core.summary_chunks import with_counted, with_facts, without_counted
    from workstation.core.table_facts import counted_answer, counted_phrases, facts_record
    from workstation.tui.i18n import Texts

    invoices = tmp_path / "invoices.csv"
    invoices.write_text(INVOICES, encoding="utf-8")
    facts = read_document(invoices).facts

    def line(question: str, lang: str = "en", tables: list | None = None) -> str:
        return say(counted_phrases(counted_answer(question, tables or facts)), Texts(lang).get)

    question = "Which unpaid invoices are over 1,000 EUR, and what is their total?"
    assert line(question) == ("Counted by the program: Amount where Status is unpaid and Amount over 1,000: "
                              "2 rows (INV-102, INV-104), total 5,580.50")
    # a value only, a threshold only (its other words: "more than", "at least", "between")
    assert line("How many invoices does Acme have?") == "Counted by the program: 2 rows where Client is Acme (INV-101, INV-104)"
    assert line("What is the average of the invoices under 1,000?") == (
        "Counted by the program: Amount where Amount under 1,000: 2 rows (INV-101, INV-105), average 615.13")  # (615.125 rounded half up, as people round)
    assert line("total of invoices between 500 and 2,500?") == (
        "Counted by the program: Amount where Amount between 500 and 2,500: 3 rows (INV-102, INV-103, INV-105), "
        "total 4,360.75")
    assert line("Which invoices are at least 1,200 and paid?") == (
        "Counted by the program: 1 row where Status is paid and Amount at least 1,200 (INV-103)")
    # matching nothing: none said; a threshold no row meets: 0 rows, no figure
    assert line("total of unpaid invoices over 100,000?") == (
        "Counted by the program: 0 rows where Status is unpaid and Amount over 100,000")
    # what the program cannot apply: nothing (not the figures of all rows)
    for cannot in ("Total of invoices not paid?", "Which clients have more than 1 invoice?", "total over 1,00,0?",
                   "Total of the unpaid ones except Acme?"):
        assert counted_answer(cannot, facts) == [], cannot
    # in Turkish, of a table written with decimal commas (a Turkish Excel's ; CSV)
    faturalar = tmp_path / "faturalar.csv"
    faturalar.write_text("Fatura;Müşteri;Tutar;Durum\nF-1;Acar;450,00;ödendi\nF-2;Bilgin;2.380,50;ödenmedi\n"
                         "F-3;Cengiz;1.200,00;ödendi\nF-4;Acar;3.200,00;ödenmedi\nF-5;Demir;780,25;ödenmedi\n",
                         encoding="utf-8")
    turkish = read_document(faturalar).facts
    assert line("Ödenmedi durumundaki, tutarı 1.000'den fazla olan faturaların toplamı nedir?", "tr", turkish) == (
        "Programın hesabı: Durum değeri ödenmedi ve Tutar 1.000 üzeri olan satırlarda Tutar: 2 satır (F-2, F-4), "
        "toplam 5.580,50")
    assert line("1000 üzeri kaç fatura var?", "tr", turkish) == (
        "Programın hesabı: Tutar 1.000 üzeri olan 3 satır (F-2, F-3, F-4)")
    assert line("500'den az olanların toplamı?", "tr", turkish) == (
        "Programın hesabı: Tutar 500 altı olan satırlarda Tutar: 1 satır (F-1), toplam 450,00")
    # given to the model beside the facts, as the table writes its figures; not kept in the document put back
    text = with_facts(read_document(faturalar), all_rows=True).text
    asked = with_counted(text, turkish, counted_answer("ödenmedi olanlar 1.000'den fazla toplam?", turkish))
    said = ("- For this question, the program counted: Tutar where Durum is ödenmedi and Tutar over 1.000: "
            "2 rows (F-2, F-4), total 5.580,50.")
    assert asked.split("\n")[5:8] == ["- Durum (column D): text, 2 different values; most common: ödenmedi (3), ödendi (2).",
                                      said, ""]
    assert without_counted(asked) == text and with_counted(asked, turkish, []) == text
    # kept as JSON (F6's summaries): no rows in it
    import json

    assert "cells" not in json.loads(json.dumps(facts_record(facts[0]))) and len(facts[0].cells) == 5


def test_a_word_tables_rows_named_by_a_value_are_counted_as_a_csvs_are(tmp_path: Path) -> None:
    """"What is the total of the unpaid invoices?" of a Word letter's invoice table got no count
    where the same table as a CSV did: a text's table was asked about only where the question
    named the table or a column of numbers ("total pages?" of a quote showed its cost table's
    total). A value of its rows ("unpaid", "Acme") names it too; a question that names nothing of
    it still gets nothing."""
    import docx

    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases
    from workstation.tui.i18n import Texts

    letter = docx.Document()
    letter.add_paragraph("Open invoices of March. The pages below list them.")
    table = letter.add_table(rows=6, cols=4)
    for r, row in enumerate(line.split(",") for line in INVOICES.split()):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    letter.save(tmp_path / "invoices.docx")
    (tmp_path / "invoices.csv").write_text(INVOICES, encoding="utf-8")
    word, csv = (read_document(tmp_path / f"invoices.{kind}").facts for kind in ("docx", "csv"))
    def line(question: str, tables: list) -> str:
        return say(counted_phrases(counted_answer(question, tables)), Texts("en").get)

    for question, said in [("What is the total of the unpaid invoices?",
                            "Amount where Status is unpaid: 3 rows (INV-102, INV-104, INV-105), total 6,360.75"),
                           ("How many invoices does Acme have?", "2 rows where Client is Acme (INV-101, INV-104)")]:
        assert line(question, word) == line(question, csv) == f"Counted by the program: {said}", question
    for unasked in ("How many pages in total?", "What is the total?", "How many people came in total?"):
        assert counted_answer(unasked, word) == [], unasked


FATURALAR = ("Fatura;Müşteri;Tutar;Durum\nF-1;Acar;450,00;ödendi\nF-2;Bilgin;2.380,50;ödenmedi\n"
             "F-3;Cengiz;1.200,00;ödendi\nF-4;Acar;3.200,00;ödenmedi\nF-5;Demir;780,25;ödenmedi\n")


def test_a_turkish_threshold_with_its_noun_after_it_is_applied(tmp_path: Path) -> None:
    """"1000 TL'den fazla faturalar" (Turkish puts the noun after the threshold) counted nothing:
    "faturalar" begins with the column's name "Fatura", read as "more than 3 invoices" (a count of
    things). A figure with a unit, or far above the table's rows, is no count; "3'ten fazla
    faturası olan" and "more than 1 invoice" still are (nothing counted, never a wrong figure)."""
    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases
    from workstation.tui.i18n import Texts

    faturalar = tmp_path / "faturalar.csv"
    faturalar.write_text(FATURALAR, encoding="utf-8")
    turkish = read_document(faturalar).facts
    invoices = tmp_path / "invoices.csv"
    invoices.write_text(INVOICES, encoding="utf-8")
    english = read_document(invoices).facts

    def line(question: str, lang: str, tables: list) -> str:
        return say(counted_phrases(counted_answer(question, tables)), Texts(lang).get)

    assert line("1000 TL'den fazla faturalar", "tr", turkish) == (
        "Programın hesabı: Tutar 1.000 üzeri olan 3 satır (F-2, F-3, F-4)")
    assert line("1.000 ile 2.500 arası faturalar", "tr", turkish) == (
        "Programın hesabı: Tutar 1.000 ile 2.500 arası olan 2 satır (F-2, F-3)")
    assert line("500 TL ve altı faturalar", "tr", turkish) == "Programın hesabı: Tutar en çok 500 olan 1 satır (F-1)"
    assert line("1000'den fazla faturaların toplamı", "tr", turkish) == (
        "Programın hesabı: Tutar 1.000 üzeri olan satırlarda Tutar: 3 satır (F-2, F-3, F-4), toplam 6.780,50")
    assert line("over 1,000 EUR invoices", "en", english) == (
        "Counted by the program: 3 rows where Amount over 1,000 (INV-102, INV-103, INV-104)")
    # a count of things: nothing (the amounts over 3 are no answer)
    for question, tables in (("3'ten fazla faturası olan müşteriler", turkish), ("2'den fazla faturası olan kaç müşteri var?", turkish),
                             ("Which clients have more than 1 invoice?", english),
                             ("clients with more than 2 invoices", english),
                             ("invoices more than 1.5 days late", english), ("more than 1000 days late invoices", english)):
        assert counted_answer(question, tables) == [], question


def test_a_condition_the_program_cannot_apply_gets_no_figure_of_all_rows(tmp_path: Path) -> None:
    """"What is the total after 2026-01-01?", "ödenmemiş faturaların toplamı" of an English table,
    "Ankara'dan" where the cells say "Ankara Ltd": each was answered "Amount, all 3 rows: total 60",
    which a small model repeats as the answer. A condition the program cannot apply (a date with
    before/after, a threshold with no figure it reads, a negation, a month or a place it does not
    find) gets nothing; a plain question still its figures of all rows."""
    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases

    table = tmp_path / "clients.csv"
    table.write_text("Client,Amount,Date,Month\nAnkara Ltd,10,2026-01-05,Mart\nIzmir AS,20,2025-12-01,Nisan\n"
                     "Bursa Co,30,2026-02-01,Mart\n", encoding="utf-8")
    facts = read_document(table).facts

    def line(question: str) -> str:
        return say(counted_phrases(counted_answer(question, facts)))

    for cannot in ("What is the total after 2026-01-01?", "total since last month?", "toplam 2025'ten sonra",
                   "Ocak ayından önce toplam?", "total over a thousand?", "bin liradan fazla olanların toplamı",
                   "ödenmemiş faturaların toplamı", "total of the ones not paid?", "Antalya'dan toplam",
                   "total for March?", "total without VAT?", "How many rows before 15.01.2026?"):
        assert counted_answer(cannot, facts) == [], cannot
    all_rows = "Counted by the program: Amount (column B), all 3 rows: total 60"
    for plain in ("what is the total?", "What is the total of column B?", "Amount'un toplamı", "Tabloda toplam ne kadar?"):
        assert line(plain) == all_rows, plain
    # values it finds are applied as before
    assert line("Ankara Ltd'den toplam") == "Counted by the program: Amount where Client is Ankara Ltd: 1 row (Ankara Ltd), total 10"
    assert line("Ankara'dan toplam") == line("Ankara Ltd'den toplam")  # (its first word: the only value so)
    assert line("Mart'taki toplam") == (
        "Counted by the program: Amount where Month is Mart: 2 rows (Ankara Ltd, Bursa Co), total 40")


def test_two_thresholds_joined_by_and_are_both_applied(tmp_path: Path) -> None:
    """"over 1,000 and under 3,000": read as "1,000 and under" (at most 1,000), it counted the
    invoices of 1,000 or less, the opposite rows; "1,000 and under" with no figure after it is
    still "at most 1,000"."""
    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases

    invoices = tmp_path / "invoices.csv"
    invoices.write_text(INVOICES, encoding="utf-8")
    facts = read_document(invoices).facts

    def line(question: str) -> str:
        return say(counted_phrases(counted_answer(question, facts)))

    assert line("How many invoices over 1,000 and under 3,000?") == (
        "Counted by the program: 2 rows where Amount over 1,000 and Amount under 3,000 (INV-102, INV-103)")
    assert line("How many invoices under 1,000 and over 500?") == (
        "Counted by the program: 1 row where Amount under 1,000 and Amount over 500 (INV-105)")
    assert line("How many invoices of 1,000 and under?") == (
        "Counted by the program: 2 rows where Amount at most 1,000 (INV-101, INV-105)")


def test_a_percentage_written_with_its_sign_first_is_a_percentage(tmp_path: Path) -> None:
    """"%10'dan fazla" (Turkish writes the % first): read as a plain 10, it was set on the amounts'
    column, "Tutar 10 üzeri": every invoice. It is the percentages' column's, as "10%'dan" is."""
    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases
    from workstation.tui.i18n import Texts

    faturalar = tmp_path / "faturalar.csv"
    faturalar.write_text("Fatura;Tutar;İndirim\nF-1;450,00;%5\nF-2;2.380,50;%15\nF-3;1.200,00;%20\n",
                         encoding="utf-8")
    facts = read_document(faturalar).facts
    expected = "Programın hesabı: İndirim %10 üzeri olan 2 satır (F-2, F-3)"
    for question in ("İndirimi %10'dan fazla olan kaç fatura var?", "İndirimi 10%'dan fazla olan kaç fatura var?"):
        assert say(counted_phrases(counted_answer(question, facts)), Texts("tr").get) == expected, question


def test_a_condition_not_wanted_or_on_a_table_read_in_part_gets_no_count() -> None:
    """"Acar hariç" (except Acar) is no "Acar": nothing counted, not Acar's invoices; a table read
    in part (``cut``) has its rows counted on none of a question's conditions, as its other rows are
    not there to count."""
    from workstation.core.table_facts import counted_answer, table_facts

    rows = [["Fatura", "Müşteri", "Tutar"], ["F-1", "Acar", "450,00"], ["F-2", "Bilgin", "2.380,50"],
            ["F-3", "Acar", "1.200,00"]]
    whole = table_facts("faturalar.csv", 0, rows, usual_comma=True)
    assert whole is not None
    assert counted_answer("Acar faturalarının toplamı?", [whole])[0]["figures"] == [{"what": "total", "figure": "1,650.00"}]
    assert counted_answer("Acar hariç faturaların toplamı?", [whole]) == []
    assert counted_answer("Acar dışındaki faturaların toplamı?", [whole]) == []
    part = table_facts("faturalar.csv", 0, rows, cut=True, usual_comma=True)
    assert part is not None and part.cells
    assert counted_answer("Acar faturalarının toplamı?", [part]) == []
    assert counted_answer("1.000 TL üzeri kaç fatura var?", [part]) == []


def test_a_figure_with_its_thousands_set_apart_by_spaces_is_read_whole(tmp_path: Path) -> None:
    """"more than 1 000" (thousands set apart by a space, as many forms write them) was read "over
    1": every invoice counted."""
    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases

    invoices = tmp_path / "invoices.csv"
    invoices.write_text(INVOICES, encoding="utf-8")
    facts = read_document(invoices).facts
    for question in ("How many invoices are more than 1 000?", "How many invoices are more than 1\u00a0000.00?"):
        assert say(counted_phrases(counted_answer(question, facts))) == (
            "Counted by the program: 3 rows where Amount over 1,000 (INV-102, INV-103, INV-104)"), question


def test_cells_with_their_thousands_set_apart_by_spaces_are_numbers(tmp_path: Path) -> None:
    """A column of "12 500,50" (a French CSV) or "1 000.25" (a Word table) was text: "Coût: text,
    different in every row (12 500,50 to …)" and no total. Their groups of three (after a space, a
    no-break space or a narrow one) are read as thousands, the decimal mark as the column's other
    cells write it; "12 34" is no number, and a question's "more than 1 000" counts the same rows."""
    import docx

    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases, facts_text

    french = tmp_path / "couts.csv"
    french.write_text("Poste;Coût;Code\nLoyer;12 500,50;12 34\nPapier;1\u00a0250,25;56 78\nTaxis;980,00;90 12\n"
                      "Écrans;1\u202f234\u202f567,10;34 56\n", encoding="utf-8")
    facts = read_document(french).facts
    assert facts_text(facts[0])[2:] == [
        "- Coût (column B): numbers; total 1,249,297.85, smallest 980.00, largest 1,234,567.10, average 312,324.46.",
        "- Code (column C): text, different in every row (12 34 to 34 56)."]
    assert say(counted_phrases(counted_answer("How many rows have a Coût of more than 1 000?", facts))) == (
        "Counted by the program: 3 rows where Coût over 1,000 (Loyer, Papier, Écrans)")
    letter = docx.Document()
    letter.add_paragraph("The move costs:")
    add_docx_table(letter, [("Item", "Cost"), ("Boxes", "1 000.25"), ("Van", "12 800.50"), ("Tape", "15.75"),
                            ("Insurance", "300")])
    letter.save(tmp_path / "quote.docx")
    quote = read_document(tmp_path / "quote.docx").facts
    assert facts_text(quote[0])[2] == "- Cost: numbers; total 14,116.5, smallest 15.75, largest 12,800.5, average 3,529.13."
    assert say(counted_phrases(counted_answer("Which Cost is more than 1\u202f000 in the table?", quote))) == (
        "Counted by the program: 2 rows where Cost over 1,000 (Boxes, Van)")


def test_a_web_pages_table_has_its_facts_counted_as_a_word_documents(tmp_path: Path) -> None:
    """A cost table in an .html (.htm) page: its rows 'a | b' and its facts counted as a Word
    document's are (``document_tables``), so the line under a reply says the program's total; it
    had none, each cell a line of its own. Cells spanning columns or rows are in each of them (as a
    Word table's merged cells); a table with a table inside a row is numbered, not counted."""
    from workstation.core.summary_chunks import FACTS_LABEL, with_facts
    from workstation.core.table_facts import counted_answer, facts_text

    page = tmp_path / "quote.htm"
    page.write_text("<html><head><title>x</title></head><body><p>Quote</p><h1>Costs</h1><p>The move costs:</p>"
                    "<table><thead><tr><th>Item</th><th>Cost</th></tr></thead><tbody>"
                    "<tr><td>Boxes</td><td>120.50</td></tr><tr><td>Van</td><td>800</td></tr>"
                    "<tr><td>Tape</td><td>15</td></tr><tr><td>Insurance</td><td>300</td></tr></tbody></table>"
                    "</body></html>", encoding="utf-8")
    cost = ["Table 1: 4 rows under the header row, 2 columns.", "- Item: text, different in every row (Boxes to Insurance).",
            "- Cost: numbers; total 1,235.5, smallest 15, largest 800, average 308.88."]
    quote = read_document(page)
    assert [facts_text(f) for f in quote.facts] == [cost] and quote.facts[0].section == 1
    assert with_facts(quote).text == "\n".join(["Quote", "", "Costs", FACTS_LABEL, *cost, "", "The move costs:",
                                                "Item | Cost", "Boxes | 120.50", "Van | 800", "Tape | 15",
                                                "Insurance | 300"])
    assert [i["figure"] for i in counted_answer("What is the table's total?", quote.facts)] == ["1,235.5"]
    spans = tmp_path / "budget.html"
    spans.write_text("<table><tr><td>x<table><tr><td>1</td></tr></table></td></tr><tr><td>y</td></tr></table>"
                     "<table><tr><th>Team</th><th>Quarter</th><th>Cost</th></tr>"
                     "<tr><td rowspan=2>Sales</td><td>Q1</td><td>100</td></tr><tr><td>Q2</td><td>200</td></tr>"
                     "<tr><td colspan=2>Office</td><td>50</td></tr></table>", encoding="utf-8")
    budget = read_document(spans)
    assert "Sales | Q1 | 100\nSales | Q2 | 200\nOffice | Office | 50" in budget.text
    assert [f.title for f in budget.facts] == ["Table 2"]
    assert facts_text(budget.facts[0])[-1] == "- Cost: numbers; total 350, smallest 50, largest 200, average 116.67."


def test_a_workbook_is_read_up_to_its_cells_with_a_line_saying_so(tmp_path: Path) -> None:
    """A sheet of thousands of rows is read up to the workbook's cells, and says where it
    stopped; a short sheet after it is still read (a share is kept for each sheet after one)."""
    from workstation.core.phrases import say
    from workstation.core.summarize import render_markdown

    data: list[list[object]] = [[f"r{i}", i, i * 2.5] for i in range(2000)]
    path = make_xlsx(tmp_path / "ledger.xlsx", [("Data", data), ("Summary", [["Total", 4997500]])])
    doc = read_document(path, Limits(max_cells=3000))
    lines = doc.text.split("\n")
    assert lines[1] == "r0 | 0 | 0" and lines[750] == "r749 | 749 | 1872.5"  # 3,000 cells less 750 kept for Summary
    assert lines[751] == "[Only the first 750 rows of this sheet were read: a workbook is read up to 3,000 cells.]"
    assert doc.text.endswith("\n\nSheet: Summary\nTotal | 4997500")
    # said where the person sees it too: the attach line, the summary's head (its text alone said it)
    assert say(doc.notes) == "Only part of this workbook was read (a workbook is read up to 3,000 cells); cut short: 'Data'."
    markdown = render_markdown(doc, "", [], False, {"calls": 0, "document_tokens": 0, "total_ms": 0})
    assert markdown.split("\n")[2] == "> " + say(doc.notes)
    assert "[Only" not in read_document(path).text  # (6,002 cells: all read by default)


def test_hostile_workbooks_and_slides_are_one_sentence(tmp_path: Path, unzipped: list[str]) -> None:
    xl = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    whole = make_xlsx(tmp_path / "whole.xlsx", [("S", [["Rent", 1200]] * 200)])
    cut = tmp_path / "cut.xlsx"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    _fails_fast(cut, r"^'cut.xlsx' is a damaged or truncated XLSX file \(its end is missing\); copy or download it again\.$")
    unzipped.clear()
    bomb = make_xlsx(tmp_path / "bomb.xlsx", [("S", [])], sheet_xml={
        "S": f'<worksheet xmlns="{xl}"><sheetData>' + " " * (48 << 20) + "</sheetData></worksheet>"})
    _fails_fast(bomb, r"zip bomb")
    assert unzipped == []  # refused from the zip's directory
    # a sheet of 200,000 empty (styled) cells before one with text: streamed past, not read as rows
    empty = "".join(f'<row r="{r}">' + "".join(f'<c r="{c}{r}" s="1"/>' for c in "ABCDEFGHIJ") + "</row>" for r in range(1, 20_001))
    blank = make_xlsx(tmp_path / "blank.xlsx", [("Empty", []), ("Text", [["Rent"]])],
                      sheet_xml={"Empty": f'<worksheet xmlns="{xl}"><sheetData>{empty}</sheetData></worksheet>'})
    assert read_document(blank).text == "Sheet: Text\nRent"
    # entities that would expand to 100 MB ("billion laughs"): refused, never expanded
    laughs = ('<?xml version="1.0"?><!DOCTYPE worksheet [<!ENTITY a "aaaaaaaaaa">'
              + "".join(f'<!ENTITY {chr(98 + i)} "' + f"&{chr(97 + i)};" * 10 + '">' for i in range(7))
              + f']><worksheet xmlns="{xl}"><sheetData><row><c t="inlineStr"><is><t>&h;</t></is></c></row></sheetData></worksheet>')
    _fails_fast(make_xlsx(tmp_path / "laughs.xlsx", [("S", [])], sheet_xml={"S": laughs}), r"^'laughs.xlsx' is not a valid XLSX file \(")
    locked = tmp_path / "locked.xlsx"  # Excel's password protection: an OLE2 file, not a zip
    locked.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(4096))
    _fails_fast(locked, r"^'locked.xlsx' is protected by a password, or saved in Office's format from before 2007; .* as XLSX\.$")
    letter = tmp_path / "letter.pptx"
    letter.write_text("Dear colleague.", encoding="utf-8")
    _fails_fast(letter, r"^'letter.pptx' is not a real PPTX file: its content is something else \(perhaps a file renamed to \.pptx\)")
    for name, said in (("other.xlsx", "not an Excel workbook"), ("other.pptx", "not a PowerPoint presentation")):
        with zipfile.ZipFile(tmp_path / name, "w") as zf:
            zf.writestr("hello.txt", "hi")
        _fails_fast(tmp_path / name, rf"^'{name}' is a zip archive but {said}; open it in its program and save it as")
    _fails_fast(make_xlsx(tmp_path / "broken.xlsx", [("S", [])], sheet_xml={"S": "<worksheet><sheetData><row>"}),
                r"^'broken.xlsx' is not a valid XLSX file \(")
    # a 2 KB sheet of 300 cells, each repeated a billion times, each unrolled up to the sheet's
    # cells (30 million: 'needs more memory'); the row wider than the cells left is said, not a
    # sheet gone without a word (a first sheet: "contains no text"), and the sheet after it read
    cells = "".join(f'<table:table-cell table:number-columns-repeated="1000000000"><text:p>v{i}</text:p>'
                    "</table:table-cell>" for i in range(300))
    wide = make_odf(tmp_path / "wide.ods", f'<table:table table:name="W"><table:table-row>{cells}</table:table-row>'
                    '</table:table><table:table table:name="Short"><table:table-row><table:table-cell><text:p>kept'
                    "</text:p></table:table-cell></table:table-row></table:table>", kind="spreadsheet")
    assert read_document(wide, Limits(max_memory_bytes=64 * 2**20), isolate=True).text == (
        "Sheet: W\n[This sheet was not read: its first row holds more cells than were left of the 100,000 a "
        "workbook is read up to.]\n\nSheet: Short\nkept")


def test_a_powerpoint_presentation_is_read_slide_by_slide(tmp_path: Path) -> None:
    """A .pptx was refused ("save it as PDF"): each slide a section 'Slide 3: title', its text
    boxes and tables, then its speaker notes; slide numbers left out."""
    path = make_pptx(tmp_path / "review.pptx", [("Budget 2026", ["Rent up 5%", "Staff costs flat"], "Start with the rent.\nThen staff."),
                                               ("Next steps", ["Sign the lease"], None)],
                     table=[["Item", "Cost"], ["Rent", "1,200"]], hidden=(2,))
    doc = read_document(path)
    assert doc.kind == "pptx"
    assert doc.text == ("Slide 1: Budget 2026\nRent up 5%\nStaff costs flat\nItem | Cost\nRent | 1,200\n"
                        "Speaker notes: Start with the rent.\nThen staff.\n\n"
                        "Slide 2: Next steps (hidden)\nSign the lease")
    assert [s.title for s in doc.sections] == ["Slide 1: Budget 2026", "Slide 2: Next steps (hidden)"]


def test_an_isolated_reader_whose_parent_is_gone_ends_without_a_traceback(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A batch killed with kill -9 while its reader read: the reader's answer met a closed pipe
    and printed BrokenPipeError's traceback on the terminal the batch was started from."""
    import multiprocessing as mp

    from workstation.core.documents import isolated_reader

    letter = tmp_path / "letter.txt"
    letter.write_text("Dear team, the canteen closes at two on Fridays.\n", encoding="utf-8")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    parent.close()  # (the batch, gone)
    reader = ctx.Process(target=isolated_reader, args=(child, str(letter), Limits()), daemon=True)
    reader.start()
    child.close()
    reader.join(120)
    assert reader.exitcode == 0 and "Traceback" not in capfd.readouterr().err


def test_a_word_tables_facts_read_in_turkish_on_a_turkish_screen(tmp_path: Path) -> None:
    """A Turkish screen said "Table 1: 6 rows…", "dates from 2026-01-03" and "ortalama 18.500,00"
    of a rent table in a Word document, and "Programın hesabı: Table 1: 6 satır" under the reply:
    the table's name, its days and its average are said in the UI's language, the average with
    decimals only where its figures have them."""
    import docx

    from workstation.core.phrases import say
    from workstation.core.table_facts import counted_answer, counted_phrases, facts_text
    from workstation.tui.i18n import Texts

    path = tmp_path / "kira_odemeleri.docx"
    word = docx.Document()
    word.add_paragraph("Kira ödemeleri")
    months = ["Ocak", "Şubat", "Mart", "Nisan", "Mayıs", "Haziran"]
    amounts = ["9.250", "27.750", "18.500", "18.500", "18.500", "18.500"]
    table = word.add_table(rows=7, cols=4)
    for i, row in enumerate([["Ay", "Ödeme Tarihi", "Tutar (TL)", "Açıklama"],
                             *[[m, f"0{d}.0{i + 1}.2026", a, "kira"] for i, (m, a, d) in
                               enumerate(zip(months, amounts, [3, 2, 2, 2, 2, 2], strict=True))]]):
        for j, text in enumerate(row):
            table.cell(i, j).text = text
    word.save(str(path))
    facts = read_document(path).facts
    turkish = facts_text(facts[0], Texts("tr").get)
    assert turkish[0] == "Tablo 1: başlık satırının altında 6 satır, 4 sütun."
    assert "03.01.2026" in turkish[2] and "02.06.2026" in turkish[2]
    assert "toplam 111.000" in turkish[3] and "ortalama 18.500." in turkish[3]
    assert facts_text(facts[0])[0].startswith("Table 1: 6 rows")  # (the model's and English: as they were)
    assert "average 18,500." in facts_text(facts[0])[3]
    counted = counted_answer("Tabloda kaç satır var?", facts)
    line = say(counted_phrases(counted), Texts("tr").get)
    assert "Table" not in line and "Tablo 1: 6 satır" in line
