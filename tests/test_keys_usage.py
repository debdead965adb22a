"""People's keys, tokens per day and the usage file, without a model: real SQLite files in the
test's data folder, the clock injected, and the ``keys`` and ``usage`` commands."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import time
from pathlib import Path

import pytest

from workstation.cli import main
from workstation.core.keys import KeyRing, KeyRingError, logged_name
from workstation.core.paths import data_dir
from workstation.core.quota import DailyQuota, OverQuota, day_start, next_day_start
from workstation.core.usage import SHARED, UNKNOWN, UsageError, UsageLog, UsageRecord, parse_since


# --- keys ----------------------------------------------------------------------------------------
def test_a_key_is_stored_as_a_digest_and_found_by_the_key(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path / "keys.sqlite3")
    key, secret = ring.add("alice", tokens_per_day=1000, max_parallel=2, profiles=["office-cpu", "office-gpu"])
    assert secret.startswith("ws-") and len(secret) > 40
    found = ring.find(secret)
    assert found is not None and found.name == "alice"
    assert (found.tokens_per_day, found.max_parallel, found.profiles) == (1000, 2, ("office-cpu", "office-gpu"))
    assert found.allows("office-gpu") and not found.allows("big-model")
    assert ring.find(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
    ring.close()
    raw = (tmp_path / "keys.sqlite3").read_bytes()
    assert secret.encode() not in raw  # only the digest is kept
    with sqlite3.connect(tmp_path / "keys.sqlite3") as db:
        assert db.execute("SELECT hash FROM keys").fetchone()[0] != secret


def test_one_active_key_per_name_and_revocation(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path / "keys.sqlite3")
    _, first = ring.add("bob")
    with pytest.raises(KeyRingError, match="already has a key"):
        ring.add("bob")
    ring.add("Ayşe Yılmaz")  # a person's name, with its space and Turkish letters (refused for the space)
    with pytest.raises(KeyRingError, match="already has a key") as refused:  # typed with two spaces: the same name
        ring.add("Ayşe  Yılmaz ")
    # the name in quotes as people read it (it said `keys revoke Ayşe\ Yılmaz`), still one shell word
    assert str(refused.value).endswith(" keys revoke 'Ayşe Yılmaz')."), str(refused.value)
    assert shlex.split(str(refused.value).rsplit("keys revoke ", 1)[1][:-2]) == ["Ayşe Yılmaz"]
    assert logged_name("Ayşe Yılmaz") == '"Ayşe Yılmaz"' and logged_name("bob") == "bob"  # a log line's field
    ring.revoke("ayşe yılmaz")
    for bad in ("_bob", "-bob", "bob/x", "a" * 65, "bob / smith"):
        with pytest.raises(KeyRingError, match="not allowed"):
            ring.add(bad)
    for bad in ("Ali\tVeli", "Ali\nVeli", "Ali\x1bVeli"):  # (a tab became a space without a word)
        with pytest.raises(KeyRingError, match="holds a tab, a line break or another control character; type it"):
            ring.add(bad)
    ring.add("ayşe.yılmaz")  # a Turkish name: "letters", as the rule says (only a-z were)
    with pytest.raises(KeyRingError, match="already has a key"):  # the same name typed with a combining cedilla
        ring.add("ays\u0327e.yılmaz")
    with pytest.raises(KeyRingError, match="--max-parallel"):
        ring.add("carol", max_parallel=65)
    with pytest.raises(KeyRingError, match="--tokens-per-day is -1; it must be 1 or more, or 0 for no limit"):
        ring.add("carol", tokens_per_day=-1)
    revoked = ring.revoke("bob", now=1000.0)
    assert revoked.revoked == 1000.0
    found = ring.find(first)
    assert found is not None and found.revoked is not None  # the server says "revoked"
    _, second = ring.add("bob")  # a new key for the same person
    assert ring.find(second) is not None and ring.find(second).revoked is None
    assert [k.name for k in ring.list()] == ["ayşe.yılmaz", "bob"]
    assert len(ring.list(include_revoked=True)) == 4  # (Ayşe Yılmaz revoked)
    with pytest.raises(KeyRingError, match="no active key named 'nobody'"):
        ring.revoke("nobody")
    # a revoke touches the key revoked alone: bob's first key keeps the date it was revoked on,
    # and the key returned is the one just revoked (it was bob's first, revoked at 1000)
    assert ring.revoke("bob", now=2000.0).revoked == 2000.0
    assert sorted(k.revoked for k in ring.list(include_revoked=True) if k.name == "bob") == [1000.0, 2000.0]
    ring.revoke("ayşe.yılmaz")
    assert ring.list() == [] and ring.any_keys()  # revoking every key must not open the server


def test_a_keys_last_use_never_goes_back(tmp_path: Path) -> None:
    """Uses are written in batches, by several requests' threads: one written late with an
    older time must not set the key's "last used" back (``keys list`` would show a day gone)."""
    ring = KeyRing(tmp_path / "keys.sqlite3")
    key, _ = ring.add("alice")
    other, _ = ring.add("bob")
    assert key.id is not None and other.id is not None
    ring.touch({key.id: 2000.0})
    ring.touch({key.id: 1000.0, other.id: 1500.0})  # an older use of alice's, written after
    assert {k.name: k.last_used for k in ring.list()} == {"alice": 2000.0, "bob": 1500.0}
    ring.touch({key.id: 3000.0})
    assert {k.name: k.last_used for k in ring.list()} == {"alice": 3000.0, "bob": 1500.0}
    ring.close()


def test_a_name_in_other_capitals_is_the_same_person(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """AYŞE beside ayşe and ismail beside İsmail were two people (SQLite compared the bytes)."""
    ring = KeyRing(tmp_path / "keys.sqlite3")
    ring.add("İsmail")
    with pytest.raises(KeyRingError, match="'ismail' is 'İsmail' in other capitals, and 'İsmail' already has a key"):
        ring.add("ismail")
    for name in ("zeki", "Çağla", "Ali"):
        ring.add(name)
    assert [k.name for k in ring.list()] == ["Ali", "Çağla", "İsmail", "zeki"]  # the alphabet's order, case aside
    ring.close()
    assert main(["keys", "add", "ayşe"]) == 0
    capsys.readouterr()
    assert main(["keys", "add", "AYŞE"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'AYŞE' is 'ayşe' in other capitals" in err and "keys revoke ayşe" in err
    # revoking takes the name in any capitals, as adding does (it needed the exact writing)
    assert main(["keys", "revoke", "AYŞE"]) == 0
    assert "Revoked the key of 'ayşe'" in capsys.readouterr().out
    ring = KeyRing(tmp_path / "keys.sqlite3")
    assert ring.revoke("ISMAIL").name == "İsmail"
    assert [k.name for k in ring.list()] == ["Ali", "Çağla", "zeki"]


def test_a_terminal_without_the_letters_gets_question_marks_not_an_error(tmp_path: Path) -> None:
    """Under an ASCII or latin-1 locale a name (or a reply) with letters the encoding lacks
    ended the command with "unexpected error: UnicodeEncodeError", half printed."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": "ascii", "WORKSTATION_DATA": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "workstation.cli", "keys", "add", "zoë.şahin"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and "UnicodeEncodeError" not in done.stderr, done.stderr
    assert done.stdout.startswith("ws-") and "'zo?.?ahin'" in done.stderr, done.stderr


def test_keys_commands_print_the_key_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "add", "alice", "--tokens-per-day", "5000", "--max-parallel", "2", "--profiles", "a,b"]) == 0
    out, err = capsys.readouterr()
    secret = out.strip()
    assert secret.startswith("ws-") and "not shown again" in err
    assert "this is the first key, so from now on serve" in err and "WORKSTATION_API_KEY" in err
    # the key in a file first (README, an office on one server), the environment variable after it
    assert err.index("remote.api_key_file (api_key_file: ~/.config/workstation/api-key)") < err.index(
        "set WORKSTATION_API_KEY"), err
    assert main(["keys", "list"]) == 0
    listed = capsys.readouterr().out
    assert "alice" in listed and "5,000" in listed and "a,b" in listed and secret not in listed
    assert main(["keys", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["keys"][0]["name"] == "alice" and "key" not in data["keys"][0]
    assert main(["keys", "add", "alice"]) == 1
    assert "already has a key" in capsys.readouterr().err
    assert main(["keys", "add", "bob"]) == 0
    assert "first key" not in capsys.readouterr().err  # said once, with the first
    assert main(["keys", "revoke", "bob"]) == 0
    assert "last key" not in capsys.readouterr().out
    # the last key revoked: the server stays closed (revoked keys count); it said "No keys yet"
    assert main(["keys", "revoke", "alice"]) == 0
    assert "That was the last key in use. serve now refuses every request (but those with the operator" in capsys.readouterr().out
    assert main(["keys", "list", "--all", "--json"]) == 0
    revoked = next(k["revoked"] for k in json.loads(capsys.readouterr().out)["keys"] if k["name"] == "alice")
    assert main(["keys", "list"]) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("No key is in use (2 revoked: ") and "keys add NAME" in listed, listed
    assert main(["keys", "revoke", "alice"]) == 1  # it said "There is no active key named 'alice'", as for a stranger
    assert capsys.readouterr().err == (f"workstation: The key of 'alice' was already revoked on "
                                       f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(revoked))}; a running "
                                       "server refuses it.\n")
    assert main(["keys", "set", "Alice", "--tokens-per-day", "5"]) == 1
    assert "The key of 'alice' was revoked on " in capsys.readouterr().err
    assert main(["keys", "revoke", "nobody"]) == 1
    assert "There is no active key named 'nobody'" in capsys.readouterr().err
    # an empty list made a key for every profile without a word (no profiles is any)
    assert main(["keys", "add", "carol", "--profiles", ""]) == 1
    assert capsys.readouterr().err == ("workstation: --profiles names no profile, so no key was made; to let it use "
                                       "every profile, give --profiles any.\n")  # (left out, a revoked key's are kept)
    assert main(["keys", "add", "carol", "--profiles", " , "]) == 1
    assert "no key was made" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root makes files another user cannot open")
def test_root_makes_no_key_in_another_users_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The IT person ran 'sudo workstation keys add alice' with the service's WORKSTATION_DATA:
    keys.sqlite3 was made root's (0600), and the service (User=workstation) then would not start:
    "The key file ... cannot be opened (unable to open database file)"."""
    folder = tmp_path / "var-lib-workstation"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)  # the service's user
    monkeypatch.setenv("WORKSTATION_DATA", str(folder))
    monkeypatch.setattr("sys.argv", ["workstation", "keys", "add", "alice"])  # (the advice repeats the command)
    assert main(["keys", "add", "alice"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "belongs to the user" in err and "run the command as that user: sudo -u " in err, err
    assert f"env WORKSTATION_DATA={folder} " in err and err.rstrip().endswith(
        "keys add alice (in a container where that user does not exist, set WORKSTATION_ALLOW_ROOT=1 to let root "
        "work there)"), err
    assert list(folder.iterdir()) == []  # nothing made there for root
    # 'sudo workstation serve -p theirs', the profile in that folder: "There is no profile named 'theirs'"
    assert main(["serve", "-p", "theirs"]) == 1
    assert "belongs to the user" in capsys.readouterr().err
    # root in a container, the host user's folder mounted (no such user there: no sudo -u): let through
    monkeypatch.setenv("WORKSTATION_ALLOW_ROOT", "1")
    assert main(["keys", "list"]) == 0


def test_keys_set_changes_a_persons_limits_and_keeps_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    """To give someone more tokens a day an admin had to revoke the key and hand out a new one
    (keys had add, list and revoke only). ``keys set`` changes the limits; the key stays."""
    from workstation.core.keys import KeyRing

    assert main(["keys", "add", "Ayşe", "--tokens-per-day", "3000", "--max-parallel", "2"]) == 0
    secret = capsys.readouterr().out.strip()
    assert main(["keys", "set", "AYŞE", "--tokens-per-day", "200000"]) == 0  # (in any capitals, as revoke)
    said = capsys.readouterr().out
    assert said.startswith("'Ayşe' now has 200,000 tokens a day; replies at once: 2; any profile"), said
    ring = KeyRing()
    try:
        found = ring.find(secret)  # what a running server reads at the key's next request
        assert found is not None and (found.tokens_per_day, found.max_parallel) == (200_000, 2)
    finally:
        ring.close()
    assert main(["keys", "set", "ayşe", "--tokens-per-day", "0", "--max-parallel", "0", "--profiles", "office-cpu"]) == 0
    assert "no daily limit; replies at once: as many as the server allows; profiles office-cpu" in capsys.readouterr().out
    # `keys list` says the same setting in the same words (it said "server default")
    assert main(["keys", "list"]) == 0
    listed = capsys.readouterr().out
    assert "| as many as the server allows |" in listed and "server default" not in listed, listed
    ring = KeyRing()
    try:  # 0 is kept as none, not as a limit of 0 (a server reads a day's 0 tokens as every request over)
        found = ring.find(secret)
        assert found is not None and (found.tokens_per_day, found.max_parallel) == (None, None)
    finally:
        ring.close()
    assert main(["keys", "set", "ayşe", "--profiles", "offce-cpu"]) == 1  # a typo: left as it was
    assert "Did you mean 'office-cpu'? The key was left as it was." in capsys.readouterr().err
    assert main(["keys", "set", "ayşe", "--profiles", ""]) == 1  # none: it let the key use any, without a word
    assert capsys.readouterr().err == ("workstation: --profiles names no profile, so the key was left as it was; to "
                                       "let it use every profile, give --profiles any.\n")
    assert main(["keys", "set", "ayşe"]) == 1
    assert "Say what to change" in capsys.readouterr().err
    assert main(["keys", "set", "nobody", "--tokens-per-day", "5"]) == 1
    assert "There is no active key named 'nobody'" in capsys.readouterr().err


def test_a_profile_name_one_typo_off_makes_no_key(capsys: pytest.CaptureFixture[str]) -> None:
    """`keys add dave --profiles offce-cpu` made a key that no request could ever use (its
    profiles cannot be changed), with a note; a name close to a profile's is refused, with it."""
    assert main(["keys", "add", "dave", "--profiles", "office-cpu,offce-cpu"]) == 1
    err = capsys.readouterr().err
    assert "There is no profile 'offce-cpu' in the profiles folder. Did you mean 'office-cpu'? No key was made." in err
    assert main(["keys", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["keys"] == []
    assert main(["-p", "office-serverr", "chat", "hi"]) == 1  # and a profile named anywhere
    assert capsys.readouterr().err.rstrip().endswith("Did you mean 'office-server'?")


def test_serve_refuses_a_persons_key_as_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`keys add` tells each person to set WORKSTATION_API_KEY, which serve also read as the
    operator's key: started in that shell, the server showed that person everyone's usage and
    counted their requests against no one. It is refused before the model loads."""
    assert main(["keys", "add", "alice"]) == 0
    secret = capsys.readouterr().out.strip()
    monkeypatch.setenv("WORKSTATION_API_KEY", secret)
    assert main(["serve", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("workstation: The operator's key from WORKSTATION_API_KEY is alice's own key") and \
        "unset WORKSTATION_API_KEY in this shell" in err and err.count("\n") == 1, err
    monkeypatch.delenv("WORKSTATION_API_KEY")
    assert main(["serve", "--port", "0", "--api-key", secret]) == 1
    assert "The operator's key from --api-key is alice's own key" in capsys.readouterr().err
    # --api-key-file (the key on the command line is in every user's `ps`): its first line
    key_file = tmp_path / "api-key"
    key_file.write_text(f"  {secret}\n# a comment line\n", encoding="utf-8")
    key_file.chmod(0o640)  # its group may read the runner's own file: refused, as ssh refuses it
    assert main(["serve", "--port", "0", "--api-key-file", str(key_file)]) == 1
    assert f"--api-key-file {key_file} can be read by its group, not only by you" in capsys.readouterr().err
    if os.geteuid() == 0:  # another user's file its group may read (root:workstation, 640): the service's way
        os.chown(key_file, 65534, -1)
        assert main(["serve", "--port", "0", "--api-key-file", str(key_file)]) == 1
        assert "The operator's key from --api-key-file is alice's own key" in capsys.readouterr().err
        os.chown(key_file, 0, -1)
    key_file.chmod(0o644)  # every user may read it: no secret
    assert main(["serve", "--port", "0", "--api-key-file", str(key_file)]) == 1
    assert f"--api-key-file {key_file} can be read by every user of this computer" in capsys.readouterr().err
    key_file.write_text("\n", encoding="utf-8")
    key_file.chmod(0o600)
    for path, said in [(key_file, "has no key on its first line"), (tmp_path / "nowhere", "cannot be read (No such file")]:
        assert main(["serve", "--port", "0", "--api-key-file", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"workstation: --api-key-file {path} {said}") and err.count("\n") == 1, err
    assert main(["serve", "--port", "0", "--api-key", "k", "--api-key-file", str(key_file)]) == 1
    assert "Both --api-key and --api-key-file are given" in capsys.readouterr().err
    # a letter no header carries: every request would be refused, and nothing said why
    key_file.write_text("şifre-2026\n", encoding="utf-8")
    assert main(["serve", "--port", "0", "--api-key-file", str(key_file)]) == 1
    assert "The operator's key from --api-key-file has 'ş' in it, which no client can send" in capsys.readouterr().err
    # the key as a request's header carries it: it was refused for "' ' in it"
    key_file.write_text("Bearer operator-key-of-the-office\n", encoding="utf-8")
    assert main(["serve", "--port", "0", "--api-key-file", str(key_file)]) == 1
    assert capsys.readouterr().err == (f"workstation: --api-key-file {key_file} has 'Bearer ' before the key; write "
                                       "only the key, without 'Bearer ', then start the server again.\n")
    assert main(["serve", "--port", "0", "--api-key", "Bearer operator-key-of-the-office"]) == 1
    assert "The key from --api-key starts with 'Bearer '; write only the key, without 'Bearer '." in capsys.readouterr().err
    # in the command line's language (these were English under Turkish), --lang anywhere in it
    key_file.write_text("şifre-2026\n", encoding="utf-8")
    for words, said in [
        (["--api-key", "k", "--api-key-file", str(key_file)], "Hem --api-key hem --api-key-file verildi; yöneticinin "
         "anahtarını tek bir yoldan verin (--api-key-file onu işlem listesinde görünmekten korur)."),
        (["--api-key-file", str(key_file)], "--api-key-file ile verilen yöneticinin anahtarında 'ş' var; hiçbir "
         "istemci bunu bir isteğin başlığında gönderemez"),
        (["--api-key", secret], "--api-key ile verilen yöneticinin anahtarı, alice adlı kişinin kendi anahtarı: sunucu "
         "bu kişiye herkesin kullanımını gösterir, isteklerini de kimsenin sınırına saymazdı; sunucuya kendine ait "
         "bir anahtar verin."),
        (["--allowed-origins", "intranet"], "--allowed-origins içinde 'intranet' var; bir köken (origin) "
         "http(s)://ana-makine[:port] biçiminde ya da '*' olarak yazılır."),
        (["--slot-save-path", str(key_file / "saves")], f"--slot-save-path {key_file / 'saves'}: bu klasör kullanılamıyor ("),
    ]:
        assert main(["serve", "--lang", "tr", "--port", "0", *words]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"workstation: {said}") and err.count("\n") == 1, err


# --- tokens per day --------------------------------------------------------------------------------
class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_quota_counts_today_and_resets_at_local_midnight() -> None:
    noon = day_start(time.time()) + 12 * 3600
    clock = Clock(noon)
    quota = DailyQuota(clock, lambda since: {"alice": 40} if since == day_start(noon) else {})
    assert quota.used("alice") == 40  # today's earlier use comes from the usage file
    assert quota.check("alice", 100) is None
    quota.charge("alice", 70, noon)
    over = quota.check("alice", 100)
    assert over is not None and over.used == 110 and over.limit == 100
    assert over.resets_at == next_day_start(noon)
    assert over.retry_after_s(noon) == int(next_day_start(noon) - noon)
    assert over.retry_after_s(next_day_start(noon) - 0.5) == 1  # never "retry after 0 s" (a client's busy loop)
    # a part of a second left counts as a whole one: rounded down, a client asked again a moment
    # before midnight and was refused once more
    assert over.retry_after_s(next_day_start(noon) - 3.5) == 4
    assert over.retry_after_s(next_day_start(noon) - 3.0) == 3
    assert quota.check("alice", None) is None  # no limit
    assert quota.check("bob", 100) is None
    clock.t = next_day_start(noon) + 1  # a second after midnight: a new day
    assert quota.used("alice") == 0
    assert quota.check("alice", 100) is None
    quota.charge("alice", 5, noon)  # a request begun yesterday does not count today
    assert quota.used("alice") == 0


def test_requests_running_hold_their_share_of_the_day() -> None:
    """A request holds its prompt and reply room while it runs: a second one gets what is left,
    a third that does not fit is told the holds are the reason (not the day), and a hold given
    back makes room again; a hold never outlives its day."""
    noon = day_start(time.time()) + 12 * 3600
    clock = Clock(noon)
    quota = DailyQuota(clock)
    assert quota.hold("alice", 100, 10, 50) == 50  # the reply room asked
    assert quota.hold("alice", 100, 10, 50) == 30  # what is left of the day
    over = quota.hold("alice", 100, 10, 50)
    assert isinstance(over, OverQuota) and over.used == 0 and over.held == 100
    quota.release("alice", 60)
    quota.charge("alice", 25, noon)  # the first one ended: it used 25 of the 60 it held
    assert quota.hold("alice", 100, 10, 50) == 25  # 100 - 25 used - 40 still held - 10 of prompt
    assert quota.used("alice") == 25
    clock.t = next_day_start(noon) + 1
    assert quota.hold("alice", 100, 10, 50) == 50  # a new day: nothing used, nothing held
    # yesterday's request ends after midnight: its hold went with its day, and today's first
    # request still holds its 60 (it took its 40 off today's, and the key could go 40 past its day)
    quota.release("alice", 40, noon)
    assert quota.hold("alice", 100, 10, 500) == 30
    # a request that read the clock before midnight and holds after the new day began counts in
    # the new day: it switched back to the old day, and today's 100 held were forgotten
    assert isinstance(quota.hold("alice", 100, 10, 50, noon), OverQuota)
    assert quota.held("alice") == 100
    # and one that fits is yesterday's, as its release and its charge are: held in today's holds,
    # it was never given back, and 60 of the key's 100 stayed held all day
    assert quota.hold("bob", 100, 10, 50, noon) == 50
    quota.release("bob", 60, noon)
    assert quota.held("bob") == 0


def test_a_prompt_that_uses_the_last_of_the_day_is_over_quota() -> None:
    """A prompt that fit the day's tokens exactly, with none left for a reply, was let in to
    answer nothing instead of being told when the quota resets."""
    quota = DailyQuota(Clock(day_start(time.time()) + 12 * 3600))
    assert isinstance(quota.hold("alice", 100, 100, 50), OverQuota)
    assert quota.hold("alice", 100, 99, 50) == 1


# --- the usage file --------------------------------------------------------------------------------
def record(t: float, key: str, prompt: int, completion: int, status: int = 200, profile: str = "office") -> UsageRecord:
    return UsageRecord(t=t, key=key, profile=profile, route="chat", prompt_tokens=prompt, cached_tokens=prompt // 2,
                       completion_tokens=completion, ttft_ms=100.0, decode_tps=20.0, status=status,
                       duration_ms=500.0, client="127.0.0.1")


def test_usage_summaries_by_person_profile_and_day(tmp_path: Path) -> None:
    log = UsageLog(tmp_path / "usage.sqlite3")
    today = day_start(time.time()) + 10 * 3600
    yesterday = today - 86400
    log.add([
        record(yesterday, "alice", 10, 5),
        record(today, "alice", 20, 7),
        record(today, "bob", 30, 9, profile="big"),
        record(today, "bob", 0, 0, status=429),
    ])
    by_person = {r.group: r for r in log.summary("person")}
    assert by_person["alice"].tokens == 42 and by_person["alice"].requests == 2
    assert by_person["bob"].requests == 2 and by_person["bob"].errors == 1 and by_person["bob"].tokens == 39
    assert by_person["bob"].cached_tokens == 15
    assert {r.group: r.tokens for r in log.summary("profile")} == {"office": 42, "big": 39}
    days = log.summary("day")
    assert [r.tokens for r in days] == [15, 66]
    assert {r.group for r in log.summary("person", since=today - 3600)} == {"alice", "bob"}
    assert log.summary("person", since=today - 3600)[0].tokens == 27
    assert log.tokens_on_day(today) == {"alice": 27, "bob": 39}
    daily = log.daily_by_person()
    assert sum(n for _, _, n in daily) == 81 and len(daily) == 3
    with pytest.raises(UsageError, match="--by"):
        log.summary("month")
    log.close()


def test_the_mean_speed_leaves_out_one_token_replies(tmp_path: Path) -> None:
    """A one-token reply has no decoding time to measure (its speed says 0): counting it halved
    a person's tokens per second in `usage`."""
    import dataclasses

    log = UsageLog(tmp_path / "usage.sqlite3")
    t = day_start(time.time()) + 10 * 3600
    log.add([record(t, "alice", 10, 9), dataclasses.replace(record(t, "alice", 10, 1), decode_tps=0.0)])
    assert log.summary("person")[0].decode_tps == 20.0
    log.close()


def test_usage_command_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["usage"]) == 0
    assert "No requests recorded by this PC's server: it records what workstation serve answers here. On a desk PC, what " \
        "your key used today on the office server is on the app's F11." in capsys.readouterr().out
    assert main(["usage", "--since", "dün", "--lang", "tr"]) == 0  # the day, as Turkish writes one ("dün tarihinden")
    yesterday = time.strftime("%d.%m.%Y", time.localtime(day_start(time.time()) - 12 * 3600))
    assert f"Bu bilgisayarın sunucusu {yesterday} tarihinden bu yana" in capsys.readouterr().out
    log = UsageLog(data_dir() / "usage.sqlite3")
    now = time.time()
    log.add([record(now, "alice", 100, 50), record(now, "bob", 10, 1), record(now - 40 * 86400, "alice", 7, 7),
             record(now, "Ayşe Yılmaz", 20, 4)])
    log.close()
    assert main(["usage", "--json"]) == 0
    rows = {r["group"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["alice"]["tokens"] == 164 and rows["bob"]["tokens"] == 11 and rows["Ayşe Yılmaz"]["tokens"] == 24
    assert main(["usage", "--by", "person"]) == 0  # a name with a space: one cell of the table
    assert any(line.startswith("| Ayşe Yılmaz ") for line in capsys.readouterr().out.splitlines())
    since = time.strftime("%Y-%m-%d", time.localtime(now - 86400))
    assert main(["usage", "--since", since, "--json"]) == 0
    rows = {r["group"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["alice"]["tokens"] == 150
    assert main(["usage", "--by", "profile"]) == 0
    out = capsys.readouterr().out
    assert "office" in out and "199" in out
    assert main(["usage", "--since", "last tuesday"]) == 1
    assert "--since is 'last tuesday'" in capsys.readouterr().err
    # said in --lang's language (it was English within a Turkish session), and the days by name taken
    assert main(["usage", "--since", "geçen salı", "--lang", "tr"]) == 1
    assert capsys.readouterr().err.startswith("workstation: --since için 'geçen salı' verilmiş; bir günü YYYY-MM-DD")
    assert main(["usage", "--since", "yesterday", "--json"]) == 0
    assert {r["group"] for r in json.loads(capsys.readouterr().out)["rows"]} == {"alice", "bob", "Ayşe Yılmaz"}
    assert main(["usage", "--since", "bugün", "--lang", "tr"]) == 0
    assert "Ayşe Yılmaz" in capsys.readouterr().out
    # refused requests only: no speed to show ("-", not TTFT 0 and 0.0 tok/s), and the two
    # groups that are no person's name are explained under the table
    log = UsageLog(data_dir() / "usage.sqlite3")
    log.add([record(now, UNKNOWN, 0, 0, status=401), record(now, SHARED, 10, 5)])
    log.close()
    assert main(["usage"]) == 0
    out = capsys.readouterr().out
    refused = next(line for line in out.splitlines() if line.startswith(f"| {UNKNOWN}"))
    assert refused.replace(" ", "").endswith("|-|-|"), refused
    assert "(unknown): requests refused for a missing or wrong key (a revoked key's are its owner's)" in out
    assert "(shared): the operator's --api-key, or a server without people's keys" in out


def test_parse_since_reads_dates_and_times() -> None:
    assert parse_since("2026-03-01") == day_start(parse_since("2026-03-01T13:00"))
    assert parse_since("01.03.2026") == parse_since("2026-03-01")  # as Turkey writes a day (it was refused)
    # days by name, in English and Turkish (refused: "--since today"), and the last N days
    today = day_start(time.time())
    assert parse_since("today") == parse_since("Bugün") == parse_since("1d") == parse_since("1g") == today
    assert parse_since("yesterday") == parse_since("DÜN") == parse_since("2d") == day_start(today - 12 * 3600)
    assert parse_since("7g") == parse_since("7d") == parse_since(time.strftime("%Y-%m-%d", time.localtime(today - 6 * 86400 + 7200)))
    # a space before the unit, and Turkish words typed without Turkish letters (each was refused)
    assert parse_since("7 gün") == parse_since("7 days") == parse_since("7 GUN") == parse_since("7g")
    assert parse_since("1 day") == parse_since("bugun") == parse_since("BUGUN") == today
    assert parse_since("dun") == parse_since("Dün") == parse_since("2 gün") == day_start(today - 12 * 3600)
    for bad in ("last tuesday", "0d", "7w", "tomorrow", "7 weeks", "0 gün"):
        with pytest.raises(UsageError, match="write a day as YYYY-MM-DD"):
            parse_since(bad)


# --- the per-key metrics ---------------------------------------------------------------------------
def test_histograms_are_cumulative_and_labels_escaped() -> None:
    from workstation.core.metrics import TurnMetrics
    from workstation.core.server.prometheus import ServerMetrics

    metrics = ServerMetrics()
    for ttft_ms in (70.0, 300.0, 20000.0):
        m = TurnMetrics(ttft_ms=ttft_ms, predicted_n=4, predicted_per_token_ms=12.0)
        metrics.observe('off"ice', "alice", 200, m, ttft_ms / 1000 + 1, 10, 4)
    metrics.observe('off"ice', "bob", 429, None, 0.001, 0, 0)
    text = metrics.text()
    name = "workstation:time_to_first_token_seconds"
    buckets = {
        line.split(',le="')[1].split('"')[0]: int(line.rsplit(" ", 1)[1])
        for line in text.splitlines() if line.startswith(f"{name}_bucket")
    }
    assert buckets["0.05"] == 0 and buckets["0.1"] == 1 and buckets["0.25"] == 1 and buckets["0.5"] == 2
    assert buckets["10.0"] == 2 and buckets["30.0"] == 3 and buckets["+Inf"] == 3
    assert f'{name}_sum{{profile="off\\"ice"}} 20.37' in text
    assert f'{name}_count{{profile="off\\"ice"}} 3' in text
    assert 'workstation:request_duration_seconds_count{profile="off\\"ice"} 4' in text
    assert 'workstation:key_requests_total{key="bob",status="429"} 1' in text
    assert 'workstation:key_prompt_tokens_total{key="alice"} 30' in text
    assert 'workstation:key_completion_tokens_total{key="alice"} 12' in text


def test_usage_speaks_turkish_with_lang(capsys: pytest.CaptureFixture[str]) -> None:
    """'usage --lang tr' was refused ("--lang is not an option of 'usage'"), and a Turkish PC got
    its table and lines in English: --lang says them in its language, numbers as it writes them;
    English and --json as they were."""
    assert main(["usage", "--lang", "tr", "--since", "2026-01-03"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Bu bilgisayarın sunucusu 03.01.2026 tarihinden bu yana hiç istek kaydetmedi:"), out
    assert "No requests" not in out and "F11" in out
    log = UsageLog(data_dir() / "usage.sqlite3")
    now = time.time()
    log.add([record(now, "alice", 1500, 50), record(now, UNKNOWN, 0, 0, status=401), record(now, SHARED, 10, 5)])
    log.close()
    assert main(["usage", "--lang", "tr"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert "| kişi " in header and "| istek " in header and "| toplam token " in header, header
    assert "1.550" in out and "| hepsi " in out
    assert "(geçerli anahtar yok): anahtarı olmadığı ya da yanlış olduğu için geri çevrilen istekler" in out
    assert "(kişisel anahtar yok): yöneticinin --api-key anahtarı" in out
    for english in ("requests", "total tokens", "| all ", "(unknown)", "(shared)", "refused for a missing"):
        assert english not in out, english
    assert main(["usage"]) == 0
    out = capsys.readouterr().out
    assert "| person " in out and "1,550" in out and "| all " in out and "(unknown): requests refused" in out
    assert main(["usage", "--lang", "tr", "--json"]) == 0
    assert {r["group"] for r in json.loads(capsys.readouterr().out)["rows"]} == {"alice", UNKNOWN, SHARED}



def test_a_key_without_its_own_cap_gets_the_servers(tmp_path: Path) -> None:
    from workstation.core.server.accounts import Accounts
    from workstation.core.server.protocol import ApiError

    ring = KeyRing(tmp_path / "keys.sqlite3")
    _, free = ring.add("alice")
    _, capped = ring.add("bob", max_parallel=1)
    accounts = Accounts("office", keys=ring, default_max_parallel=3)
    alice = accounts.authenticate({"authorization": f"Bearer {free}"})
    bob = accounts.authenticate({"x-api-key": capped})
    assert alice.owner is not None and (alice.owner.name, alice.owner.max_parallel) == ("alice", 3)
    assert bob.owner is not None and bob.owner.max_parallel == 1
    with pytest.raises(ApiError) as caught:
        accounts.authenticate({})
    assert caught.value.status == 401
    accounts.close()
    # the shared key is the whole key: its start, or the key and more, is no key
    shared = Accounts("office", shared_key="office-shared-key", keys=KeyRing(tmp_path / "keys.sqlite3"))
    assert shared.authenticate({"x-api-key": "office-shared-key"}).key is None  # (the shared caller)
    for wrong in ("office", "o", "office-shared-key2"):
        with pytest.raises(ApiError) as caught:
            shared.authenticate({"x-api-key": wrong})
        assert caught.value.status == 401, wrong
    shared.close()


def test_a_disk_that_takes_no_writes_is_said_once_for_each_file(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the disk full, the usage file's problem and the audit trail's were said in turn,
    two warnings a request: one memory held the last problem of both."""
    import logging

    from workstation.core.audit import LOCK, AuditTrail
    from workstation.core.server.accounts import Accounts, Caller
    from workstation.core.usage import UsageLog

    trail = tmp_path / "audit"
    trail.mkdir()
    (trail / LOCK).mkdir()  # the trail cannot be written: its lock is a folder
    usage = UsageLog(tmp_path / "usage.sqlite3")
    accounts = Accounts("office", usage=usage, audit=AuditTrail(trail))
    usage._db.close()  # nor the usage file
    caplog.set_level(logging.WARNING, logger="uvicorn.error")
    logger = logging.getLogger("uvicorn.error")  # read here: uvicorn's own set-up (an earlier test's
    monkeypatch.setattr(logger, "propagate", False)  # server) stops its "uvicorn" from passing them on
    logger.addHandler(caplog.handler)
    try:
        for _ in range(3):
            accounts.finish(accounts.begin(Caller("alice", "127.0.0.1"), "chat"), 200)
            accounts.flush()
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 2 and any("the audit trail" in m for m in said) and any("usage" in m for m in said), said
        (trail / LOCK).rmdir()  # room again: said once more, that it is written again
        accounts.finish(accounts.begin(Caller("alice", "127.0.0.1"), "chat"), 200)
        accounts.flush()
        assert [r.getMessage() for r in caplog.records][2:] == ["workstation: the audit trail is written again"]
    finally:
        logger.removeHandler(caplog.handler)
        accounts.close()


def test_a_new_key_keeps_the_revoked_keys_profiles_and_says_only_what_it_kept(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`keys add` after `keys revoke`: the profiles the revoked key was limited to are kept where
    none are given; a limit given again (the day's tokens, the only one the key had) is the new
    key's own, so nothing is said as kept."""
    ring = KeyRing()
    try:
        ring.add("dan", tokens_per_day=500, profiles=("office-cpu",))
        ring.revoke("dan")
        key, _ = ring.add("dan")
        assert (key.tokens_per_day, key.profiles) == (500, ("office-cpu",))
    finally:
        ring.close()
    assert main(["keys", "add", "erin", "--tokens-per-day", "500"]) == 0
    assert main(["keys", "revoke", "erin"]) == 0
    capsys.readouterr()
    assert main(["keys", "add", "erin", "--tokens-per-day", "900"]) == 0
    assert "keeps the limits" not in capsys.readouterr().err


def test_a_cut_off_reply_kept_aside_is_not_counted_against_the_day() -> None:
    """A reply the server's stop cut off (503) that a stopping server could only keep in its side
    file counts no tokens against the day, as one in the usage file counts none; a whole one does."""
    log = UsageLog()
    try:
        t = time.time()
        log.keep_aside([UsageRecord(t, "ayse", "p", "chat", prompt_tokens=100, completion_tokens=50, status=503),
                        UsageRecord(t, "ayse", "p", "chat", prompt_tokens=7, completion_tokens=3)])
        assert log.tokens_on_day(t) == {"ayse": 10}
    finally:
        log.close()


@pytest.mark.parametrize("lang,said", [
    ("en", {"add": "workstation: the key for 'ayşe' is above; hand it over now, it is not shown again.",
            "list": ("| name | created", "| never ", "|      3,000 |", "| any "),
            "set": "'ayşe' now has 200,000 tokens a day; replies at once: 2; any profile; a running server applies it at the "
                   "key's next request.",
            "revoke": "Revoked the key of 'ayşe'; a running server refuses it from its next request.",
            "none": "workstation: There is no active key named 'nobody'; active keys: none.",
            "kept": "workstation: 'ayşe' keeps the limits of their revoked key that were not given here; it now has "
                    "200,000 tokens a day; replies at once: 2; any profile."}),
    ("tr", {"add": "workstation: 'ayşe' için anahtar yukarıda; onu şimdi verin, bir daha gösterilmez.",
            "list": ("| ad   | yapıldı", "| hiç ", "|     3.000 |", "| hepsi "),
            "set": "'ayşe' için sınırlar artık şunlar: günde 200.000 token; aynı anda yanıt: 2; her profil; çalışan bir "
                   "sunucu bunu anahtarın bir sonraki isteğinde uygular.",
            "revoke": "'ayşe' kişisinin anahtarı iptal edildi; çalışan bir sunucu onu bir sonraki isteğinden "
                      "başlayarak reddeder.",
            "none": "workstation: 'nobody' adında kullanımda bir anahtar yok; kullanımdaki anahtarlar: yok.",
            "kept": "workstation: 'ayşe', iptal edilmiş anahtarının burada verilmeyen sınırlarını koruyor; şimdi "
                    "sınırları: günde 200.000 token; aynı anda yanıt: 2; her profil."}),
])
def test_the_keys_command_speaks_the_language_asked(lang: str, said: dict[str, object],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`keys` was English only, on a Turkish PC and under --lang tr: its lines, its table and its
    mistakes (the key ring's among them) are said in the language, as the other commands' are."""
    assert main(["keys", "add", "ayşe", "--tokens-per-day", "3000", "--max-parallel", "2", "--lang", lang]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ws-") and err.splitlines()[0] == said["add"], err
    assert main(["keys", "--lang", lang]) == 0  # 'keys' alone lists, in the language too
    listed = capsys.readouterr().out
    assert all(cell in listed for cell in said["list"]), listed  # type: ignore[union-attr]
    assert main(["keys", "set", "ayşe", "--tokens-per-day", "200000", "--lang", lang]) == 0
    assert capsys.readouterr().out.strip() == said["set"]
    assert main(["keys", "revoke", "ayşe", "--lang", lang]) == 0
    assert capsys.readouterr().out.splitlines()[0] == said["revoke"]
    assert main(["keys", "revoke", "nobody", "--lang", lang]) == 1  # the key ring's own mistake
    assert capsys.readouterr().err.strip() == said["none"]
    assert main(["keys", "add", "ayşe", "--lang", lang]) == 0
    assert capsys.readouterr().err.splitlines()[1].startswith(str(said["kept"]))
    assert main(["keys", "list", "--json", "--lang", lang]) == 0  # JSON stays as documented
    assert json.loads(capsys.readouterr().out)["keys"][0]["tokens_per_day"] == 200000


def test_a_revoked_keys_date_is_said_as_the_language_writes_dates(capsys: pytest.CaptureFixture[str]) -> None:
    """A Turkish sentence about a revoked key said its date the English way ("2026-12-07 09:36
    tarihinde iptal edildi"), where `keys list` beside it, and the rest of the Turkish UI, write
    07.12.2026 09:36 (the locale's ``date.moment``, as ``Texts.moment`` writes one)."""
    from workstation.tui.i18n import Texts

    assert main(["keys", "add", "ayşe"]) == 0
    assert main(["keys", "revoke", "ayşe"]) == 0
    ring = KeyRing(read_only=True)
    revoked = ring.list(include_revoked=True)[0].revoked
    ring.close()
    capsys.readouterr()
    turkish, english = Texts("tr").moment(revoked), time.strftime("%Y-%m-%d %H:%M", time.localtime(revoked))
    assert turkish != english
    assert main(["keys", "revoke", "ayşe", "--lang", "tr"]) == 1
    assert capsys.readouterr().err == (f"workstation: 'ayşe' kişisinin anahtarı zaten {turkish} tarihinde iptal "
                                       "edildi; çalışan bir sunucu onu reddeder.\n")
    assert main(["keys", "set", "ayşe", "--tokens-per-day", "5", "--lang", "tr"]) == 1
    assert f"'ayşe' kişisinin anahtarı {turkish} tarihinde iptal edildi" in capsys.readouterr().err
    assert main(["keys", "revoke", "ayşe", "--lang", "en"]) == 1  # English as before
    assert f"was already revoked on {english};" in capsys.readouterr().err


def test_a_keys_day_of_tokens_says_in_turkish_what_a_token_is() -> None:
    """The status line's "bugünkü token hakkını kullandı", F5's "token hakkı bitti" and a cut reply's
    note said "token" to office staff unexplained, where the server's refusals of the same day say
    "sözcük parçası (token)": every Turkish sentence of a key's day says it so."""
    import re

    import yaml

    tr = yaml.safe_load((Path(__file__).parent.parent / "workstation" / "tui" / "locales" / "tr.yaml")
                        .read_text(encoding="utf-8"))
    assert [key for key, text in tr.items() if re.search(r"(?<!\()\btoken hakk", str(text))] == []
    for key in ("status.day_used", "metric.quota", "remote.quota_cut", "remote.quota_cut_part"):
        assert "sözcük parçası (token) hakk" in tr[key], key


def test_a_cut_off_reply_is_charged_alike_by_usage_and_the_keys_day(capsys: pytest.CaptureFixture[str]) -> None:
    """One rule for what a person is charged: a reply the server's stopping cut off ("chat 503
    58+143 tokens") is left out of `usage --by person` as it is of the key's day (`keys list`,
    /usage/today): `usage` said 626 where `keys list` said 425, and `usage` says why."""
    log = UsageLog(data_dir() / "usage.sqlite3")
    now = time.time()
    log.add([record(now, "Ayşe", 300, 125), record(now, "Ayşe", 58, 143, status=503), record(now, "bob", 10, 5)])
    ring = KeyRing()
    ring.add("Ayşe")
    ring.close()
    by_person = {r.group: r for r in log.summary("person")}
    assert log.tokens_on_day(now)["Ayşe"] == by_person["Ayşe"].tokens == 425
    assert by_person["Ayşe"].requests == 2 and by_person["Ayşe"].cut_requests == 1
    assert by_person["Ayşe"].cut_tokens == 201
    assert sum(n for _, key, n in log.daily_by_person() if key == "Ayşe") == 425  # the Usage screen's chart
    log.close()
    assert main(["usage"]) == 0
    out = capsys.readouterr().out
    assert next(line for line in out.splitlines() if line.startswith("| Ayşe ")).split("|")[7].strip() == "425"
    assert "Ayşe: 1 reply cut off when the server stopped (201 tokens) is not charged: not in these totals, nor " \
        "in the day's limit." in out
    assert "bob:" not in out
    assert main(["keys", "list", "--json"]) == 0
    listed = {k["name"]: k for k in json.loads(capsys.readouterr().out)["keys"]}
    assert listed["Ayşe"]["tokens_today"] == 425


def test_keys_rename_keeps_the_key_its_limits_its_day_and_its_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """A key could not be renamed (ayse typed for Ayşe Yılmaz): only revoked and a new one handed
    out, her usage left under the old name. ``keys rename`` keeps the key itself, its limits,
    today's tokens and `usage --by person`'s history under the new name; a name another person
    has, in any capitals, is refused in one sentence."""
    ring = KeyRing()
    _, secret = ring.add("ayse", tokens_per_day=5000, max_parallel=2)
    ring.add("Bora")
    ring.close()
    log = UsageLog()
    now = time.time()
    log.add([record(now, "ayse", 100, 50), record(now - 3 * 86400, "ayse", 7, 3), record(now, "Bora", 1, 1)])
    log.keep_aside([UsageRecord(now + 1, "ayse", "office", "chat", prompt_tokens=5, completion_tokens=5)])
    log.close()
    capsys.readouterr()
    assert main(["keys", "rename", "AYSE", "Ayşe Yılmaz"]) == 0  # (the old one in any capitals)
    assert capsys.readouterr().out == ("'ayse' is now 'Ayşe Yılmaz': the same key, its limits, today's tokens and its "
                                       "usage; a running server uses the new name from the key's next request.\n")
    ring = KeyRing()
    key = ring.find(secret)
    ring.close()
    assert key is not None and (key.name, key.tokens_per_day, key.max_parallel, key.revoked) == ("Ayşe Yılmaz", 5000, 2, None)
    assert main(["keys", "list", "--json"]) == 0
    listed = {k["name"]: k for k in json.loads(capsys.readouterr().out)["keys"]}
    assert set(listed) == {"Ayşe Yılmaz", "Bora"} and listed["Ayşe Yılmaz"]["tokens_today"] == 160
    assert main(["usage", "--by", "person", "--json"]) == 0
    rows = {r["group"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert set(rows) == {"Ayşe Yılmaz", "Bora"} and rows["Ayşe Yılmaz"]["tokens"] == 170  # (three days, the side file's)
    # (the side file's rows a stopped server kept aside: hers too, under her name at the next start)
    log = UsageLog()
    log.fold_in()
    assert {r.group: r.tokens for r in log.summary("person")}["Ayşe Yılmaz"] == 170
    assert {r.key for r in log.records()} == {"Ayşe Yılmaz", "Bora"}
    log.close()
    for taken in ("bora", "BORA"):  # another person's name, in any capitals, as `keys add` refuses it
        assert main(["keys", "rename", "Ayşe Yılmaz", taken]) == 1
        err = capsys.readouterr().err
        assert err == (f"workstation: The name '{taken}' is taken by 'Bora', whose usage would mix with this "
                       "person's; choose another.\n"), err
    assert main(["keys", "rename", "nobody", "x"]) == 1
    assert capsys.readouterr().err == "workstation: There is no active key named 'nobody'; active keys: Ayşe Yılmaz, Bora.\n"
    assert main(["keys", "rename", "ayşe yılmaz", "Ayşe Yılmaz"]) == 0  # (her own name in other capitals: hers)
    assert main(["keys", "rename", "--lang", "tr", "Ayşe Yılmaz", "Ayşe"]) == 0
    assert capsys.readouterr().out.endswith("'Ayşe Yılmaz' artık 'Ayşe': aynı anahtar, sınırları, bugünkü token'ları ve "
                                            "kullanımı; çalışan bir sunucu yeni adı anahtarın bir sonraki isteğinden "
                                            "başlayarak kullanır.\n")


def test_rows_written_after_a_rename_go_by_their_key_not_by_the_old_name(capsys: pytest.CaptureFixture[str]) -> None:
    """Rows a server writes after `keys rename` under the old name (a reply being written while
    she was renamed, rows a stopped server kept aside) are hers under the new name, found by her
    key; a new person given the old name afterwards keeps their own rows. A usage file of the
    schema before (no key on its rows) is upgraded with its rows as they were."""
    old = sqlite3.connect(data_dir() / "usage.sqlite3")
    old.executescript(usage_schema_one())
    old.execute("INSERT INTO requests(t, key, profile, route, prompt_tokens, cached_tokens, completion_tokens, ttft_ms, "
                "decode_tps, status, duration_ms, client) VALUES (?, 'ayse', 'office', 'chat', 4, 0, 2, 0, 0, 200, 0, '')",
                (time.time(),))
    old.commit()
    old.close()
    ring = KeyRing()
    hers = ring.add("ayse")[0]
    ring.close()
    assert main(["keys", "rename", "ayse", "Ayse Y"]) == 0
    ring = KeyRing()
    theirs = ring.add("ayse")[0]  # (the old name, given anew to another person)
    ring.close()
    log = UsageLog()
    now = time.time()
    log.add([UsageRecord(now, "ayse", "office", "chat", prompt_tokens=10, completion_tokens=5, key_id=hers.id),
             UsageRecord(now, "ayse", "office", "chat", prompt_tokens=1, completion_tokens=1, key_id=theirs.id)])
    log.keep_aside([UsageRecord(now + 1, "ayse", "office", "chat", prompt_tokens=100, key_id=hers.id)])
    assert log.fold_in() == 1
    assert {r.group: r.tokens for r in log.summary("person")} == {"Ayse Y": 6 + 15 + 100, "ayse": 2}
    log.close()


def usage_schema_one() -> str:
    """The usage file's first schema, as a server before keys went on its rows made it."""
    from workstation.core.usage import _MIGRATIONS

    return _MIGRATIONS[0] + "PRAGMA user_version = 1;"
