"""A profile for an installed model: ``profiles new MODEL`` and F4's U, with the real models."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import requantized_copy
from tui_helpers import notices, until

from workstation.cli import main
from workstation.core.catalog import human_bytes, resolve_model_path
from workstation.core.errors import ModelFileError, ProfileError
from workstation.core.gguf_check import preflight
from workstation.core.model_profile import make_profile
from workstation.core.paths import PROJECT_DIR, user_profiles_dir
from workstation.core.profile_lookup import load_profile, load_profile_file


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped profiles, copied: the checkout's profiles/."""
    profiles = tmp_path / "shipped"
    shutil.copytree(PROJECT_DIR / "profiles", profiles)
    monkeypatch.setenv("WORKSTATION_PROFILES", str(profiles))
    return profiles


@pytest.fixture
def folder(shipped: Path) -> Path:
    """The user's own profiles (in the data folder), where the profiles made go."""
    profiles = user_profiles_dir()
    profiles.mkdir(exist_ok=True)
    return profiles


def test_profiles_new_makes_a_profile_that_runs_the_model(
        folder: Path, gemma_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model no profile runs gets a short profile of its own, with a context it was trained
    for; the profile loads and answers, and the next call names it instead of a second copy."""
    before = set(folder.glob("*.yaml"))
    assert main(["profiles", "new", "gemma-3-270m-q4_k_m"]) == 0
    out = capsys.readouterr().out
    made = set(folder.glob("*.yaml")) - before
    assert [p.name for p in made] == ["gemma-3-270m-q4_k_m.yaml"], made
    profile = load_profile("gemma-3-270m-q4_k_m")
    assert resolve_model_path(profile.model).resolve() == gemma_path.resolve()
    assert profile.context == 4096  # the model was trained for 32,768: an office PC's default
    from workstation.core.atomic import umask
    assert (folder / "gemma-3-270m-q4_k_m.yaml").stat().st_mode & 0o777 == 0o666 & ~umask()  # (mkstemp's 0600)
    assert out.startswith("Made the profile gemma-3-270m-q4_k_m (")
    assert "Fit: runs on the CPU" in out and "Note: gemma-3-270m-q4_k_m was not made for chat" in out
    assert out.rstrip().endswith("workstation -p gemma-3-270m-q4_k_m"), out

    assert main(["-p", "gemma-3-270m-q4_k_m", "chat", "--max-tokens", "4", "Say hi"]) == 0  # it runs
    capsys.readouterr()
    # F3's line for it: two sentences ("… of memory free Note: …" ran on), and its description
    # names no file it cannot show ("change its settings in this file"; the file's comment says so)
    from workstation.tui.integrations import fit_verdict

    verdict = fit_verdict(profile)
    assert verdict is not None and re.search(r"(GB of memory free|extra memory this processor uses so that answers come quicker)\. Note: gemma-3-270m-q4_k_m was not made", verdict), verdict
    assert profile.description == "Runs gemma-3-270m-q4_k_m, with settings chosen for this PC."
    # fit's lines add up to its total: the CPU's repacked copy of the Q4_K weights (avx2, asimd) has a line of
    # its own (the verdict counted it; weights, KV cache and compute came that much short), in --json too
    assert main(["fit", "-p", "gemma-3-270m-q4_k_m", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert sum(planned[f"{part}_bytes"] for part in ("weights", "kv_cache", "compute", "repack")) == \
        planned["total_bytes"], planned
    assert main(["fit", "-p", "gemma-3-270m-q4_k_m"]) == 0
    out = capsys.readouterr().out
    copy = f"\n  extra memory this processor uses so that answers come quicker: {human_bytes(planned['repack_bytes'])}"
    assert (copy in out) == bool(planned["repack_bytes"]), out
    assert planned["placement"] != "cpu" or f"needs {human_bytes(planned['total_bytes']):>9}" in out, out  # (its CPU line too)
    assert "; change its settings in this file." in (folder / "gemma-3-270m-q4_k_m.yaml").read_text(encoding="utf-8")

    assert main(["profiles", "new", "gemma-3-270m-q4_k_m", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["made"] is False and again["key"] == "gemma-3-270m-q4_k_m"
    assert set(folder.glob("*.yaml")) - before == made  # no second copy


def test_a_model_a_profile_runs_names_the_default_profile(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SmolLM2 Q4_1 runs in office-cpu, long-documents and quoting-lookup: the plain one is named."""
    assert main(["profiles", "new", "smollm2-135m-instruct-q4_1"]) == 0
    assert capsys.readouterr().out.startswith("The profile office-cpu (")
    assert main(["profiles", "new", "smollm2-135m-instruct-q4_1", "--lang", "tr"]) == 0  # (it was English)
    said = capsys.readouterr().out
    assert said.startswith("office-cpu profili (") and "\nSığma: CPU'da çalışır: " in said and \
        "\nOnunla sohbet etmek için: " in said, said


def test_a_new_profile_keeps_within_the_models_trained_context_and_takes_a_name(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny = Path(__file__).parent / "hostile" / "tiny-valid.gguf"  # trained for 128 tokens
    assert main(["profiles", "new", str(tiny), "--name", "tiny"]) == 0
    profile = load_profile_file(folder / "tiny.yaml")
    assert profile.context == 128 and Path(profile.model) == tiny.resolve()  # outside models/: its path
    capsys.readouterr()
    assert main(["profiles", "new", str(tiny), "--name", "tiny"]) == 1  # a name taken is never overwritten
    assert "There is already a profile named 'tiny'" in capsys.readouterr().err
    assert main(["profiles", "new", str(tiny)]) == 0
    assert capsys.readouterr().out.startswith("The profile tiny (")  # the one that runs it
    assert main(["profiles", "new", str(tiny), "--context", "64"]) == 0  # another context: another profile
    capsys.readouterr()
    assert yaml.safe_load((folder / "tiny-valid.yaml").read_text())["context"] == 64  # the file's name


@pytest.mark.parametrize(("args", "said"), [
    (["gema-3"], "There is no model 'gema-3' here"),
    (["/tmp/nowhere/notes.gguf"], "The file /tmp/nowhere/notes.gguf does not exist."),
    (["gemma-3-270m-q4_k.gguf"], "Did you mean 'gemma-3-270m-q4_k_m'?"),  # a name, not a path: its guess
    (["gemma-3-270m-q4_k_m", "--context", "0"], "A context of 0 tokens cannot be used"),
    (["llama-3.2-1b-instruct-q4_k_m"], "models pull llama-3.2-1b-instruct-q4_k_m"),
])
def test_profiles_new_refuses_in_one_sentence(folder: Path, args: list[str], said: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(folder.iterdir())
    assert main(["profiles", "new", *args]) == 1
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err
    assert sorted(folder.iterdir()) == before


def test_a_damaged_model_gets_no_profile(folder: Path, tmp_path: Path, gemma_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(gemma_path.read_bytes()[: 1 << 20])
    before = sorted(folder.iterdir())
    assert main(["profiles", "new", str(cut)]) == 1
    assert "cut.gguf" in capsys.readouterr().err
    assert sorted(folder.iterdir()) == before


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_u_on_f4_chats_with_the_highlighted_model(folder: Path, gemma_path: Path, language: str) -> None:
    """F4, a model no profile runs, U: a profile is made for it and loaded, and the chat shows;
    U on the model in use says so and loads nothing."""
    from textual.widgets import DataTable

    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.models import ModelsScreen

    app = WorkstationApp("office-cpu", sample_system=False, language=language)
    timeouts: dict[str, object] = {}
    shown = notices(app, timeouts)  # (a toast gone before the model loaded was not counted)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.installed))
        models = app.screen
        assert isinstance(models, ModelsScreen)
        table = models.query_one("#installed", DataTable)
        names = [row.name for row in models.installed]
        table.move_cursor(row=names.index("smollm2-135m-instruct-q4_1"))
        await pilot.press("u")
        assert app.screen is models and app.profile is not None and app.profile.key == "office-cpu"
        said = "şu an kullanılan model" if language == "tr" else "is the model in use now (profile office-cpu)"
        assert any(said in n for n in shown), shown

        table.move_cursor(row=names.index("gemma-3-270m-q4_k_m"))
        app.generating = True  # a reply being written: the chat's "press Esc" would only close F4
        await pilot.press("u")
        said = "bitince U'ya yeniden basın" if language == "tr" else "press U again once it is done"
        assert app.screen is models and any(said in n for n in shown)
        app.generating = False
        await pilot.press("u")
        assert app.screen is app.chat_screen
        await until(pilot, lambda: app.loading is None and app.engine is not None)
        assert app.profile is not None and app.profile.key == "gemma-3-270m-q4_k_m"
        assert app.engine_info is not None and Path(app.engine_info.model_path).resolve() == gemma_path.resolve()
        assert (folder / "gemma-3-270m-q4_k_m.yaml").is_file()
        made = "profili oluşturuldu" if language == "tr" else "Made the profile gemma-3-270m-q4_k_m for gemma-3-270m-q4_k_m"
        where = "F3, ardından E ile" if language == "tr" else "F3, then E, changes its settings"  # (in the app, not a YAML file)
        assert any(made in n and where in n for n in shown), shown
        # it asks nothing: it stays the app's reading time (it stayed 10 s, a server's "how to go back" 15)
        assert [timeouts[n] for n in shown if made in n] == [None], timeouts
        # gemma 270M here is a base model: the load says it was not made for chat, once (U said it
        # too: two toasts at once); the status bar names the profile made for it once, not twice
        base = "sohbet için yapılmamış" if language == "tr" else "was not made for chat (it has no chat template"
        assert sum(n.count(base) for n in shown) == 1, shown
        assert app.status_text().count("gemma-3-270m-q4_k_m") == 1, app.status_text()


def test_a_name_in_any_words_makes_a_file_name_of_plain_letters(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'Çağrı Özet' became the file name "a-r---zet", and --name refused capitals and Turkish
    letters; "gem.yaml" made gem.yaml.yaml, which the -p it advised did not find."""
    assert main(["profiles", "new", "gemma-3-270m-q4_k_m", "--name", "Çağrı Özet"]) == 0
    assert capsys.readouterr().out.startswith("Made the profile cagri-ozet (")
    assert load_profile("cagri-ozet").name == "Çağrı Özet"
    assert main(["profiles", "new", "gemma-3-270m-q4_k_m", "--name", "gem.yaml"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("-p gem")
    assert (folder / "gem.yaml").is_file()


def test_a_profile_with_a_draft_model_is_not_the_way_to_run_a_model(
        folder: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SmolLM2 Q8_0 runs in draft-pair beside a second model (a pulled Qwen3 8B named the GPU
    profile whose draft was not downloaded, and `chat` with it failed): a plain profile is made."""
    requantized_copy(smollm2_path, "Q8_0")  # (made once, kept in models/)
    assert main(["profiles", "new", "SmolLM2-135M-Instruct.Q8_0"]) == 0
    assert capsys.readouterr().out.startswith("Made the profile smollm2-135m-instruct.q8_0 (")
    assert load_profile("smollm2-135m-instruct.q8_0").speculative.mode == "off"


def test_a_linked_model_is_named_by_its_link_and_found_again(
        folder: Path, tmp_path: Path, gemma_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`models add --link`: the profile named the file the link points to, so the next U or
    `profiles new` did not find it and made linked-2, linked-3 …"""
    home = tmp_path / "models"
    home.mkdir()
    (home / "linked.gguf").symlink_to(gemma_path)
    monkeypatch.setenv("WORKSTATION_MODELS", str(home))
    assert main(["profiles", "new", "linked"]) == 0
    assert load_profile("linked").model == "linked"
    capsys.readouterr()
    assert main(["profiles", "new", "linked"]) == 0
    assert capsys.readouterr().out.startswith("The profile linked (")
    assert not (folder / "linked-2.yaml").exists()


def test_two_at_once_never_write_over_each_other(folder: Path, gemma_path: Path) -> None:
    """The name was looked for, then the file written over whatever came meanwhile: two runs at
    once (the command line and F4's U) both 'made' one profile, and the first was lost."""
    import threading

    from workstation.core.errors import ProfileError
    from workstation.core.model_profile import make_profile

    for round_ in range(20):
        start = threading.Barrier(2)
        made: list[str] = []
        refused: list[str] = []

        def one(context: int, name: str, start: threading.Barrier = start, made: list[str] = made,
                refused: list[str] = refused) -> None:
            start.wait()
            try:
                made.append(make_profile(gemma_path, name, context).key)
            except ProfileError as err:
                refused.append(str(err))

        threads = [threading.Thread(target=one, args=(512 + k, f"race {round_}")) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert made == [f"race-{round_}"] and len(refused) == 1 and "already a profile" in refused[0]
        assert load_profile(made[0]).context in (512, 513)  # whole, one thread's (they shared a draft file)
    assert not list(folder.glob(".*"))  # nothing left beside them


def test_the_profile_made_for_a_model_comes_before_others_that_run_it(
        folder: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """U loaded the first profile in alphabetical order ("byfile"), not the one U had made for it."""
    q40 = requantized_copy(smollm2_path, "Q4_0")
    assert main(["profiles", "new", str(q40)]) == 0
    (folder / "byfile.yaml").write_text(f"model: {q40}\ncontext: 2048\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["profiles", "new", str(q40)]) == 0
    assert capsys.readouterr().out.startswith("The profile smollm2-135m-instruct.q4_0 (")


def test_a_name_of_no_latin_letters_keeps_the_models_file_name(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """"Отчёты" and "报告" both became the file model.yaml, the second refused as a name taken
    that the person never typed."""
    for name in ("Отчёты", "报告"):
        assert main(["profiles", "new", "gemma-3-270m-q4_k_m", "--context", "1024", "--name", name]) == 0
    out = capsys.readouterr().out
    assert "Made the profile gemma-3-270m-q4_k_m (" in out and "Made the profile gemma-3-270m-q4_k_m-2 (" in out
    assert [load_profile(k).name for k in ("gemma-3-270m-q4_k_m", "gemma-3-270m-q4_k_m-2")] == ["Отчёты", "报告"]


def test_a_link_outside_the_models_folder_is_found_again(
        folder: Path, tmp_path: Path, gemma_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A link elsewhere was written as the file it points to, so it was never found again."""
    link = tmp_path / "desk" / "report-model.gguf"
    link.parent.mkdir()
    link.symlink_to(gemma_path)
    for typed in (link, tmp_path / "desk" / ".." / "desk" / "report-model.gguf"):  # however its path is typed
        assert main(["profiles", "new", str(typed)]) == 0
    out = capsys.readouterr().out
    assert out.count("Made the profile") == 1 and "The profile report-model (" in out, out
    assert load_profile("report-model").model == str(link)


async def test_u_on_the_model_in_use_by_a_profile_with_a_draft_says_so(folder: Path, smollm2_path: Path) -> None:
    """draft-pair runs SmolLM2 Q8_0 beside a draft: U on that model made and loaded another
    profile, loading the same model again."""
    from textual.widgets import DataTable

    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.models import ModelsScreen

    requantized_copy(smollm2_path, "Q8_0")
    before = sorted(folder.iterdir())
    app = WorkstationApp("draft-pair", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.loading is None)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.installed))
        models = app.screen
        assert isinstance(models, ModelsScreen)
        names = [row.name for row in models.installed]
        models.query_one("#installed", DataTable).move_cursor(row=names.index("SmolLM2-135M-Instruct.Q8_0"))
        await pilot.press("u")
        assert app.screen is models and app.profile is not None and app.profile.key == "draft-pair"
        assert any("is the model in use now (profile draft-pair)" in str(n.message) for n in app._notifications)
    assert sorted(folder.iterdir()) == before


def test_a_profile_made_for_a_model_is_named_again_when_it_fits_no_more(
        folder: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What fits changes with the memory free this minute: a profile made for a model that does
    not fit now was made again at each try (-2, -3 …). Another profile that does not fit is
    not the way to run the model: a plain one is made."""
    requantized_copy(smollm2_path, "Q4_0")
    huge = {"model": "SmolLM2-135M-Instruct.Q4_0", "context": 1_048_576, "kv_cache": {"k": "f32", "v": "f32"}}
    (folder / "everything.yaml").write_text(yaml.safe_dump(huge), encoding="utf-8")  # 47 GB of K/V
    assert main(["profiles", "new", "SmolLM2-135M-Instruct.Q4_0"]) == 0
    assert capsys.readouterr().out.startswith("Made the profile smollm2-135m-instruct.q4_0 (")
    (folder / "smollm2-135m-instruct.q4_0.yaml").write_text(yaml.safe_dump(huge), encoding="utf-8")  # (changed since)
    for _ in range(2):
        assert main(["profiles", "new", "SmolLM2-135M-Instruct.Q4_0"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("The profile smollm2-135m-instruct.q4_0 (") and "Fit: does not fit" in out, out
    assert not (folder / "smollm2-135m-instruct.q4_0-2.yaml").exists()


def test_profiles_made_are_the_users_own_and_never_touch_the_shipped_ones(
        shipped: Path, folder: Path, gemma_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Profiles made go to the data folder: in the checkout, an update shipping a profile of
    the same name stopped `git pull`. A shipped profile's name is taken (made, it would hide
    the shipped one): refused where chosen, -2 where not; the listing says where they are."""
    before = sorted(p.name for p in shipped.iterdir())
    assert main(["profiles", "new", "gemma-3-270m-q4_k_m", "--name", "office-cpu"]) == 1
    assert f"There is already a profile named 'office-cpu' ({shipped / 'office-cpu.yaml'})" in capsys.readouterr().err
    # a shipped file of the name the model's profile would get, running something else
    (shipped / "gemma-3-270m-q4_k_m.yaml").write_text("name: other\nmodel: smollm2-135m-instruct-q4_1\n",
                                                      encoding="utf-8")
    before = sorted([*before, "gemma-3-270m-q4_k_m.yaml"])
    assert main(["profiles", "new", "gemma-3-270m-q4_k_m", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["key"] == "gemma-3-270m-q4_k_m-2" and Path(made["file"]).parent == folder
    assert sorted(p.name for p in shipped.iterdir()) == before  # nothing written there
    assert main(["profiles", "list"]) == 0
    assert f"Your own profiles are kept in {folder} " in capsys.readouterr().out


def test_a_users_own_profile_of_a_shipped_name_is_the_one_used(
        shipped: Path, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of office-cpu.yaml edited in the user's folder is what -p office-cpu runs and
    what the listing shows; the shipped one, hidden, is still found again by its path."""
    mine = folder / "office-cpu.yaml"
    mine.write_text((shipped / "office-cpu.yaml").read_text(encoding="utf-8").replace("context: 4096", "context: 1024"),
                    encoding="utf-8")
    profile = load_profile("office-cpu")
    assert profile.source == mine and profile.context == 1024 and profile.ref == "office-cpu"
    hidden = load_profile_file(shipped / "office-cpu.yaml")
    assert hidden.ref == str((shipped / "office-cpu.yaml").resolve())
    assert load_profile(hidden.ref).context == 4096
    assert main(["profiles", "list", "--json"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["profiles"] if r["key"] == "office-cpu"]
    assert [(r["file"], r["own"], r["hides_shipped"]) for r in rows] == [(str(mine), True,
                                                                          str(shipped / "office-cpu.yaml"))]
    assert main(["profiles", "list"]) == 0  # it says which are the user's, and what they hide
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("office-cpu (yours, in place of the shipped one) ") for line in lines)
    assert not any("(yours" in line for line in lines if not line.startswith("office-cpu "))
    # each model by the name 'models list' gives it (draft-pair's file name was shown, .gguf and all)
    assert any(line.startswith("draft-pair ") and "  SmolLM2-135M-Instruct.Q8_0  " in line and ".gguf" not in line
               for line in lines), lines
    # in the app's language, or --lang's: the statuses, the planner's verdict, the folder (they were English)
    assert main(["profiles", "list", "--lang", "tr"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("office-cpu (sizin, uygulamayla gelenin yerine) ") and " 1.024  tam boy " in line
               and " kapalı " in line and "hazır — CPU'da çalışır: " in line for line in lines) \
        and lines[-1].startswith(f"Kendi profilleriniz {folder} klasöründe tutulur"), lines
    # the speed-up in F3's words (it said "draft" beside "kapalı")
    assert any(line.startswith("quoting-lookup ") and " alıntıda " in line for line in lines) and \
        any(line.startswith("draft-pair ") and " yardımcı " in line for line in lines), lines


def test_profiles_list_goes_on_where_the_data_folder_cannot_be_used(
        shipped: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The user's profiles folder is in the data folder; one that cannot be made (a file where
    it should be) leaves the shipped profiles listed and exit 0, as before it was kept there."""
    monkeypatch.setenv("WORKSTATION_DATA", "/proc/no-such-folder")
    assert main(["profiles", "list"]) == 0
    out = capsys.readouterr().out
    assert "office-cpu" in out and "Your own profiles cannot be kept now:" in out
    assert main(["fit", "-p", "office-cpu"]) == 0  # (what bench measured is looked for there: nothing, no error)
    out = capsys.readouterr().out
    assert "verdict:" in out
    # the file's size beside the weights', as 'models list' says it (92 MB and 94 MB read as one size said two ways)
    assert re.search(r"^  the model itself \(weights\): \d+ MB \(its file is 94 MB, with its vocabulary and settings\)$", out, re.M), out


# --- -p MODEL.gguf: a model file run as a new profile for it would run it -----------------------
def _without_source(data: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in data.items() if k != "source"}


def test_a_model_file_given_to_p_runs_with_a_new_profiles_settings(
        folder: Path, smollm2_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`chat -p ~/Downloads/model.gguf "hi"` chats (it said "is a model file, not a profile"),
    with the settings `profiles new` would write for it, and writes no profile."""
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    model = downloads / "model.gguf"
    model.symlink_to(smollm2_path)
    assert main(["chat", "-p", str(model), "--json", "--max-tokens", "4", "Say hi"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["text"] and said["profile"] == "model"
    assert list(folder.iterdir()) == []  # nothing written
    ran = load_profile(str(model))
    assert ran.context == 4096 and ran.gpu_layers == "auto" and ran.source == model
    assert _without_source(ran.to_dict()) == _without_source(make_profile(model).to_dict())
    assert load_profile(ran.ref).to_dict() == ran.to_dict()  # a conversation's record of it finds it again
    # a file name of models/ from any folder, as `-p model.gguf` in LM Studio's folder is meant
    monkeypatch.chdir(tmp_path)
    assert load_profile(smollm2_path.name).model == "smollm2-135m-instruct-q4_1"
    # a file there by another name: a model runs; any other file gets the GGUF check's sentence
    # (it said "There is no profile named 'README.md'" of the file beside it)
    Path("my-model").symlink_to(smollm2_path)
    assert load_profile("my-model").source == tmp_path / "my-model"
    Path("README.md").write_text("# Notes\n", encoding="utf-8")
    for typed in ("README.md", "./README.md"):  # (a path: read as YAML, "not valid YAML at line 1")
        with pytest.raises(ProfileError) as not_one:
            load_profile(typed)
        assert str(not_one.value) == ("README.md is not a usable GGUF model: it does not start with 'GGUF', so it "
                                      "is not a GGUF file (at byte 0).")
    assert load_profile("./my-model").source == tmp_path / "my-model"


@pytest.mark.parametrize("kind", ["missing", "text", "cut"])
def test_a_model_file_that_cannot_run_is_said_as_the_gguf_check_says_it(
        folder: Path, smollm2_path: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A path that is not there, no GGUF file, or a download cut short: one sentence, exit 1,
    the GGUF check's sentence, as every other command gives it."""
    path = tmp_path / f"{kind}.gguf"
    if kind == "text":
        path.write_text("These are notes, not a model.\n", encoding="utf-8")
    elif kind == "cut":
        path.write_bytes(smollm2_path.read_bytes()[: 4 << 20])
    assert main(["chat", "-p", str(path), "hi"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err, err
    assert {"missing": "does not exist", "text": "it does not start with 'GGUF', so it is not a GGUF file",
            "cut": "the file is incomplete, as an interrupted download or copy leaves it; download or copy it again. Details: "}[kind] in err
    with pytest.raises(ModelFileError) as checked:
        preflight(path)
    assert err == f"workstation: {checked.value}\n"
    assert main(["serve", "-p", str(path), "--port", "0"]) == 1
    assert capsys.readouterr().err == err


def test_serve_runs_a_model_file(smollm2_path: Path) -> None:
    """`serve -p x.gguf` serves the file with a new profile's settings."""
    import httpx
    from serve_helpers import serve

    with serve(smollm2_path) as server:
        listed = httpx.get(f"{server.base_url}/models", headers=server.headers(), timeout=30).json()
        assert "smollm2-135m-instruct-q4_1" in json.dumps(listed)
        reply = httpx.post(f"{server.base_url}/chat/completions", headers=server.headers(), timeout=120, json={
            "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 4})
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"]


async def test_the_app_runs_a_model_file_and_starts_with_it_again(folder: Path, smollm2_path: Path,
                                                                  tmp_path: Path) -> None:
    """`./run.sh -p model.gguf`: the app loads the file and chats; started again without -p, it
    loads the same file (the profile loaded last), and the conversation names it."""
    from tui_helpers import type_message

    from workstation.core.store import ConversationStore
    from workstation.tui.app import WorkstationApp

    model = tmp_path / "model.gguf"
    model.symlink_to(smollm2_path)
    app = WorkstationApp(str(model), sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.loading is None)
        assert app.startup_problem is None and app.profile is not None and app.profile.source == model
        await type_message(pilot, "Say hi")
        await until(pilot, lambda: app.conversation_id is not None and not app.generating)
        conv_id = app.conversation_id
    store = ConversationStore(tmp_path / "c.db")
    assert store.get(conv_id).profile == str(model)  # type: ignore[union-attr]
    store.close()
    again = WorkstationApp(None, start_engine=False, sample_system=False, language="en", store_path=tmp_path / "c.db")
    assert again.profile is not None and again.profile.source == model and again.startup_problem is None


def test_the_default_system_prompt_asks_for_the_users_language() -> None:
    """The default profiles' system prompt was English only, and the model answered Turkish
    questions in English: the shipped chat profiles and a new profile (F4's U, `profiles new`)
    have one prompt, which asks for the language the user writes in."""
    from workstation.core.model_profile import SYSTEM_PROMPT
    from workstation.core.profile_lookup import load_profile

    assert "in the language the user writes in" in SYSTEM_PROMPT
    for key in ("office-cpu", "gpu-llama31-8b", "gpu-qwen3-8b", "gpu-qwen25-14b", "draft-pair", "office-server"):
        assert load_profile(key).system_prompt.strip() == SYSTEM_PROMPT, key
