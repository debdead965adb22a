"""Documents the tests write with real libraries: PDFs (pypdf), DOCX (python-docx), texts."""

from __future__ import annotations

import inspect
import textwrap
import zipfile
from pathlib import Path


def make_pdf(path: Path, pages: list[str], *, text_layer: bool = True) -> Path:
    """A PDF written by pypdf: one page per string, Helvetica text (or no text at all)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject, NumberObject

    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(612, 792)
        if text_layer:
            lines = []
            for para in text.split("\n"):
                lines.extend(textwrap.wrap(para, 95) or [""])
            esc = [ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for ln in lines]
            ops = "BT /F1 9 Tf 11 TL 40 760 Td " + " ".join(f"({ln}) Tj T*" for ln in esc) + " ET"
        else:  # a "scanned" page: a picture of the page (a 2x2 grey image), no text operators
            ops = "q 500 0 0 700 40 40 cm /Im1 Do Q"
        stream = DecodedStreamObject()
        stream.set_data(ops.encode("cp1252", "replace"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        resources = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})})
        if not text_layer:
            picture = DecodedStreamObject()
            picture.set_data(bytes([128, 200, 200, 128]))
            picture.update({
                NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Image"),
                NameObject("/Width"): NumberObject(2), NameObject("/Height"): NumberObject(2),
                NameObject("/ColorSpace"): NameObject("/DeviceGray"), NameObject("/BitsPerComponent"): NumberObject(8),
            })
            resources[NameObject("/XObject")] = DictionaryObject({NameObject("/Im1"): writer._add_object(picture)})
        page[NameObject("/Resources")] = resources
    with path.open("wb") as out:
        writer.write(out)
    return path


def make_docx(path: Path, sections: list[tuple[str, list[str]]]) -> Path:
    """A DOCX written by python-docx: a Heading 1 and its paragraphs per section."""
    import docx

    doc = docx.Document()
    for title, paras in sections:
        doc.add_heading(title, level=1)
        for para in paras:
            doc.add_paragraph(para)
    doc.save(str(path))
    return path


def make_docx_bomb(path: Path, size: int = 1 << 30) -> Path:
    """A DOCX-shaped zip whose document.xml unpacks to ``size`` bytes of zeros (~1 MB on disk)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with zf.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                member.write(block)
    return path


SUBJECT_PARAGRAPHS = [
    "Honeybees live in colonies. A honeybee colony has one queen, thousands of worker bees and "
    "some drones. The honeybees build a hive of wax combs.",
    "Worker honeybees collect nectar and pollen from flowers. The honeybees turn the nectar into "
    "honey and store the honey in the wax combs of the hive.",
    "Honeybees pollinate crops such as apples, almonds and clover. Farmers rent honeybee hives "
    "so the honeybees pollinate their fields.",
    "Honeybees talk to each other with a waggle dance. The dance tells other honeybees where the "
    "flowers are and how far away they are.",
    "In winter the honeybees cluster together in the hive and eat the honey they stored. The "
    "queen honeybee starts laying eggs again in spring.",
    "Beekeepers care for honeybees. A beekeeper checks the hive for disease, mites and honey, "
    "and harvests the extra honey in summer.",
]


def honeybee_text(repeat: int = 6) -> str:
    """A long text whose subject (honeybees) is in every paragraph."""
    paras = []
    for i in range(repeat):
        for j, p in enumerate(SUBJECT_PARAGRAPHS):
            paras.append(f"{p} (Note {i * len(SUBJECT_PARAGRAPHS) + j + 1}.)")
    return "\n\n".join(paras) + "\n"


def english_text() -> str:
    """Varied English prose that every machine has: stdlib module docstrings, in a fixed order."""
    import argparse
    import csv
    import logging

    return "\n\n".join(inspect.getdoc(m) or "" for m in (argparse, logging, csv))
