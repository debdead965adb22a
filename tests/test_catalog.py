"""GGUF metadata from the real models, the catalog, and damaged files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from workstation.core import catalog
from workstation.core.catalog import read_model_info
from workstation.core.errors import ModelFileError
from workstation.core.packaged_models import sha256_file

TINY = Path(__file__).parent / "hostile" / "tiny-valid.gguf"


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
    items = {Path(m.path).name: m for m in catalog.list_installed()}
    assert smollm2_path.name in items and gemma_path.name in items
    assert items[smollm2_path.name].name == "smollm2-135m-instruct-q4_1"
    assert items[smollm2_path.name].info is not None
    assert catalog.resolve_model_path("smollm2-135m-instruct-q4_1") == smollm2_path
    with pytest.raises(ModelFileError, match="models list"):
        catalog.find_installed("no-such-model")


def test_extra_model_dir_and_damaged_file_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "tiny.gguf").write_bytes(TINY.read_bytes())
    (extra / "notes.gguf").write_text("this is a text file, not a model\n")
    monkeypatch.setenv("WORKSTATION_MODEL_DIRS", str(extra))
    items = {Path(m.path).name: m for m in catalog.list_installed()}
    assert items["tiny.gguf"].info is not None
    assert items["notes.gguf"].info is None and "GGUF" in (items["notes.gguf"].error or "")


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


def test_parser_without_preflight_catches_truncation(tmp_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(TINY.read_bytes()[:-100])
    with pytest.raises(ModelFileError, match="truncated"):
        read_model_info(cut, check=False)
    unknown = tmp_path / "u.gguf"
    unknown.write_bytes(TINY.read_bytes().replace(b"llama", b"frobn"))
    with pytest.raises(ModelFileError, match="architecture 'frobn'"):
        read_model_info(unknown, check=False)


def test_catalog_file_parses() -> None:
    path = Path(__file__).parent.parent / "models" / "catalog.yaml"
    data = yaml.safe_load(path.read_text())
    assert isinstance(data["models"], list)
