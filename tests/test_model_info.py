"""A model file's header as model_info reads it (the real models, damaged files, odd metadata), the
installed models (installed_models), and the catalog."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from workstation.core import catalog, gguf_check, installed_models, model_info
from workstation.core.errors import ModelFileError
from workstation.core.model_info import ModelInfo, read_model_info
from workstation.core.packaged_models import sha256_file

HOSTILE = Path(__file__).parent / "hostile"
TINY = HOSTILE / "tiny-valid.gguf"
sys.path.insert(0, str(HOSTILE))
import make_corpus  # noqa: E402


def test_smollm2_metadata(smollm2_path: Path) -> None:
    info = read_model_info(smollm2_path)
    assert info.architecture == "llama"
    assert info.file_type == "Q4_1"
    assert (info.n_layer, info.n_head, info.n_head_kv, info.head_dim, info.n_embd) == (30, 9, 3, 64, 576)
    assert info.n_vocab == 49152 and info.context_length == 8192
    assert info.has_chat_template and info.sliding_window is None
    assert 130e6 < info.parameter_count < 140e6
    assert info.file_size == smollm2_path.stat().st_size
    assert info.weights_bytes == sum(info.layer_bytes) + info.input_bytes + info.output_bytes
    assert info.tied_embeddings  # SmolLM2 has no output.weight
    assert len(info.tokenizer_fingerprint) == 16
    d = info.to_dict()
    assert d["file_type"] == "Q4_1" and "layer_bytes" not in d
    assert len(info.to_dict(with_layers=True)["layer_bytes"]) == 30


def test_gemma_metadata_sliding_window(gemma_path: Path) -> None:
    info = read_model_info(gemma_path)
    assert info.architecture == "gemma3" and info.file_type == "Q4_K_M"
    assert info.n_vocab == 262144 and info.head_dim == 256 and info.n_head_kv == 1
    assert info.sliding_window == 512
    # llama.cpp's gemma3 pattern: every 6th layer is global
    assert info.swa_layers == [il % 6 < 5 for il in range(18)]
    assert not info.has_chat_template
    assert info.tokenizer_fingerprint != read_model_info(TINY).tokenizer_fingerprint


def test_catalog_yaml_is_honest(smollm2_path: Path, gemma_path: Path) -> None:
    entries = catalog.catalog_entries()
    by_name = {e["name"]: e for e in entries}
    for e in entries:
        assert e["file"].endswith(".gguf") and e.get("licence"), e["name"]
        src = str(e["source"])
        assert src.startswith(("pypi:", "https://")), e["name"]
        sha = e.get("sha256")
        assert sha is None or re.fullmatch(r"[0-9a-f]{64}", sha), e["name"]
    # the two models that are here: the catalog's size and checksum are those of the real files
    for name, path in (("smollm2-135m-instruct-q4_1", smollm2_path), ("gemma-3-270m-q4_k_m", gemma_path)):
        entry = by_name[name]
        assert entry["file"] == path.name and entry["size_bytes"] == path.stat().st_size, name
        if entry.get("sha256"):
            assert sha256_file(path) == entry["sha256"], name
    office = [e for e in entries if str(e["source"]).startswith("https://")]
    assert len(office) >= 3
    assert all("Q4_K_M" in e["file"] or "q4_k_m" in e["file"].lower() for e in office)


def test_list_installed_and_resolve(smollm2_path: Path, gemma_path: Path) -> None:
    items = {Path(m.path).name: m for m in installed_models.list_installed()}
    assert smollm2_path.name in items and gemma_path.name in items
    assert items[smollm2_path.name].name == "smollm2-135m-instruct-q4_1"
    assert items[smollm2_path.name].info is not None
    assert catalog.resolve_model_path("smollm2-135m-instruct-q4_1") == smollm2_path
    with pytest.raises(ModelFileError, match="models list"):
        installed_models.find_installed("no-such-model")


def test_extra_model_dir_and_damaged_file_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "tiny.gguf").write_bytes(TINY.read_bytes())
    (extra / "notes.gguf").write_text("this is a text file, not a model\n")
    monkeypatch.setenv("WORKSTATION_MODEL_DIRS", str(extra))
    items = {Path(m.path).name: m for m in installed_models.list_installed()}
    assert items["tiny.gguf"].info is not None
    assert items["notes.gguf"].info is None and "GGUF" in (items["notes.gguf"].error or "")
    # a catalog model copied once to a shared folder runs from there by its catalog name, as profiles
    # name it (office-cpu: "The model smollm2-135m-instruct-q4_1 is not downloaded yet", listed installed)
    monkeypatch.setenv("WORKSTATION_MODELS", str(tmp_path / "models-of-this-pc"))
    (extra / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"")  # (its name is what is looked for)
    assert catalog.resolve_model_path("smollm2-135m-instruct-q4_1") == extra / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert catalog.resolve_model_path("tiny") == extra / "tiny.gguf"
    # a typo of a model there: guessed from every models folder, in the app's phrase (find_installed had its own English)
    with pytest.raises(ModelFileError) as typo:
        installed_models.find_installed("tinny")
    assert typo.value.said[-1] == ("model.meant", {"name": "tiny"}) and str(typo.value).endswith("Did you mean 'tiny'?")
    from workstation.core.phrases import say
    from workstation.tui.i18n import Texts

    # Turkish asks before the name: a fixed "mi" after it broke vowel harmony ("'tiny' mi", "'gemma…' mi")
    assert say(typo.value.said, Texts("tr").get).endswith(" Bunu mu demek istediniz: 'tiny'?")
    assert installed_models.missing_model_error(extra / "tinny.gguf").said[-1] == ("model.meant", {"name": "tiny"})
    from workstation.cli import main

    assert main(["models", "list"]) == 0  # where they are, not models/ alone
    assert f"Installed in {tmp_path / 'models-of-this-pc'} and {extra} (WORKSTATION_MODEL_DIRS):" in capsys.readouterr().out
    monkeypatch.setenv("WORKSTATION_MODEL_DIRS", "")
    assert main(["models", "list"]) == 0  # an offline desk PC: a copied file is added, not pulled
    assert "or 'workstation models add FILE.gguf' for a model copied to this PC" in capsys.readouterr().out


def test_damaged_files_give_one_clear_error(tmp_path: Path, smollm2_path: Path) -> None:
    truncated = tmp_path / "cut.gguf"
    with smollm2_path.open("rb") as f:
        truncated.write_bytes(f.read(5_000_000))
    text = tmp_path / "readme.gguf"
    text.write_text("hello, I am not a model\n" * 10)
    data = TINY.read_bytes()
    unknown = tmp_path / "unknown-arch.gguf"
    unknown.write_bytes(data.replace(b"llama", b"frobn"))  # keys and value renamed together
    for path, words in ((truncated, "truncat|ends|past the end"), (text, "GGUF"), (unknown, "frobn")):
        with pytest.raises(ModelFileError, match=words) as err:
            read_model_info(path)
        assert "\n" not in str(err.value)


def test_check_false_still_runs_the_preflight(tmp_path: Path) -> None:
    # the pre-flight is the only reader of the header: check=False (kept for its callers)
    # refuses what the pre-flight refuses, with its byte offset
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(TINY.read_bytes()[:-100])
    with pytest.raises(ModelFileError, match=r"the file is incomplete.*download or copy it again\. Details: .*past the end of the file.*\(at byte \d+\)\.$"):
        read_model_info(cut, check=False)
    unknown = tmp_path / "u.gguf"
    unknown.write_bytes(TINY.read_bytes().replace(b"llama", b"frobn"))
    with pytest.raises(ModelFileError, match=r"architecture 'frobn'.*\(at byte \d+\)"):
        read_model_info(unknown, check=False)
    # a file that makes llama.cpp abort the process is refused too (the catalog's own parser,
    # gone now, read it without complaint)
    with pytest.raises(ModelFileError, match="block_count"):
        read_model_info(HOSTILE / "block-count-huge.gguf", check=False)


def test_header_read_once_per_file_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []
    real_preflight = gguf_check.preflight

    def counting_preflight(path: Path) -> gguf_check.GGUFHeader:
        reads.append(Path(path))
        return real_preflight(path)

    monkeypatch.setattr(gguf_check, "preflight", counting_preflight)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(TINY.read_bytes())
    first = read_model_info(model)
    model_info.check_gguf(model)  # the check before a load: the same read, not a second one
    assert read_model_info(model, check=False) is first
    assert len(reads) == 1
    st = model.stat()
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # another version of the file
    second = read_model_info(model)
    assert len(reads) == 2 and second is not first and second == first
    # a refused file is read again each time: nothing about it is remembered
    bad = tmp_path / "bad.gguf"
    bad.write_bytes((HOSTILE / "block-count-huge.gguf").read_bytes())
    for _ in range(2):
        with pytest.raises(ModelFileError, match="block_count"):
            model_info.check_gguf(bad)
    assert len(reads) == 4


def test_odd_metadata_values_fall_back_without_an_error(tmp_path: Path) -> None:
    path = tmp_path / "odd.gguf"
    long_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}" + " " * 5000
    make_corpus.write_tiny(path, {
        "llama.attention.key_length": (float("nan"), "FLOAT32"),  # not a number of dimensions
        "llama.context_length": (2048.0, "FLOAT32"),  # a whole number written as a float
        "general.license": (7, "UINT32"),
        "general.name": (["not", "a", "name"], "ARRAY"),
    }, template=long_template)
    header = gguf_check.preflight(path)
    assert "tokenizer.chat_template" not in header.metadata  # too long for the pre-flight to keep
    info = read_model_info(path)
    assert info.head_dim == make_corpus.N_EMBD // make_corpus.N_HEAD
    assert info.head_dim_v == info.head_dim
    assert info.context_length == 2048
    assert info.licence is None and info.name == "odd"
    assert info.has_chat_template  # known from where the template lies, not from its text
    assert info.n_vocab == make_corpus.N_VOCAB
    assert info.tokenizer_fingerprint == read_model_info(TINY).tokenizer_fingerprint


# --- every ModelInfo field against the gguf package's own reader ------------------------------
def _expected_from_gguf_package(path: Path) -> dict[str, Any]:
    """ModelInfo's fields for one of the two packaged models, read with gguf.GGUFReader and
    llama.cpp's rules written out again here (not the catalog's code)."""
    import gguf
    import numpy as np

    class InMemoryReader(gguf.GGUFReader):
        """The package's reader over a plain array view of its memory map: the same bytes and
        parse, without numpy's memmap bookkeeping on each of gemma's 786k small reads (22 s -> 7 s)."""

        @property
        def data(self) -> Any:
            return self._plain

        @data.setter
        def data(self, mapped: Any) -> None:
            self._plain = np.asarray(mapped)

    reader = InMemoryReader(path)

    def value(key: str, default: Any = None) -> Any:
        found = reader.get_field(key)
        return default if found is None else found.contents()

    arch = value("general.architecture")
    assert arch in ("llama", "gemma3"), arch
    n_layer = value(f"{arch}.block_count")
    n_embd = value(f"{arch}.embedding_length")
    n_head = value(f"{arch}.attention.head_count")
    head_count_kv = value(f"{arch}.attention.head_count_kv", n_head)
    kv_per_layer = list(head_count_kv) if isinstance(head_count_kv, list) else [head_count_kv] * n_layer
    head_dim = value(f"{arch}.attention.key_length", n_embd // n_head)
    tokens = reader.get_field("tokenizer.ggml.tokens")
    texts = [tokens.parts[i].tobytes() for i in tokens.data]
    tokenizer_model = value("tokenizer.ggml.model", "")
    # the vocabulary as the file stores it: each token's text after its 8-byte length
    stored = b"".join(struct.pack("<Q", len(text)) + text for text in texts)
    fingerprint = hashlib.sha256(tokenizer_model.encode() + stored).hexdigest()[:16]
    if arch == "gemma3":  # llama.cpp's gemma3: five sliding-window layers, then a global one
        window: int | None = value("gemma3.attention.sliding_window")
        swa = [il % 6 < 5 for il in range(n_layer)]
    else:
        window, swa = None, [False] * n_layer

    def padded(n: int) -> int:
        return -(-n // reader.alignment) * reader.alignment

    layer_bytes = [0] * n_layer
    input_bytes = output_bytes = 0
    tensor_types: dict[str, int] = {}
    for t in reader.tensors:
        tensor_types[t.tensor_type.name] = tensor_types.get(t.tensor_type.name, 0) + int(t.n_bytes)
        layer = re.match(r"blk\.(\d+)\.", t.name)
        if layer:
            layer_bytes[int(layer.group(1))] += padded(int(t.n_bytes))
        elif t.name.startswith("token_embd."):
            input_bytes += padded(int(t.n_bytes))
        else:
            output_bytes += padded(int(t.n_bytes))
    template = value("tokenizer.chat_template", "")
    return {
        "path": str(path),
        "name": value("general.name") or path.stem,
        "architecture": arch,
        "parameter_count": sum(int(t.n_elements) for t in reader.tensors),
        "file_type": gguf.LlamaFileType(value("general.file_type")).name.removeprefix("MOSTLY_"),
        "file_size": path.stat().st_size,
        "context_length": value(f"{arch}.context_length"),
        "n_layer": n_layer,
        "n_head": n_head,
        "n_head_kv": kv_per_layer[0],
        "head_dim": head_dim,
        "head_dim_v": value(f"{arch}.attention.value_length", head_dim),
        "n_embd": n_embd,
        "n_ff": value(f"{arch}.feed_forward_length"),
        "n_vocab": value(f"{arch}.vocab_size", len(texts)),
        "tokenizer_model": tokenizer_model,
        "tokenizer_fingerprint": fingerprint,
        "sliding_window": window,
        "swa_layers": swa,
        "has_chat_template": bool(template),
        "licence": value("general.license"),
        "size_label": value("general.size_label"),
        "n_head_kv_per_layer": kv_per_layer,
        "layer_bytes": layer_bytes,
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "tied_embeddings": all(t.name != "output.weight" for t in reader.tensors),
        "weights_bytes": sum(padded(int(t.n_bytes)) for t in reader.tensors),
        "tensor_types": tensor_types,
    }


@pytest.mark.parametrize("model", ["smollm2_path", "gemma_path"])
def test_every_model_info_field_matches_the_gguf_package(model: str, request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(model)
    expected = _expected_from_gguf_package(path)
    assert set(expected) == {f.name for f in dataclasses.fields(ModelInfo)}  # no field left out
    assert dataclasses.asdict(read_model_info(path)) == expected


def test_catalog_file_parses() -> None:
    path = Path(__file__).parent.parent / "models" / "catalog.yaml"
    data = yaml.safe_load(path.read_text())
    assert isinstance(data["models"], list)


def test_sizes_are_written_one_way_exact_or_approximate() -> None:
    """F4 and `models list` showed 98 MB beside ~0.81 GB and ~0.4 GB: an approximate size is
    written in the unit an exact one of it would take, with as many digits."""
    from workstation.core.catalog import file_size_text

    assert [file_size_text(None, gb) for gb in (0.81, 0.4, 0.48, 4.9, 9.0)] == [
        "~772 MB", "~381 MB", "~458 MB", "~4.6 GB", "~8.4 GB"]  # (catalog.yaml's are Hugging Face's decimal GB)
    # in the units the fit verdicts and the dashboard say beside it (F4 said "4.92 GB" of a file the
    # verdict said needed 4.6 GB): binary, as Windows counts a file and a card's memory is sold
    assert file_size_text(98_000_000) == "93 MB" and file_size_text(4_920_000_000) == "4.6 GB"
    from workstation.core.catalog import gb, human_bytes

    # one formatter: the dashboard (F5), `fit` and `hw` said "93.5 MB" and "4.58 GB" of the file
    # F4 and `models list` called "93 MB" and a verdict needed "4.6 GB" for
    assert human_bytes(98_000_000) == "93 MB" and human_bytes(4_920_000_000) == "4.6 GB" == gb(4_920_000_000) + " GB"
    assert [human_bytes(n) for n in (0, 7_000, 1015 * 1024**2, 1023.7 * 1024**2, 9.97 * 1024**3, 24 * 1024**3)] == [
        "0 B", "7 KB", "1.0 GB", "1.0 GB", "10 GB", "24 GB"]  # (three figures at most; no "1024 MB", no "10.0 GB")
    # and the verdicts' figures of GB the same way: `fit` said "23.1 GB of memory free" above "free 23 GB"
    assert [gb(n) for n in (0.3 * 1024**3, 9.94 * 1024**3, 9.97 * 1024**3, 23.1 * 1024**3)] == ["0.3", "9.9", "10", "23"]
    assert file_size_text(None) == "?"
