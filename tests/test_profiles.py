"""Profiles: validation that names file, field, value and allowed values; shipped profiles;
effective settings; switching profiles at runtime."""

from __future__ import annotations

import json
import os
from pathlib import Path

import gguf
import psutil
import pytest
import yaml
from conftest import GEMMA, kernel_physical_cores, make_profile, requantized_copy

from workstation.cli import main
from workstation.core.engine import Engine
from workstation.core.engine_host import EngineHost
from workstation.core.errors import EngineError, ProfileError
from workstation.core.profile_check import check_sampling, profile_from_dict
from workstation.core.profile_lookup import list_profiles, load_profile, load_profile_file
from workstation.core.profile_saving import save_profile
from workstation.core.profiles import KV_CACHE_TYPES, Sampling

PROJECT = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_profiles_are_all_valid() -> None:
    items = list_profiles(PROJECT / "profiles")
    assert len(items) >= 6
    broken = [str(i) for i in items if isinstance(i, ProfileError)]
    assert not broken
    keys = {p.key for p in items}  # type: ignore[union-attr]
    assert {"office-cpu", "long-documents", "quoting-lookup", "draft-pair"} <= keys
    # its half-size context memory costs speed on a CPU, said in both languages (it said only "in about
    # the same memory", where bench measured 0.79x the speed and 2.97x the wait for the first word)
    long = next(p for p in items if not isinstance(p, ProfileError) and p.key == "long-documents")
    assert "slower" in long.description and "yavaş" in long.description_tr, (long.description, long.description_tr)
    # its name says no "8K context" (jargon; F3's line under it says the words it reads, and a copy's differ)
    assert "8K" not in long.name + long.name_tr and long.title("tr") == "Uzun belgeler — SmolLM2 135M"


def test_a_profile_made_in_code_goes_to_a_command_as_a_private_file_removed_after(tmp_path: Path) -> None:
    """Ctrl+G hands the server a profile made in code as a file: it was left in /tmp for good
    (with the profile's system prompt); it is its owner's alone, and goes once read."""
    import dataclasses

    from workstation.tui.integrations import profile_file

    made = dataclasses.replace(load_profile_file(write(tmp_path, "name: x\nmodel: m\nsystem_prompt: Client A\n")),
                               source=None)
    with profile_file(made) as ref:
        assert os.stat(ref).st_mode & 0o077 == 0
        assert dataclasses.replace(load_profile_file(Path(ref)), source=None, written=made.written) == made
    assert not Path(ref).exists()
    with profile_file(load_profile_file(tmp_path / "p.yaml")) as own:  # one from a file: that file, kept
        assert own == str(tmp_path / "p.yaml")
    assert (tmp_path / "p.yaml").exists()


def test_bare_off_in_yaml_means_off(tmp_path: Path) -> None:
    prof = load_profile_file(write(tmp_path, "name: x\nmodel: m\nspeculative: {mode: off}\nflash_attn: off\n"))
    assert prof.speculative.mode == "off"
    assert prof.flash_attn == "off"
    # saved with a setting changed, only its line is written again: the word "off" stays a word,
    # and the notes at a line's end and inside a section stay (a save took every one away)
    text = ('name: "Notes # kept"  # the title\nmodel: m\nspeculative: {mode: off}   # none here\nflash_attn: off\n'
            'sampling:\n  # warm\n  temperature: 0.5 # "#" too\n')
    prof = load_profile_file(write(tmp_path, text))
    save_profile(prof, tmp_path / "p.yaml", {"name": "Notes # kept (my copy)", "speculative.mode": "lookup",
                                             "sampling.temperature": 0.7, "sampling.top_k": 20})
    assert (tmp_path / "p.yaml").read_text(encoding="utf-8") == (
        "name: 'Notes # kept (my copy)'  # the title\nmodel: m\nspeculative: {mode: lookup}   # none here\n"
        'flash_attn: off\nsampling:\n  # warm\n  temperature: 0.7 # "#" too\n  top_k: 20\n')
    # a setting going on at a line's start (a flow map's "}", a quoted title's next line): every note in
    # the file was lost, the file written out anew
    text = ('# my notes\nname: "Office\nCPU"  # two lines\nmodel: m\nkv_cache: {\n  k: f16,  # exact\n  v: f16\n}\n'
            'context: 4096  # more stalls\n')
    save_profile(load_profile_file(write(tmp_path, text)), tmp_path / "p.yaml", {"kv_cache.k": "q8_0", "context": 8192})
    assert (tmp_path / "p.yaml").read_text(encoding="utf-8") == text.replace("4096", "8192").replace(
        "kv_cache: {\n  k: f16,  # exact\n  v: f16\n}", "kv_cache: {k: q8_0, v: f16}")
    assert load_profile_file(tmp_path / "p.yaml").name == "Office CPU"


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("model: m\nkv_cache: {k: q9_0}\n", ["p.yaml", "kv_cache.k", "'q9_0'", "q8_0", "f16", "q4_0"]),
        ("model: m\ncontext: 1\n", ["p.yaml", "'context'", "1", "2 to 1,048,576"]),
        ("model: m\ncontext: 1048577\n", ["'context' is 1048577; allowed values are 2 to 1,048,576"]),
        ("model: m\ncontext: true\n", ["'context' must be a whole number, not True"]),  # (YAML's true is no 1)
        ("model: m\ngpu_layers: -1\n", ["'gpu_layers' is -1; allowed values are auto, all, or 0 and up"]),
        ("model: m\nthreads: 0\n", ["'threads' is 0; allowed values are auto or 1 to 512"]),
        ("model: m\nparallel: 0\n", ["'parallel' is 0; allowed values are 1 to 64 slots"]),
        ("backend: openai\nremote: {base_url: 'https://'}\n", ["'remote.base_url' is 'https://'; it must be a server's address"]),
        ("model: m\nspeculative: {mode: lookup, draft_tokens: 0}\n", ["'speculative.draft_tokens' is 0; allowed values are 1 to 64"]),
        ("model: m\nsampling: {top_p: 0}\n", ["'sampling.top_p' is 0.0; allowed values are above 0 up to 1"]),
        ("model: m\nsampling: {max_tokens: 0}\n", ["'sampling.max_tokens' is 0; allowed values are 1 to 10,000,000"]),
        ("model: m\ngpu_layers: many\n", ["'gpu_layers'", "'many'", "auto, all"]),
        ("model: m\nflash_attn: maybe\n", ["'flash_attn'", "'maybe'", "auto, on, off"]),
        ("model: m\nbackend: cloud\n", ["'backend'", "'cloud'", "llama, openai"]),
        ("model: m\ncolour: red\n", ["unknown field 'colour'", "kv_cache", "sampling"]),
        ("model: m\nsampling: {temprature: 0.1}\n", ["unknown field 'sampling.temprature'; did you mean 'temperature'?"]),
        ("model: m\ncontex: 2048\n", ["unknown field 'contex'; did you mean 'context'?"]),
        # a section's field at the top: where it goes (it only listed the top's fields)
        ("model: m\ntemperature: 0.2\n", ["'temperature'; it belongs under sampling, written as sampling: {temperature: 0.2}."]),
        ("model: m\ntemprature: 0.2\n", ["'temprature'; did you mean sampling: {temperature: 0.2}?"]),
        # with a sampling: block there, a second one would replace it: into the one there
        ("model: m\nsampling: {top_p: 0.9}\ntemperature: 0.2\n",
         ["'temperature'; it belongs as temperature: 0.2 in the sampling: block already there."]),
        ("model: m\nsampling: {top_p: 0.9}\nsampling: {temperature: 0.2}\n",
         ["has 'sampling' twice (the second would replace the first) at line 3."]),
        ("model: m\nbase_url: http://x\n", ["it belongs under remote, written as remote: {base_url: 'http://x'}."]),
        ("model: m\nsampling: {temperature: hot}\n", ["'sampling.temperature'", "must be a number", "'hot'"]),
        ("model: m\nsampling: {presence_penalty: 3}\n", ["sampling.presence_penalty", "is 3", "-2 to 2 (0 is off)"]),
        ("model: m\nsampling: {stop: 5}\n", ["'sampling.stop' must be a text or a list of texts, not 5"]),
        ("model: m\nsampling: {stop: ['']}\n", ["'sampling.stop' may hold up to 16 texts, none of them empty."]),
        ("model: m\nspeculative: {mode: draft}\n", ["speculative.draft_model is missing"]),
        ("model: m\nspeculative: {mode: magic}\n", ["'speculative.mode'", "off, draft, lookup"]),
        ("name: x\n", ["'model' is missing"]),
        ("model: [unclosed\n", ["not valid YAML at line 1."]),  # found at the end: the last line, not line 2
        ("model: m\nsampling: {temperature: 0.1\n", ["not valid YAML at line 2."]),
        # a tab said only "not valid YAML at line 4"
        ("model: m\nsampling:\n  top_p: 0.9\n\ttemperature: 0.2\n",
         ["not valid YAML at line 4: it is indented with a tab, and YAML takes spaces only."]),
        ("model: m\nsampling: {temperature:\t0.1\n", ["not valid YAML at line 2."]),  # a tab, but no indent
        ("- just\n- a list\n", ["a profile holds settings, one a line, such as 'model: NAME' (this file holds"]),
        ("", ["is empty; a profile holds settings, one a line, such as 'model: NAME'."]),  # said as jargon
    ],
)
def test_bad_field_names_file_field_value_and_allowed(tmp_path: Path, yaml_text: str, expected: list[str]) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile_file(write(tmp_path, yaml_text))
    message = str(info.value)
    for part in expected:
        assert part in message, f"{part!r} not in {message!r}"
    assert "\n" not in message


def test_every_mistake_in_a_file_is_said_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three typos took three runs of 'profiles check', each naming the next one."""
    path = write(tmp_path, "model: m\ncontxt: 2048\nsampling:\n  temprature: 0.5\n  top_p: 7\ngpu_layers: lots\n"
                           "name: 5\n")
    with pytest.raises(ProfileError) as info:
        load_profile_file(path)
    assert str(info.value) == (
        f"{path} has 5 problems: (1) unknown field 'contxt'; did you mean 'context'? (2) unknown field "
        "'sampling.temprature'; did you mean 'temperature'? (3) field 'name' must be text, not 5. (4) field "
        "'gpu_layers' is 'lots'; allowed values are auto, all, or 0 and up. (5) field 'sampling.top_p' is 7.0; "
        "allowed values are above 0 up to 1.")
    one = write(tmp_path, "model: m\ngpu_layers: lots\n")  # one: as it was
    with pytest.raises(ProfileError) as info:
        load_profile_file(one)
    assert str(info.value) == f"{one}: field 'gpu_layers' is 'lots'; allowed values are auto, all, or 0 and up."
    typed = write(tmp_path, "model: 5\n")  # a model of the wrong kind is not also "missing"
    with pytest.raises(ProfileError) as info:
        load_profile_file(typed)
    assert "missing" not in str(info.value) and "'model'" in str(info.value)
    # `profiles check bad.yaml` finds it in the user's profiles folder, as -p does (it said the
    # file did not exist)
    from workstation.cli import main
    from workstation.core.paths import user_profiles_dir

    user_profiles_dir().mkdir(parents=True, exist_ok=True)
    (user_profiles_dir() / "bad.yaml").write_text("model: m\ncontxt: 2\ngpu_layers: lots\n", encoding="utf-8")
    assert main(["profiles", "check", "bad.yaml"]) == 1
    assert "bad.yaml has 2 problems: (1) unknown field 'contxt'" in capsys.readouterr().err
    empty = write(tmp_path, "model: ''\ncontxt: 2\n")  # one written empty is (it passed as valid)
    with pytest.raises(ProfileError) as info:
        load_profile_file(empty)
    assert "(2) field 'model' is missing; give a catalog name or a .gguf path." in str(info.value)


def test_quantized_v_needs_flash_attention(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="flash attention for a quantized V cache"):
        load_profile_file(write(tmp_path, "model: m\nflash_attn: off\nkv_cache: {k: q8_0, v: q4_0}\n"))
    # quantized K alone is fine without flash attention; auto turns it on for quantized V
    assert load_profile_file(write(tmp_path, "model: m\nflash_attn: off\nkv_cache: {k: q8_0, v: f16}\n"))
    prof = load_profile_file(write(tmp_path, "model: m\nkv_cache: {k: q4_0, v: q4_0}\n"))
    assert prof.resolved_flash_attn()


def test_defaults_fit_the_machine() -> None:
    prof = profile_from_dict({"model": "m"})
    kernel = kernel_physical_cores()  # Linux's own list; elsewhere at least one, at most every core
    if kernel is not None:
        assert prof.resolved_threads() == kernel
    assert 1 <= prof.resolved_threads() <= (os.cpu_count() or 1)
    assert profile_from_dict({"model": "m", "threads": 3}).resolved_threads() == 3
    assert prof.gpu_layers == "auto" and prof.flash_attn == "auto"


def test_missing_profile_lists_available() -> None:
    with pytest.raises(ProfileError, match="available profiles: .*office-cpu"):
        load_profile("no-such-profile")


def test_profiles_are_listed_in_the_alphabets_order(tmp_path: Path) -> None:
    """Sorted by code point: Office-GPU before büro, Çeviri after zeki."""
    from workstation.core.profile_folders import profile_paths

    for name in ("zeki", "Çeviri", "büro", "Office-GPU"):
        (tmp_path / f"{name}.yaml").write_text("model: m\n", encoding="utf-8")
    assert [p.stem for p in profile_paths(tmp_path)] == ["büro", "Çeviri", "Office-GPU", "zeki"]


def test_a_folder_or_a_binary_file_given_as_a_profile_is_one_plain_sentence(tmp_path: Path) -> None:
    """`fit -p FOLDER` said "(Errno 21] Is a directory: ...)"."""
    with pytest.raises(ProfileError) as folder:
        load_profile(f"{tmp_path}/")
    assert str(folder.value) == f"Profile file {tmp_path} is a folder; give the file in it."
    (tmp_path / "odd.yaml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ProfileError) as odd:
        load_profile(str(tmp_path / "odd.yaml"))
    assert str(odd.value) == f"Profile file {tmp_path / 'odd.yaml'} cannot be read: it is not UTF-8 text."


def test_a_models_name_given_as_a_profile_says_how_to_make_one(smollm2_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`-p NAME` of an installed model (a copy just made by models quantize) said "There is no
    profile named"; a model file's path runs (test_model_profile.py). One a profile runs names
    that profile, as a catalog model's name does (``profile_lookup.profiles_running``)."""
    requantized_copy(smollm2_path, "q4_0")  # (no profile runs it)
    with pytest.raises(ProfileError, match=r"^SmolLM2-135M-Instruct.Q4_0 is a model, not a profile; .*profiles new "
                                           r"SmolLM2-135M-Instruct.Q4_0: it makes"):
        load_profile("SmolLM2-135M-Instruct.Q4_0")
    with pytest.raises(ProfileError, match=r"^smollm2-135m-instruct-q4_1 is a model, not a profile; the profiles "
                                           r"office-cpu, .* run it: -p office-cpu"):
        load_profile("smollm2-135m-instruct-q4_1")
    # said in the app's language, a misspelt profile too (both were English under Turkish)
    from workstation.cli import main

    assert main(["chat", "-p", "SmolLM2-135M-Instruct.Q4_0", "--lang", "tr", "hi"]) == 1
    assert capsys.readouterr().err.startswith("workstation: SmolLM2-135M-Instruct.Q4_0 bir model, profil değil; "
                                              "kullanmak için ")
    assert main(["chat", "-p", "smollm2-135m-instruct-q4_1", "--lang", "tr", "hi"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("workstation: smollm2-135m-instruct-q4_1 bir model, profil değil; onu office-cpu, ") and \
        "chat -p office-cpu --lang tr hi." in err, err
    assert main(["fit", "-p", "ofice-cpu", "--lang", "tr"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("workstation: 'ofice-cpu' adında bir profil yok; var olan profiller: ") and \
        err.endswith(", office-cpu, office-server, quoting-lookup. Bunu mu demek istediniz: 'office-cpu'?\n"), err


def test_a_shipped_profiles_file_name_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-p long-documents.yaml` from any folder: the file in profiles/ (a file of that name in
    the folder the command runs in still wins)."""
    monkeypatch.chdir(tmp_path)
    assert load_profile("long-documents.yaml").source == PROJECT / "profiles" / "long-documents.yaml"
    write(tmp_path, "name: Mine\nmodel: x.gguf\n", "long-documents.yaml")
    assert load_profile("long-documents.yaml").name == "Mine"
    with pytest.raises(ProfileError, match="does not exist"):
        load_profile("no-such-profile.yaml")
    # a desk PC's copy of office-server.yaml given a name of its own: the shipped Turkish name is not its
    # name (the Turkish UI said "Ofis sunucusu" of it); a copy that keeps the name keeps its Turkish one
    shipped = (PROJECT / "profiles" / "office-server.yaml").read_text(encoding="utf-8")
    renamed = write(tmp_path, shipped.replace("name: Office server (OpenAI-compatible)", "name: Accounting server"),
                    "office-server.yaml")
    assert load_profile_file(renamed).title("tr") == "Accounting server"
    assert load_profile_file(write(tmp_path, shipped, "copy.yaml")).title("tr") == "Ofis sunucusu (OpenAI uyumlu)"


def test_profiles_check_json_shows_effective_settings(capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    assert main(["profiles", "check", "office-cpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["threads"] == load_profile("office-cpu").resolved_threads()
    assert data["flash_attn"] == "on"
    # the app's slots, and serve's where the file sets none (parallel: 1 looked like serve's too)
    assert data["parallel"] == 1 and data["serve_slots"] == 4
    assert isinstance(data["gpu_layers"], int)
    assert data["model_installed"] is True
    assert Path(data["model_path"]) == smollm2_path
    assert data["ready"] is True and data["not_ready"] is None


def test_profiles_check_exits_1_when_the_profile_cannot_run_here(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        smollm2_path: Path) -> None:
    """Valid is not enough for a script: a profile whose draft model is missing, or that does not
    fit this machine, exits 1 with the reason (as a desk PC's profile does when its server is down)."""
    drafted = tmp_path / "drafted.yaml"
    drafted.write_text(f"name: drafted\nmodel: {smollm2_path}\n"
                       f"speculative: {{mode: draft, draft_model: {tmp_path / 'gone.gguf'}}}\n", encoding="utf-8")
    assert main(["profiles", "check", str(drafted), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ready"] is False and "gone.gguf does not exist" in data["not_ready"]
    crowded = tmp_path / "all-on-gpu.yaml"
    crowded.write_text(f"name: all on GPU\nmodel: {smollm2_path}\ngpu_layers: 31\n", encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 3050", "vram_total_gb": 4, "vram_free_gb": 0.05}]))
    assert main(["profiles", "check", str(crowded)]) == 1
    assert "ready            no: does not fit: 31 layers on the GPU need" in capsys.readouterr().out
    # in the app's language, as F9 saves it (it was English on a Turkish PC); --lang says another
    from workstation.tui.settings import save_language

    assert save_language("tr")
    assert main(["profiles", "check", str(crowded)]) == 1
    out = capsys.readouterr().out
    assert "\n  hazır                          hayır: sığmıyor: GPU üzerindeki 31 katman" in out, out
    # the settings' names and the words among their values too (they were English: "threads 2 (auto:
    # chosen for this machine)", "seed a new one each turn"); the file's own key beside each name
    assert "\n  GPU katmanı (gpu_layers)       31\n" in out and "\n  model kurulu                   evet\n" in out, out
    assert " (auto: bu bilgisayar için seçildi)\n" in out and "Tohum her turda yeni" in out, out
    # the sampling by Ctrl+E's names, with the decimal comma (it said "temperature 0.7, top_p 0.95")
    # (set apart by "; ": "Sıcaklık 0,7, Top-p 0,95" read as a list of numbers)
    assert "\n  örnekleme (sampling)           Sıcaklık 0,7; Top-p 0,95; Top-k 40; Min-p 0,05; Tekrar cezası 1,1; " \
           "En uzun yanıt 1.024; Tohum her turda yeni\n" in out, out
    assert not [w for w in ("chosen", "each turn", "sampling ", "backend ", "ready ", " yes") if w in out], out
    assert main(["profiles", "check", str(drafted), "--lang", "en"]) == 1
    out = capsys.readouterr().out
    assert "ready            no: " in out and "\n  speculative      draft\n" in out, out
    assert main(["profiles", "check", str(drafted)]) == 1
    out = capsys.readouterr().out  # (the speed-up's word as F3 says it, with the file's: it said "draft")
    assert "gone.gguf model dosyası yok" in out and "\n  hızlandırma (speculative)      yardımcı (draft)\n" in out, out
    assert main(["profiles", "check", str(drafted), "--json"]) == 1  # a script's words as they are documented
    assert "gone.gguf does not exist" in json.loads(capsys.readouterr().out)["not_ready"]
    # a mistake in the command line too, known before it is read (argparse's own words stayed English)
    with pytest.raises(SystemExit) as stopped:
        main(["profiles", "chek"])
    assert stopped.value.code == 2
    assert "'profiles chek' diye bir komut yok; bunu mu demek istediniz: 'profiles check'?" in capsys.readouterr().err
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 3050", "vram_total_gb": 4, "vram_free_gb": 3.5}]))
    assert main(["profiles", "check", str(crowded)]) == 0


def test_profiles_check_bad_file_exits_nonzero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "model: m\nkv_cache: {v: q3}\n")
    assert main(["profiles", "check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kv_cache.v" in err and "Traceback" not in err


def test_profiles_list_marks_missing_models(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "list", "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["profiles"]}
    assert rows["office-cpu"]["status"] == "ready"
    assert rows["gpu-llama31-8b"]["status"] == "model not installed"


def test_profiles_list_does_not_call_a_profile_that_does_not_fit_ready(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        smollm2_path: Path) -> None:
    """It said 'ready — does not fit: ...'."""
    (tmp_path / "all-on-gpu.yaml").write_text(f"name: all on GPU\nmodel: {smollm2_path}\ngpu_layers: 31\n",
                                              encoding="utf-8")
    # the K/V types in F3's words ("half size", "full size" for the usual f16/f16, whose cell was empty): it
    # said "f16/f16", "q8_0/q8_0"
    (tmp_path / "halved.yaml").write_text(f"model: {smollm2_path}\nkv_cache: {{k: q8_0, v: q8_0}}\n", encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_PROFILES", str(tmp_path))
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 3050", "vram_total_gb": 4, "vram_free_gb": 0.05}]))
    assert main(["profiles", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    line = next(x for x in lines if x.startswith("all-on-gpu "))
    assert "  does not fit: 31 layers" in line and "ready" not in line and line.count("does not fit") == 1
    assert "CONTEXT MEMORY" in lines[0] and "f16" not in line and "  full size  " in line
    assert " half size " in next(x for x in lines if x.startswith("halved ")) and "q8_0" not in "".join(lines)
    assert main(["profiles", "check", str(tmp_path / "halved.yaml")]) == 0
    assert "kv_cache         K q8_0, V q8_0 (context memory half size)" in capsys.readouterr().out
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 3050", "vram_total_gb": 4, "vram_free_gb": 3.5}]))
    assert main(["profiles", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["profiles"][0]["status"] == "ready"


def test_a_damaged_model_is_one_profiles_status_not_the_lists_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        smollm2_path: Path) -> None:
    """One profile whose model file was cut short ended `profiles list` with that file's error and
    no table at all, without saying which profile it was."""
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(smollm2_path.read_bytes()[: 50 * 2**20])
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "mine.yaml").write_text(f"name: mine\nmodel: {cut}\n", encoding="utf-8")
    (folder / "good.yaml").write_text(f"name: good\nmodel: {smollm2_path}\n", encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))
    assert main(["profiles", "list"]) == 0
    lines = {x.split()[0]: x for x in capsys.readouterr().out.splitlines()[1:]}
    assert "model file damaged" in lines["mine"] and "ready" in lines["good"]
    assert main(["profiles", "list", "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["profiles"]}
    assert rows["mine"]["status"] == "model file damaged" and rows["good"]["status"] == "ready"
    assert main(["profiles", "check", str(folder / "mine.yaml")]) == 1
    out = capsys.readouterr().out
    assert "ready            no: " in out and "cut.gguf is not a usable GGUF model" in out, out


@pytest.mark.parametrize("k,v", [("f16", "f16"), ("q8_0", "q8_0"), ("q8_0", "q4_0"), ("q4_0", "q4_0")])
def test_kv_cache_types_reach_llama_cpp_with_exact_byte_ratios(smollm2_path: Path, k: str, v: str) -> None:
    """llama.cpp allocates K and V with the requested types: bytes per element are exactly
    2 (f16), 34/32 (q8_0: 32 values + an f16 scale) and 18/32 (q4_0)."""
    per_element = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
    eng = Engine(make_profile(context=4096, kv_cache={"k": k, "v": v}))
    try:
        k_bytes, v_bytes = eng.model.kv_cache_bytes
        # SmolLM2-135M: 30 layers x 3 KV heads x 64 dims = 5760 values per token for K and for V
        elements = 4096 * 30 * 3 * 64
        assert k_bytes == pytest.approx(elements * per_element[k], abs=0.01 * 2**20)
        assert v_bytes == pytest.approx(elements * per_element[v], abs=0.01 * 2**20)
        assert eng.info().type_k == k and eng.info().type_v == v
        assert eng.run_chat([{"role": "user", "content": "Hi"}]).text.strip()
    finally:
        eng.close()


def test_kv_cache_names_are_llama_cpp_types() -> None:
    """Each name maps to ggml's own type number (the gguf package's enum, not a copy of ours)."""
    for name, number in KV_CACHE_TYPES.items():
        assert gguf.GGMLQuantizationType[name.upper()] == number, name


def _rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def test_closing_an_engine_returns_its_memory(gemma_path: Path) -> None:
    before = _rss_mib()
    eng = Engine(make_profile(model=GEMMA, context=4096))
    eng.run_chat([{"role": "user", "content": "The weather today"}])
    loaded = _rss_mib()
    eng.close()
    after = _rss_mib()
    assert loaded - before > 150, "the model's weights should be resident while loaded"
    assert after - before < (loaded - before) * 0.3, f"{before:.0f} -> {loaded:.0f} -> {after:.0f} MiB"


def test_switching_profiles_keeps_the_conversation(tmp_path: Path, gemma_path: Path, smollm2_path: Path) -> None:
    host = EngineHost(make_profile(context=2048), child_process=True)
    try:
        first_pid = host.engine.pid
        messages = [{"role": "user", "content": "My name is Ayşe. Say hello."}]
        reply = host.engine.run_chat(messages)
        messages += [{"role": "assistant", "content": reply.text}, {"role": "user", "content": "Thanks!"}]
        host.switch(make_profile(model=GEMMA, context=1024, kv_cache={"k": "q8_0", "v": "q8_0"}))
        assert not psutil.pid_exists(first_pid) or psutil.Process(first_pid).status() == psutil.STATUS_ZOMBIE
        info = host.engine.info()
        assert info.n_ctx == 1024 and info.type_k == "q8_0"
        second = host.engine.run_chat(messages)
        assert second.metrics.stop_reason in ("eos", "length", "stop")  # (gemma: the stand-in template's end)
        # the new model read the whole conversation: every token of its prompt was computed or
        # reused, and that prompt is longer than the last message alone
        whole = host.engine.chat_prompt(messages)
        assert second.metrics.prompt_n + second.metrics.cache_n == len(whole)
        assert len(whole) > len(host.engine.chat_prompt(messages[-1:])) + 10
    finally:
        host.close()


def test_failed_switch_keeps_the_previous_profile_running(tmp_path: Path, smollm2_path: Path) -> None:
    host = EngineHost(make_profile(context=2048), child_process=True)
    try:
        broken = make_profile(model=tmp_path / "missing.gguf")
        with pytest.raises(EngineError, match="does not exist.*previous profile 'test' is running again"):
            host.switch(broken)
        assert host.profile.model.endswith("q4_1")
        assert host.engine.run_chat([{"role": "user", "content": "Hi"}]).text.strip()
    finally:
        host.close()


def test_profiles_check_says_whether_a_reasoning_model_thinks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    assert main(["profiles", "check", "gpu-qwen3-8b"]) == 1  # valid, but its model is not downloaded
    out = capsys.readouterr().out
    assert "thinking         on (the model thinks before it answers)" in out
    assert "ready            no: The model qwen3-8b-q4_k_m is not downloaded yet; run '" in out
    assert "model_installed  no\n" in out  # in words (it printed Python's False)
    quick = tmp_path / "quick.yaml"
    data = yaml.safe_load((PROJECT / "profiles" / "gpu-qwen3-8b.yaml").read_text(encoding="utf-8"))
    quick.write_text(yaml.safe_dump({**data, "thinking": False}), encoding="utf-8")
    assert main(["profiles", "check", str(quick)]) == 1
    assert "thinking         off (a reasoning model answers at once)" in capsys.readouterr().out
    assert main(["profiles", "check", "office-cpu"]) == 0  # not a reasoning model: not mentioned
    out = capsys.readouterr().out
    assert "thinking" not in out and "ready            yes" in out


def test_a_model_named_relative_to_its_profile_is_found_from_any_folder(
    tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`model: only-here.gguf` beside ~/Downloads/desk.yaml worked when started from Downloads;
    from another folder `profiles check` said that models/only-here.gguf did not exist, a path
    the user never wrote. A name that is no file beside the profile still means models/."""
    import shutil

    from workstation.cli import main
    from workstation.core.profile_lookup import load_profile

    downloads = tmp_path / "Downloads"
    (downloads / "models").mkdir(parents=True)
    shutil.copy(smollm2_path, downloads / "only-here.gguf")
    shutil.copy(smollm2_path, downloads / "models" / "sub.gguf")
    for name, model in (("desk", "only-here.gguf"), ("dotted", "./models/sub.gguf"), ("named", "smollm2-135m-instruct-q4_1")):
        (downloads / f"{name}.yaml").write_text(f"name: {name}\nmodel: {model}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # not the profile's folder
    assert load_profile(str(downloads / "desk.yaml")).model == str(downloads / "only-here.gguf")
    assert load_profile(str(downloads / "dotted.yaml")).model == str(downloads / "models" / "sub.gguf")
    assert load_profile(str(downloads / "named.yaml")).model == "smollm2-135m-instruct-q4_1"  # the catalog's
    assert main(["profiles", "check", str(downloads / "desk.yaml")]) == 0, capsys.readouterr()
    (downloads / "nohome.yaml").write_text("name: nohome\nmodel: ~nosuchuser/m.gguf\n", encoding="utf-8")
    assert load_profile(str(downloads / "nohome.yaml")).model == "~nosuchuser/m.gguf"  # not a RuntimeError


def test_a_sampling_setting_out_of_range_is_said_in_the_apps_language() -> None:
    """Ctrl+E in Turkish said "Sıcaklık is 9.0; allowed values are 0 to 5." (an English sentence
    round a Turkish name); the check says it in phrases, its numbers the language's way."""
    from workstation.core.phrases import say
    from workstation.tui.i18n import Texts

    tr = Texts("tr")
    with pytest.raises(ProfileError) as refused:
        check_sampling(Sampling(temperature=9.5), lambda name: tr(f"sampling.{name}"))
    assert say(refused.value.said, tr.get) == "Sıcaklık 9,5; izin verilen değerler 0 ile 5 arası."
    assert str(refused.value) == "Sıcaklık is 9.5; allowed values are 0 to 5."  # the command line's English


@pytest.mark.parametrize(("field", "value"), [
    ("top_k", 1_000_000), ("top_k", 1_000_001), ("repeat_penalty", 0.005), ("repeat_penalty", 0.01),
    ("repeat_penalty", 10.0), ("repeat_penalty", 10.5), ("max_tokens", 10_000_000), ("max_tokens", 10_000_001),
    ("temperature", 5.0), ("temperature", 5.5), ("min_p", 1.0), ("presence_penalty", 2.5), ("frequency_penalty", -2.0),
    ("stop", ["x"] * 16), ("stop", ["x"] * 17),
])
def test_what_a_profile_may_hold_a_server_takes(field: str, value: float | list[str]) -> None:
    """A setting a profile, chat's option or Ctrl+E took and the server refused (top-k 10^11,
    repeat penalty 0.005) failed every turn of a desk PC with HTTP 400: one set of bounds."""
    from workstation.core.server.protocol import ApiError, parse_params

    try:
        check_sampling(Sampling(**{field: value}), str)
        local = True
    except ProfileError:
        local = False
    try:
        parse_params({field: value}, Sampling())
        served = True
    except ApiError:
        served = False
    assert local == served, (field, value, local, served)


def test_a_profile_may_hold_64_slots_and_no_more(tmp_path: Path) -> None:
    """The most slots a profile may ask for is 64, as serve's id_slot 0 to 63 says: 64 was
    refused with "allowed values are 1 to 64 slots"."""
    assert load_profile_file(write(tmp_path, "model: m\nparallel: 64\n")).parallel == 64
    with pytest.raises(ProfileError, match="'parallel' is 65; allowed values are 1 to 64 slots"):
        load_profile_file(write(tmp_path, "model: m\nparallel: 65\n"))


def test_top_p_0_in_a_request_keeps_only_the_most_likely_token() -> None:
    """A request's top_p 0 (only the most likely token, as llama-server's sampler reads it)
    sampled from every token min_p let through."""
    import numpy as np

    from workstation.core.server.protocol import parse_params
    from workstation.core.speculative import sampling_distribution

    s = parse_params({"top_p": 0, "temperature": 1.0}, Sampling()).sampling
    ids, _ = sampling_distribution(np.array([2.0, 1.9, 1.8], dtype=np.float32), s, [])
    assert list(ids) == [0]


def test_max_tokens_minus_one_runs_as_long_as_the_context_allows() -> None:
    """``max_tokens: -1`` (llama-server's "until the context is full", sent by LM Studio's
    examples) was a 400 for every request of a client made for those; 0 or -2 say -1 is allowed."""
    from workstation.core.server.protocol import MAX_PREDICT, ApiError, parse_params

    assert parse_params({"max_tokens": -1}, Sampling()).max_tokens == MAX_PREDICT
    assert parse_params({"max_completion_tokens": -1}, Sampling()).max_tokens == MAX_PREDICT
    assert parse_params({"max_tokens": 7}, Sampling()).max_tokens == 7
    for wrong in (0, -2, True, "5", -1.0):
        with pytest.raises(ApiError) as said:
            parse_params({"max_tokens": wrong}, Sampling())
        assert said.value.param == "max_tokens"
        if isinstance(wrong, int) and not isinstance(wrong, bool):
            assert said.value.message == f"'max_tokens' is {wrong}; allowed values are 1 to {MAX_PREDICT}, " \
                "or -1 for as long as the context allows.", said.value.message


def test_a_reply_cut_short_by_its_slot_says_length_to_openai_clients() -> None:
    """A reply that ran out of its slot's context said finish_reason "stop", so a client took
    the cut-off text for a whole answer; only the ends the model chose (or a cancel) say "stop"."""
    from workstation.core.server.protocol import FINISH

    assert {reason for reason, said in FINISH.items() if said == "length"} == {"length", "context"}


def test_seed_minus_one_is_random_and_another_negative_its_unsigned_bits() -> None:
    """-1 is llama.cpp's "a new seed each time" (0xFFFFFFFF unsigned); another negative seed is
    its unsigned 32 bits, as serve takes it (-2 was random here and fixed through a desk PC)."""
    from workstation.core.profile_check import fixed_seed

    assert [fixed_seed(Sampling(seed=s)) for s in (None, -1, 0xFFFFFFFF, -2, 0, 42)] == [
        None, None, None, 0xFFFFFFFE, 0, 42]


def test_a_profile_files_reading_errors_are_said_in_the_command_lines_language(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under --lang tr a wrong field name was Turkish, but a file that is not UTF-8, not YAML,
    indented with a tab or empty was said in English (profiles check and chat -p alike); a task
    set's, read by the same YAML reader, too."""
    files = {"nonutf8.yaml": b"model: x\ncontext: 2\xff\n", "tab.yaml": b"model: m\nsampling:\n\ttemperature: 1\n",
             "empty.yaml": b"", "bad.yaml": b"model: [a\n", "twice.yaml": b"model: a\nmodel: b\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    said = {name: f"workstation: {tmp_path / name}{text}\n" for name, text in (
        ("tab.yaml", " geçerli bir YAML değil (3. satır): satır başında sekme (Tab) var, YAML ise yalnızca boşluk "
                     "kabul eder."),
        ("empty.yaml", " boş; bir profil her satırda bir ayar tutar, örneğin 'model: İSİM'."),
        ("bad.yaml", " geçerli bir YAML değil (1. satır)."),
        ("twice.yaml", " içinde 'model' iki kez yazılmış (ikincisi birincinin yerine geçerdi) (2. satır)."))}
    said["nonutf8.yaml"] = f"workstation: Profil dosyası {tmp_path / 'nonutf8.yaml'} okunamıyor: UTF-8 metin değil.\n"
    for name, sentence in said.items():
        assert main(["profiles", "check", "--lang", "tr", str(tmp_path / name)]) == 1
        assert capsys.readouterr().err == sentence
    assert main(["chat", "--lang", "tr", "-p", str(tmp_path / "tab.yaml"), "hi"]) == 1
    assert capsys.readouterr().err == said["tab.yaml"]
    assert main(["eval", "--lang", "tr", "--no-save", "--tasks", str(tmp_path / "tab.yaml")]) == 1
    assert capsys.readouterr().err == said["tab.yaml"]
    # English as before
    assert main(["profiles", "check", str(tmp_path / "tab.yaml")]) == 1
    assert capsys.readouterr().err == (f"workstation: {tmp_path / 'tab.yaml'} is not valid YAML at line 3: it is "
                                       "indented with a tab, and YAML takes spaces only.\n")
