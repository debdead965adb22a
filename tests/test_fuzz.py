"""Bounded fuzz runs (hypothesis) over the parsers that read untrusted input: the GGUF
pre-flight, the profile loader and the document readers. Only the module's own clear error may
come out; never another exception, a hang or a crash. Each test counts its own cases and
checks them itself (both refused and accepted inputs must occur, or the fuzzing proves
little); ``pytest -s`` shows the counts."""

from __future__ import annotations

import io
import random
import re
import struct
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workstation.core.documents import DocumentError, Limits, read_document
from workstation.core.errors import ModelFileError, ProfileError
from workstation.core.gguf_check import preflight
from workstation.core.profile_check import profile_from_dict
from workstation.core.profile_lookup import load_profile_file

HOSTILE = Path(__file__).parent / "hostile"
VALID = (HOSTILE / "tiny-valid.gguf").read_bytes()
FUZZ = settings(
    max_examples=300,
    deadline=None,  # no timed assertions on a shared machine; the caps below bound each case
    derandomize=True,  # the same cases on every run
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ_MANY = settings(FUZZ, max_examples=500)
OFFSET = re.compile(r"\(at byte (\d+)\)\.$")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _report(ran: Counter[str], name: str) -> None:
    print(f"\nfuzz {name}: {ran[name]} cases, {ran[name + ' refused']} refused")


# --- GGUF pre-flight

INTERESTING = [0, 1, 2, 3, 4, 5, 31, 32, 33, 64, 255, 256, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
               2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 32, 2**64 - 1, len(VALID), len(VALID) + 1]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, len(VALID) * 8 - 1)),
    st.tuples(st.just("truncate"), st.integers(0, len(VALID) - 1)),
    st.tuples(st.just("u64"), st.integers(0, len(VALID) - 8), st.sampled_from(INTERESTING)),
    st.tuples(st.just("u32"), st.integers(0, len(VALID) - 4), st.sampled_from(INTERESTING).map(lambda v: v % 2**32)),
    st.tuples(st.just("header"), st.sampled_from([4, 8, 16]), st.sampled_from(INTERESTING)),
    st.tuples(st.just("splice"), st.integers(0, len(VALID) - 1), st.integers(0, len(VALID) - 1), st.integers(1, 64)),
    st.tuples(st.just("random"), st.integers(0, len(VALID) - 1), st.binary(min_size=1, max_size=32)),
)


def _mutate(data: bytes, ops: list[tuple[Any, ...]]) -> bytes:
    out = bytearray(data)
    for op in ops:
        kind = op[0]
        if kind == "flip" and op[1] < len(out) * 8:
            out[op[1] // 8] ^= 1 << (op[1] % 8)
        elif kind == "truncate":
            del out[op[1] :]
        elif kind == "u64" and op[1] + 8 <= len(out):
            struct.pack_into("<Q", out, op[1], op[2] % 2**64)
        elif kind == "u32" and op[1] + 4 <= len(out):
            struct.pack_into("<I", out, op[1], op[2])
        elif kind == "header" and op[1] + 8 <= len(out):
            struct.pack_into("<I" if op[1] == 4 else "<Q", out, op[1], op[2] % (2**32 if op[1] == 4 else 2**64))
        elif kind == "splice":
            out[op[2] : op[2]] = out[op[1] : op[1] + op[3]]
        elif kind == "random":
            out[op[1] : op[1] + len(op[2])] = op[2]
    return bytes(out)


def test_fuzz_gguf_preflight(work: Path) -> None:
    ran: Counter[str] = Counter()

    @FUZZ
    @given(ops=st.lists(mutation, min_size=1, max_size=4))
    def case(ops: list[tuple[Any, ...]]) -> None:
        data = _mutate(VALID, ops)
        path = work / "mutant.gguf"
        path.write_bytes(data)
        ran["gguf"] += 1
        try:
            header = preflight(path)
        except ModelFileError as err:
            match = OFFSET.search(str(err))
            assert match, str(err)
            assert 0 <= int(match.group(1)) <= len(data)
            ran["gguf refused"] += 1
            return
        # accepted: then it really is well formed
        for t in header.tensors:
            assert header.data_offset + t.offset + t.nbytes <= len(data)

    case()
    _report(ran, "gguf")
    assert ran["gguf"] >= 100 and 0 < ran["gguf refused"] < ran["gguf"]


# --- profiles

FIELDS = ["name", "model", "backend", "context", "gpu_layers", "threads", "flash_attn", "kv_cache",
          "speculative", "sampling", "system_prompt", "remote", "description", "k", "v", "mode",
          "draft_model", "draft_tokens", "temperature", "top_p", "top_k", "min_p", "max_tokens",
          "seed", "base_url", "timeout_s", "source"]
SPECIAL = ["auto", "all", "on", "off", "q8_0", "q4_0", "f16", "draft", "lookup", "llama", "openai", "", "x" * 300]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    """One YAML-able value: scalars of every type, odd numbers, nested lists and mappings."""
    kind = rng.randrange(10 if depth < 3 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -1, 255, 256, 257, 2048, 2**31, 2**63, -(2**70), rng.randrange(-5, 5000)])
    if kind == 3:
        return rng.choice([0.0, -0.0, 0.5, 1.0, 5.0, 1e308, -1e-308, float("inf"), float("nan"), rng.uniform(-10, 10)])
    if kind in (4, 5):
        return rng.choice(SPECIAL)
    if kind == 6:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(12)))
    if kind == 7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return _random_mapping(rng, depth + 1)


def _random_mapping(rng: random.Random, depth: int = 0) -> dict[Any, Any]:
    keys = [rng.choice(FIELDS) if rng.random() < 0.85 else rng.choice([1, None, True, "Ä", "a.b"]) for _ in range(rng.randrange(8))]
    return {k: _random_value(rng, depth) for k in keys}


VALID_PROFILE = {"name": "x", "model": "m", "context": 2048, "gpu_layers": "auto", "threads": 2,
                 "flash_attn": "auto", "kv_cache": {"k": "q8_0", "v": "q8_0"}, "speculative": {"mode": "off"},
                 "sampling": {"temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "seed": None}}


def _random_profile(seed: int) -> Any:
    rng = random.Random(seed)
    roll = rng.random()
    if roll < 0.4:  # a valid profile with one field changed: reaches the checks behind the first
        data = {k: dict(v) if isinstance(v, dict) else v for k, v in VALID_PROFILE.items()}
        key = rng.choice(list(data))
        if isinstance(data[key], dict) and rng.random() < 0.7:
            data[key][rng.choice(FIELDS)] = _random_value(rng, 2)
        else:
            data[key] = _random_value(rng, 2)
        return data
    return _random_mapping(rng) if roll < 0.9 else _random_value(rng)


def test_fuzz_profile_from_dict() -> None:
    ran: Counter[str] = Counter()

    @FUZZ_MANY
    @given(seed=st.integers(0, 2**32))
    def case(seed: int) -> None:
        ran["profile dict"] += 1
        try:
            profile = profile_from_dict(_random_profile(seed), "<fuzz>")
        except ProfileError as err:
            assert "\n" not in str(err)
            ran["profile dict refused"] += 1
            return
        # accepted: every setting has a type the engine can use
        assert profile.threads == "auto" or type(profile.threads) is int
        assert profile.gpu_layers in ("auto", "all") or type(profile.gpu_layers) is int
        assert isinstance(profile.speculative.draft_gpu_layers, int | str)
        assert type(profile.context) is int and isinstance(profile.sampling.temperature, float)

    case()
    _report(ran, "profile dict")
    assert ran["profile dict"] >= 300 and 0 < ran["profile dict refused"] < ran["profile dict"]


def _random_yaml(seed: int) -> bytes:
    rng = random.Random(seed)
    text = yaml.safe_dump(_random_profile(seed), allow_unicode=True)
    for _ in range(rng.choice([0, 0, 1, 3])):  # corrupt it a little
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice([":", "- ", "{", "[", "&a ", "*a", "!!python/object:os.system ", "\t", "\n  ", '"', "%", "\x00"]) + text[at:]
    data = text.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.1:
        data = data[: rng.randrange(len(data) + 1)] + bytes([rng.randrange(256)])
    return data


NASTY_YAML = ["a: &x [*x]", "a: !!python/object/apply:os.system [ls]", "&a [*a, *a]", "{" * 200, "- " * 500,
              "a: b\n\tc: d", "context: 1e999", "threads: .nan", "? [a]\n: b\n", "\ufeffname: x\nmodel: m",
              "x: &a [1]\ny: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nz: [*b,*b,*b,*b,*b,*b,*b,*b,*b]", "sampling: 3", ""]


def test_fuzz_profile_file(work: Path) -> None:
    ran: Counter[str] = Counter()

    @settings(FUZZ, max_examples=300)
    @given(case=st.one_of(st.integers(0, 2**32), st.sampled_from(NASTY_YAML)))
    def one(case: int | str) -> None:
        ran["profile yaml"] += 1
        path = work / "fuzz.yaml"
        path.write_bytes(case.encode() if isinstance(case, str) else _random_yaml(case))
        try:
            load_profile_file(path)
        except ProfileError as err:
            assert "\n" not in str(err)
            ran["profile yaml refused"] += 1

    one()
    _report(ran, "profile yaml")
    assert ran["profile yaml"] >= 200 and ran["profile yaml refused"] > 0


# --- document readers


def _seed_documents(folder: Path) -> dict[str, bytes]:
    """Small valid documents of each kind, written with the real libraries."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    }))
    for words in ("First page about bees.", "Second page (the end)."):
        page = writer.add_blank_page(300, 300)
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 9 Tf 20 260 Td ({words}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    pdf = io.BytesIO()
    writer.write(pdf)
    docx_bytes = io.BytesIO()
    with zipfile.ZipFile(docx_bytes, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                   '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
                   'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
        z.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                   '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
                   'Target="word/document.xml"/></Relationships>')
        z.writestr("word/document.xml", '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
                   "<w:body><w:p><w:r><w:t>Bees make honey.</w:t></w:r></w:p><w:p><w:r><w:t>Second paragraph.</w:t></w:r></w:p></w:body></w:document>")
    odt_bytes = io.BytesIO()
    with zipfile.ZipFile(odt_bytes, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", '<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
                   'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
                   '<text:h text:outline-level="1">Bees</text:h><text:p>Honey<text:s text:c="2"/>and wax<text:note text:note-class="footnote">'
                   '<text:note-citation>1</text:note-citation><text:note-body><text:p>A note.</text:p></text:note-body></text:note>'
                   '</text:p></office:text></office:body></office:document-content>')
        z.writestr("META-INF/manifest.xml", "<manifest/>")
    eml = (b"From: =?UTF-8?B?QXnFn2U=?= <a@b.example>\r\nSubject: Bees\r\nMIME-Version: 1.0\r\n"
           b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain; charset=utf-8\r\n'
           b"Content-Transfer-Encoding: quoted-printable\r\n\r\nHoney =C3=A7 wax.\r\n--b\r\nContent-Type: application/pdf\r\n"
           b'Content-Disposition: attachment; filename="a.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQ=\r\n--b--\r\n')
    import datetime

    from docmaker import make_pptx, make_xlsx

    xlsx = make_xlsx(folder / "seed.xlsx", [("Budget", [["Rent", 1200.5, datetime.date(2026, 1, 15), True, ("percent", 0.5)],
                                                      [("formula", "B1*2", 2401), ("inline", "note")]]), ("B", [[None, "x"]])])
    pptx = make_pptx(folder / "seed.pptx", [("Budget", ["Rent up"], "Say the rent first."), ("Next", ["Sign"], None)],
                     table=[["Item", "Cost"]])
    return {
        ".pdf": pdf.getvalue(),
        ".docx": docx_bytes.getvalue(),
        ".odt": odt_bytes.getvalue(),
        ".xlsx": xlsx.read_bytes(),
        ".pptx": pptx.read_bytes(),
        ".rtf": rb"{\rtf1\ansi\ansicpg1254{\fonttbl{\f0\fcharset162 Arial;}}\f0 D\'fczen \u304?stanbul{\footnote Note.}\par{\pict\bin3 abc}x\par}",
        ".eml": eml,
        ".html": b"<html><head><title>T</title><style>p{}</style></head><body><h1>Bees</h1><p>Honey &amp; wax.</p></body></html>",
        ".md": "# Bees\n\nHoney and wax. Ünïcode ✓\n\n## More\n\ntext\n".encode(),
        ".txt": "Plain text in cp1252: caf\xe9".encode("cp1252"),
    }


@pytest.fixture(scope="module")
def doc_seeds(work: Path) -> dict[str, bytes]:
    return _seed_documents(work)


def _mutate_any(data: bytes, ops: list[tuple[Any, ...]]) -> bytes:
    out = bytearray(data)
    for kind, a, b in ops:
        if not out:
            break
        i = a % len(out)
        if kind == "flip":
            out[i] ^= 1 << (b % 8)
        elif kind == "truncate":
            del out[i:]
        elif kind == "u32":
            out[i : i + 4] = (b % 2**32).to_bytes(4, "little")
        elif kind == "dup":
            out[i:i] = out[i : i + 1 + b % 200] * (1 + b % 5)
        elif kind == "zero":
            out[i : i + 1 + b % 64] = bytes(1 + b % 64)
    return bytes(out)


doc_ops = st.lists(
    st.tuples(st.sampled_from(["flip", "truncate", "u32", "dup", "zero"]), st.integers(0, 2**20), st.integers(0, 2**32)),
    min_size=0, max_size=5,
)


def test_fuzz_read_document(work: Path, doc_seeds: dict[str, bytes]) -> None:
    ran: Counter[str] = Counter()

    @settings(FUZZ, max_examples=300)
    @given(suffix=st.sampled_from([".pdf", ".docx", ".odt", ".xlsx", ".pptx", ".rtf", ".eml", ".html", ".md", ".txt"]), ops=doc_ops,
           raw=st.one_of(st.none(), st.binary(max_size=200)))
    def case(suffix: str, ops: list[tuple[Any, ...]], raw: bytes | None) -> None:
        data = raw if raw is not None else _mutate_any(doc_seeds[suffix], ops)
        path = work / f"fuzz{suffix}"
        path.write_bytes(data)
        ran["documents"] += 1
        try:
            doc = read_document(path, Limits(timeout_s=10.0, max_file_bytes=1 << 20))
        except DocumentError as err:
            assert "\n" not in str(err)
            ran["documents refused"] += 1
            return
        assert doc.text.strip()

    case()
    _report(ran, "documents")
    assert ran["documents"] >= 100 and 0 < ran["documents refused"] < ran["documents"]
