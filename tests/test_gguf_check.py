"""The GGUF pre-flight: real models pass, every file of the hostile corpus is refused with the
byte offset, and a file that makes llama.cpp itself abort the process is refused first."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from workstation.core import gguf_check
from workstation.core.errors import ModelFileError
from workstation.core.gguf_check import GGML_TYPES, known_architectures, preflight
from workstation.core.model_info import check_gguf

HOSTILE = Path(__file__).parent / "hostile"
sys.path.insert(0, str(HOSTILE))
import make_corpus  # noqa: E402

VALID = HOSTILE / make_corpus.VALID


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Regenerate the corpus in a temp folder: file name -> word the error must contain."""
    out = tmp_path_factory.mktemp("corpus")
    words = make_corpus.build(out)
    words["_out"] = str(out)
    return words


def corpus_files() -> list[str]:
    return sorted(p.name for p in HOSTILE.glob("*.gguf") if p.name not in (make_corpus.VALID, "template-escape.gguf"))


def test_corpus_is_committed_and_up_to_date(expected: dict[str, str]) -> None:
    out = Path(expected.pop("_out"))
    names = set(expected)
    assert names == set(corpus_files())
    assert len(names) >= 45
    for name in [*names, make_corpus.VALID, "template-escape.gguf"]:
        committed = (HOSTILE / name).read_bytes()
        assert len(committed) < 100_000
        assert committed == (out / name).read_bytes(), f"{name} differs from make_corpus.py's output"


def test_real_models_pass(smollm2_path: Path, gemma_path: Path) -> None:
    small = preflight(smollm2_path)
    assert small.architecture == "llama" and small.version == 3 and len(small.tensors) > 100
    gemma = preflight(gemma_path)
    assert gemma.architecture == "gemma3"
    assert gemma.metadata["gemma3.block_count"] == 18
    # the tensors tile the data section without overlap, up to the end of the file
    last = max(gemma.tensors, key=lambda t: t.offset)
    assert gemma.data_offset + last.offset + last.nbytes <= gemma.file_size


def test_tiny_valid_and_template_escape_pass_the_preflight() -> None:
    header = preflight(VALID)
    assert header.architecture == "llama"
    assert [t.name for t in header.tensors][:2] == ["token_embd.weight", "output_norm.weight"]
    assert {GGML_TYPES[t.ggml_type][0] for t in header.tensors} == {"f16", "f32", "q8_0"}
    # structurally fine: the template is the chat-template sandbox's business
    assert preflight(HOSTILE / "template-escape.gguf").metadata["tokenizer.chat_template"].startswith("{{ ''.__class__")


@pytest.mark.parametrize("name", corpus_files())
def test_hostile_file_is_refused_with_offset(name: str, expected: dict[str, str]) -> None:
    with pytest.raises(ModelFileError) as info:
        check_gguf(HOSTILE / name)
    message = str(info.value)
    assert "(at byte " in message and message.endswith(").")
    assert expected[name].lower() in message.lower()
    assert "\n" not in message
    plain, _, detail = message.partition(" Details: ")
    if name.startswith("truncated-"):  # a file cut short: what the user can do about it, before the detail
        assert plain.endswith("the file is incomplete, as an interrupted download or copy leaves it; download or copy it "
                              "again.") and detail, message
    if name in ("bad-magic.gguf", "duplicate-tensor-name.gguf", "overlapping-tensors.gguf"):
        assert "download or copy it again" not in message  # whole but wrong: downloading it again would not help


def test_a_file_that_is_not_a_model_is_said_in_turkish_too(tmp_path: Path) -> None:
    """F4's 'a' (add a model) in the Turkish UI: the sentence around the technical detail, and
    the commonest case (not a GGUF file at all), are Turkish."""
    from workstation.tui.i18n import Texts

    notes = tmp_path / "notes.gguf"
    notes.write_text("Meeting notes, not a model.", encoding="utf-8")
    with pytest.raises(ModelFileError) as caught:
        preflight(notes)
    assert str(caught.value) == f"{notes} is not a usable GGUF model: it does not start with 'GGUF', so it is not a GGUF file (at byte 0)."
    assert Texts("tr").error(caught.value) == (f"{notes} kullanılabilir bir GGUF modeli değil: 'GGUF' ile başlamıyor, "
                                               "yani bir GGUF dosyası değil (0. baytta).")
    with pytest.raises(ModelFileError) as caught:
        check_gguf(HOSTILE / "truncated-inside-vocab.gguf")
    assert "dosya eksik, yarıda kalmış bir indirme ya da kopyalama gibi görünüyor; yeniden indirin ya da kopyalayın. " \
        "Teknik ayrıntı: (İngilizce) " in Texts("tr").error(caught.value)


def test_a_model_cut_short_says_what_to_do_before_the_detail(tmp_path: Path, smollm2_path: Path) -> None:
    """A real model cut at 5,000,000 bytes (a USB copy pulled out too soon): the message began with
    "tensor 'token_embd.weight' needs 30081024 bytes at data offset …" and said "The file is
    incomplete … copy it again" last; now the plain sentence first and the detail after it, in
    Turkish too (the English detail was in the middle of the Turkish sentence)."""
    from workstation.tui.i18n import Texts

    cut = tmp_path / "broken.gguf"
    with smollm2_path.open("rb") as f:
        cut.write_bytes(f.read(5_000_000))
    with pytest.raises(ModelFileError) as caught:
        check_gguf(cut)
    assert str(caught.value).startswith(
        f"{cut} is not a usable GGUF model: the file is incomplete, as an interrupted download or copy leaves it; "
        "download or copy it again. Details: tensor 'token_embd.weight' needs "), str(caught.value)
    assert Texts("tr").error(caught.value).startswith(
        f"{cut} kullanılabilir bir GGUF modeli değil: dosya eksik, yarıda kalmış bir indirme ya da kopyalama gibi "
        "görünüyor; yeniden indirin ya da kopyalayın. Teknik ayrıntı: (İngilizce) tensor 'token_embd.weight' needs ")


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="does not exist"):
        preflight(tmp_path / "nope.gguf")
    with pytest.raises(ModelFileError, match="is a folder; name the .gguf file in it \\(no .gguf files are in it\\)"):
        preflight(tmp_path)


def test_a_profile_naming_a_folder_is_told_it_is_one(tmp_path: Path) -> None:
    """`model: /path/to/folder` was looked for as folder.gguf: "/path/to/folder.gguf does not exist"."""
    from workstation.core.catalog import resolve_model_path

    (tmp_path / "models").mkdir()
    assert resolve_model_path(str(tmp_path / "models")) == tmp_path / "models"
    with pytest.raises(ModelFileError, match=f"The model path {tmp_path / 'models'} is a folder"):
        check_gguf(resolve_model_path(str(tmp_path / "models")))


def test_ggml_type_table_matches_installed_ggml() -> None:
    lib_dir = gguf_check.llama_lib_path()
    assert lib_dir is not None
    ggml = ctypes.CDLL(str(lib_dir.parent / "libggml-base.so"))
    ggml.ggml_blck_size.restype = ctypes.c_int64
    ggml.ggml_type_size.restype = ctypes.c_size_t
    ggml.ggml_type_name.restype = ctypes.c_char_p
    for type_id, (name, block, size) in GGML_TYPES.items():
        assert ggml.ggml_type_name(type_id).decode() == name
        assert (ggml.ggml_blck_size(type_id), ggml.ggml_type_size(type_id)) == (block, size)
    # the ids left out are the removed ones (block size 0 in ggml)
    for type_id in set(range(max(GGML_TYPES) + 1)) - set(GGML_TYPES):
        assert ggml.ggml_blck_size(type_id) == 0


def test_architectures_come_from_the_installed_library() -> None:
    names = known_architectures()
    assert {"llama", "gemma3", "qwen2", "clip"} <= names
    assert len(names) > 100 and "lllma" not in names


def test_loaded_model_refuses_before_llama_cpp_sees_the_file() -> None:
    from workstation.core.runtime import LLAMA_LOG, LoadedModel, RuntimeSettings

    LLAMA_LOG.clear()
    with pytest.raises(ModelFileError, match="block_count"):
        LoadedModel(HOSTILE / "block-count-huge.gguf", RuntimeSettings(n_ctx=64))
    assert not any("block-count-huge" in line for line in LLAMA_LOG)


_LOAD = """
import sys, llama_cpp
llama_cpp.llama_backend_init()
params = llama_cpp.llama_model_default_params()
params.n_gpu_layers = 0
model = llama_cpp.llama_model_load_from_file(sys.argv[1].encode(), params)
if not model:
    print("REFUSED")
    sys.exit(3)
print("LOADED layers", llama_cpp.llama_model_n_layer(model), flush=True)
# what every load in the app does next: tokenize a prompt
vocab = llama_cpp.llama_model_get_vocab(model)
buf = (llama_cpp.llama_token * 64)()
print("TOKENIZED", llama_cpp.llama_tokenize(vocab, b"hi \\xc3\\xa9\\n\\x00", 7, buf, 64, True, True))  # "hi é", NUL
"""


def _llama_cpp_load_all(paths: list[Path]) -> list[subprocess.CompletedProcess[str]]:
    """Load each GGUF with llama.cpp directly (no pre-flight), each in its own child process."""
    env = {**os.environ, "GGML_NO_BACKTRACE": "1"}
    procs = [
        subprocess.Popen([sys.executable, "-c", _LOAD, str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
        for p in paths
    ]
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:  # a hang counts as a failure to load
            proc.kill()
            out, err = proc.communicate()
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


# Hostile files on which llama.cpp 0.3.36 aborts the whole process (GGML_ASSERT -> SIGABRT) in
# llama_model::load_hparams: file -> the assertion it prints.
ABORTS = {
    "block-count-huge.gguf": "GGML_ASSERT(hparams.n_layer_all > 0 && hparams.n_layer_all <= LLAMA_MAX_LAYERS) failed",
    "block-count-zero.gguf": "GGML_ASSERT(hparams.n_layer_all > 0 && hparams.n_layer_all <= LLAMA_MAX_LAYERS) failed",
    "expert-count-huge.gguf": "GGML_ASSERT(hparams.n_expert <= LLAMA_MAX_EXPERTS) failed",
    "expert-used-above-count.gguf": "GGML_ASSERT(n_expert_used_max <= hparams.n_expert) failed",
    "rope-scaling-unknown.gguf": "GGML_ASSERT(hparams.rope_scaling_type_train != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED) failed",
    # llama_vocab::impl::load and the tokenizer (llama-vocab.cpp)
    "vocab-duplicate-token.gguf": "GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed",
    "vocab-empty-token-collides.gguf": "GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed",
    "vocab-byte-token-in-wordpiece.gguf": "llama-vocab.cpp:3207: fatal error",
    "vocab-none.gguf": "GGML_ASSERT(tokenizer && \"Tokenizer not initialized",
    # byte_to_token's token_to_id.at() throws through llama_tokenize (no byte token for "é")
    "vocab-spm-without-byte-tokens.gguf": "terminate called after throwing an instance of 'std::out_of_range'",
    "vocab-spm-nul-byte-token.gguf": "terminate called after throwing an instance of 'std::out_of_range'",
}


def test_llama_cpp_aborts_on_hostile_files_that_the_preflight_refuses() -> None:
    names = [make_corpus.VALID, *ABORTS]
    results = dict(zip(names, _llama_cpp_load_all([HOSTILE / n for n in names]), strict=True))
    # control: llama.cpp loads the tiny valid model
    ok = results.pop(make_corpus.VALID)
    assert ok.returncode == 0 and "LOADED layers 1" in ok.stdout and "TOKENIZED" in ok.stdout, ok.stderr[-2000:]
    for name, crash in results.items():
        # llama.cpp kills the whole process: in the app that would be the engine or the TUI
        assert crash.returncode == -signal.SIGABRT, (name, crash.returncode, crash.stderr[-2000:])
        assert ABORTS[name] in crash.stderr, name
        with pytest.raises(ModelFileError, match=r"at byte \d+"):
            preflight(HOSTILE / name)


def test_preflight_memory_stays_small(smollm2_path: Path) -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        preflight(smollm2_path)  # 98 MB, a 49k-string vocabulary and 48k merges
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20


def test_a_file_llama_cpp_cannot_load_says_why_and_what_to_do(tmp_path: Path) -> None:
    """A model whose head count was 0 passed the checks, then said only "llama.cpp could not
    load heads0.gguf: failed to load model": llama.cpp's own reason, logged before, was left out."""
    import shutil

    import gguf

    from workstation.core.runtime import LoadedModel, RuntimeSettings

    bad = tmp_path / "heads0.gguf"
    shutil.copy(VALID, bad)
    reader = gguf.GGUFReader(bad, "r+")
    reader.fields["llama.attention.head_count"].parts[-1][0] = 0
    del reader
    with pytest.raises(ModelFileError) as failed:
        LoadedModel(bad, RuntimeSettings(n_ctx=64, n_threads=1))
    said = str(failed.value)
    assert said.startswith("llama.cpp could not load heads0.gguf: ") and "failed to load model" not in said, said
    assert "has wrong shape" in said and said.endswith("download it again, or use another model.")
