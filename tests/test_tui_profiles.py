"""The status line and the profile menu (F3) for a desk PC's profile and long model names."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import as_shipped_profiles
from tui_helpers import f6_state, notices, press_at_once, screen_lines, summarize_in_f6, until

from workstation.core.profiles import KVCache
from workstation.tui.app import WorkstationApp
from workstation.tui.i18n import Texts
from workstation.tui.messages import GpuReading, SystemSampled


def _write(folder: Path, key: str, data: dict[str, object]) -> None:
    base: dict[str, object] = {"name": key, "context": 512, "threads": 1, "gpu_layers": 0,
                               "sampling": {"temperature": 0.0, "max_tokens": 4}, "system_prompt": ""}
    (folder / f"{key}.yaml").write_text(yaml.safe_dump({**base, **data}), encoding="utf-8")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    as_shipped_profiles(monkeypatch, profiles)
    return profiles


def _server_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, tokens_per_day: int) -> Path:
    """An office server's data folder with one key, ``name``'s, of ``tokens_per_day``, the desk
    PC's key in its environment (WS_DESK_KEY): the folder."""
    from workstation.core.keys import DB_NAME, KeyRing

    server_data = tmp_path / "server"
    server_data.mkdir()
    ring = KeyRing(server_data / DB_NAME)
    _, secret = ring.add(name, tokens_per_day=tokens_per_day)
    ring.close()
    monkeypatch.setenv("WS_DESK_KEY", secret)
    return server_data


async def test_a_long_model_name_keeps_its_quantization(folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """Two copies of one model differ only at the end of their names (….Q4_1, ….Q8_0): a name
    too long for the line loses its middle, never its end; and only when the line is too long
    (it was cut at 120 columns too)."""
    from workstation.tui.widgets.status_bar import StatusBar

    long = tmp_path / "SmolLM2-135M-Instruct-office-edition.Q4_1.gguf"
    long.symlink_to(smollm2_path)
    _write(folder, "long", {"model": str(long)})
    app = WorkstationApp("long", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        text = app.status_text()
        assert text.rstrip().endswith(" · SmolLM2-135M-Instruct-office-edition.Q4_1"), text  # no GPU: none said
        # where there is a GPU, the share of the model on it, in words ("GPU layers 12/31" said nothing to picture)
        assert app.gpu_share_said(12, 31) == ("39% of the model on the GPU", "39% on GPU")
        assert app.gpu_share_said(31, 31)[0] == "all on the GPU" and app.gpu_share_said(0, 31) == ("", "")
        assert app.gpu_share_said(199, 200)[1] == "99% on GPU"  # a part is never "100%" (nor 0%): as the load bar says
        app._sampled(SystemSampled(5.0, 1, 2, [GpuReading(0, "RTX 4060", 3.0, 1, 8 * 1024**3, 40.0, 20.0)]))
        assert app.gpu_share_said(0, 31)[0] == "GPU not used" and app.status_text().endswith("Q4_1 · GPU not used")
        english, app.texts = app.texts, Texts("tr")  # (the short one said "GPU boşta": the GPU idle, not unused)
        assert [app.gpu_share_said(n, 31) for n in (12, 31, 0)] == [
            ("modelin %39'u GPU'da", "%39'u GPU'da"), ("modelin tamamı GPU'da", "GPU'da"), ("GPU kullanılmıyor", "CPU'da")]
        app.texts = english
        app._sampled(SystemSampled(5.0, 1, 2, []))
        await pilot.resize_terminal(50, 24)  # (whole at 80 columns, with nothing of the usual f16/f16 K/V)
        bar = app.chat_screen.query_one(StatusBar)
        await until(pilot, lambda: "…" in str(bar.render()))
        text = str(bar.render())
        assert text.startswith(" ready │ long · SmolLM2-") and "…" in text and text.rstrip().endswith("edition.Q4_1")
        assert len(text.rstrip()) <= 50, text
        app.generating = True  # a longer state word: the name gives up more
        text = app.status_text()
        assert text.startswith(" generating │ long · SmolLM2") and text.endswith("edition.Q4_1")
        assert len(text) <= 50, text
        app.generating = False


async def test_the_status_line_names_a_profile_as_f3_lists_it(folder: Path, smollm2_path: Path) -> None:
    """The status line names the profile by its shown name in the UI's language, as F3's list does
    (it said the file's id "long-documents" where F3 said "Uzun belgeler (kopyam)"), and a name too
    long for the line's share ends in "…" with the model and its state still beside it."""
    _write(folder, "long-documents", {"model": str(smollm2_path), "name": "Long documents (my copy)",
                                      "name_tr": "Uzun belgeler (kopyam)"})
    for lang, said in (("en", "Long documents (my copy)"), ("tr", "Uzun belgeler (kopyam)")):
        app = WorkstationApp("long-documents", sample_system=False, language=lang)
        async with app.run_test(size=(110, 32)) as pilot:
            await until(pilot, lambda: app.engine is not None)  # noqa: B023 - awaited in the loop
            text = app.status_text()
            assert f" {app.glyphs.between} {said} · " in text and "long-documents" not in text, text
    _write(folder, "wordy", {"model": str(smollm2_path), "name": "A profile for the long contracts of the office"})
    app = WorkstationApp("wordy", sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        text = app.status_text()
        assert " A profile for the long cont… · " in text and len(text) <= 80, text


async def test_a_remote_profile_names_its_server_not_local_settings(folder: Path, models_home: Path,
                                                                   smollm2_path: Path) -> None:
    """A desk PC's profile runs on the office server: the line names the server, and shows no
    GPU layers or K/V types, which are the server's business."""
    _write(folder, "desk", {"backend": "openai",
                            "remote": {"base_url": "http://127.0.0.1:9/v1", "model": "office-model"}})
    (models_home / smollm2_path.name).symlink_to(smollm2_path)
    app = WorkstationApp("desk", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.loading is None)
        text = app.status_text()
        # F4 says the office server is in use and its model (it listed this PC's models as if one
        # ran); U loads one here, and its notice says the server is left and how to go back
        await pilot.press("f4")
        from workstation.tui.screens.models import ModelsScreen
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.installed))
        assert any(line.strip() == "This PC uses the office server (its model: office-model); U runs a model "
                   "on this PC instead." for line in screen_lines(app)), screen_lines(app)
        said_all = notices(app)
        await pilot.press("shift+tab")  # the keyboard left on the tabs as U closes F4
        assert app.focused is not None and app.focused.id != "installed"
        await pilot.press("u")
        await until(pilot, lambda: app.screen is app.chat_screen and app.loading is None)
        assert any(said.endswith("The office server is no longer used; F3, then desk, brings it back.")
                   for said in said_all), said_all
        # the status line says the load ("Loaded: …" covered the chat's lines for seconds): the desk
        # profile's failed load is put away ("Cannot reach the server" stayed over the local model),
        # not U's notice saying how to go back (it went a second later)
        shown = [n.message for n in app._notifications]
        assert not any(said.startswith("Loaded: ") or "Cannot reach" in said for said in shown), shown
        assert f"ready {app.glyphs.between} {app.profile.key}" in app.status_text(), app.status_text()
        assert any(said.endswith("F3, then desk, brings it back.") for said in shown), shown
        assert app.profile is not None and app.profile.backend == "llama"
        await pilot.press("f4")  # a model of this PC's in use: no line of the server's
        await until(pilot, lambda: app.screen is not app.chat_screen)
        assert not app.screen.query_one("#model-server").display
        # the keyboard on the list each time F4 opens (the second time, on the tabs: Down did nothing)
        assert app.focused is app.screen.query_one("#installed"), app.focused
    assert "desk · office-model on 127.0.0.1:9" in text, text
    assert "GPU" not in text and "KV " not in text


async def test_a_profile_file_from_elsewhere_can_be_loaded_again_from_f3(
        folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """`workstation -p desk.yaml` with the office server down: F3 lists that file first (it is
    not in profiles/), as a server's profile, and choosing it tries the server again; after a
    switch to another profile it is still there (it dropped out of the menu)."""
    from workstation.core.engine_api import answer_reserve
    from workstation.core.paths import user_profiles_dir
    from workstation.core.phrases import rounded_words
    from workstation.core.profile_lookup import load_profile_file
    from workstation.core.profile_plan import memory_held
    from workstation.core.profiles import Profile
    from workstation.tui.messages import ProfileLoaded
    from workstation.tui.model_loading import LAST_PROFILE
    from workstation.tui.screens.dialogs import ConfirmDialog
    from workstation.tui.screens.load_settings import LoadSettings
    from workstation.tui.screens.profile_menu import ProfileMenu

    _write(folder, "office-cpu-like", {"model": str(smollm2_path)})
    desk = tmp_path / "desk.yaml"
    desk.write_text(yaml.safe_dump({"name": "Desk", "backend": "openai",
                                    "remote": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}))
    app = WorkstationApp(load_profile_file(desk), sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        # (its load over: loading is None before it starts too, and the test went on at once)
        await until(pilot, lambda: app.loading is None and any("Cannot reach the server" in n.message
                                                               for n in app._notifications))
        failures = sum("Cannot reach the server" in n.message for n in app._notifications)
        assert app.engine is None and failures == 1
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        first = menu.entries[0]
        assert not isinstance(first, Exception) and first.source == desk and len(menu.entries) == 2
        prompt = str(menu._prompt(0, first))
        assert "uses the server at http://127.0.0.1:9/v1" in prompt and "KV" not in prompt
        await pilot.press("escape")
        # the user fixes the file's port: F3 lists it as the file says now, and loads that
        desk.write_text(yaml.safe_dump({"name": "Desk", "backend": "openai",
                                        "remote": {"base_url": "http://127.0.0.1:7/v1", "model": "m"}}))
        await until(pilot, lambda: not isinstance(app.screen, ProfileMenu))
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        fixed = app.screen.entries[0]  # type: ignore[attr-defined]
        assert not isinstance(fixed, Exception) and fixed.remote.base_url == "http://127.0.0.1:7/v1"
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, ProfileMenu) and app.loading is None)
        await until(pilot, lambda: any("127.0.0.1:7/v1" in n.message for n in app._notifications))
        assert app.profile is not None and app.profile.remote.base_url == "http://127.0.0.1:7/v1"
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        await pilot.press("down", "enter")  # the local profile
        await until(pilot, lambda: app.profile.key == "office-cpu-like" and app.engine is not None)
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        listed = app.screen.entries  # type: ignore[attr-defined]
        assert [getattr(e, "source", None) for e in listed] == [desk, folder / "office-cpu-like.yaml"]
        # the loaded model's memory is free for the profile chosen (the switch closes it first):
        # F3 counted it as taken, and said "does not fit" of a profile that fitted then
        await until(pilot, lambda: 1 in app.screen.verdicts)  # type: ignore[attr-defined]
        menu = app.screen
        assert isinstance(menu, ProfileMenu) and menu.freed is not None and menu.freed.ram_bytes > 0
        assert menu.freed == memory_held(app.profile, app.engine.info())
        assert "fits once" not in str(menu._prompt(1, listed[1]))  # (it fits anyway: nothing to explain)
        # its context in words, and its K/V cache's memory in words ("context 8,192 at half size" said neither)
        # (of English: the words of the language the app is in, as the box's and F5's words before a reply)
        # a conversation's and a message's, the reply's room kept (``holds_words``): one figure, read as what a
        # message holds, stood beside the refusal of a shorter document
        def message(p: Profile) -> str:
            return rounded_words((p.context - answer_reserve(p.sampling, p.context)) * 0.75)

        assert f"· a conversation of about 380 words; a message up to about {message(listed[1])}\n" \
            in str(menu._prompt(1, listed[1]))
        # its model and its helper model by the names they go by (`models list`'s), not a file or its path
        # (the helper pair showed "SmolLM2-135M-Instruct.Q8_0.gguf" where the others showed a model's name)
        pair = dataclasses.replace(listed[1], model="SmolLM2-135M-Instruct.Q8_0.gguf", speculative=dataclasses.replace(
            listed[1].speculative, mode="draft", draft_model=str(smollm2_path)))
        assert "\n  smollm2-135m-instruct-q4_1 · a conversation of" in str(menu._prompt(1, listed[1]))
        assert "\n  SmolLM2-135M-Instruct.Q8_0 · a conversation of" in str(menu._prompt(1, pair))
        assert "· faster with a small helper model, smollm2-135m-instruct-q4_1\n" in str(menu._prompt(1, pair))
        half = dataclasses.replace(listed[1], context=8192, kv_cache=KVCache("q8_0", "q8_0"))
        # each word's memory, and its cost on a CPU ("in half the usual memory" stood under "twice as much
        # of a document at once, in about the same memory")
        assert f"· a conversation of about 6,100 words; a message up to about {message(half)}; each word in half " \
            "the usual memory (slower on a CPU)\n" in str(menu._prompt(1, half))
        mixed = dataclasses.replace(half, kv_cache=KVCache("q8_0", "f16"))  # (0.77 of it: it said the usual)
        assert (f"· a conversation of about 6,100 words; a message up to about {message(mixed)}; each word in about "
                "three quarters of the usual memory (slower on a CPU)\n") in str(menu._prompt(1, mixed))
        # its E counts that memory as free too (saving it loads it again, closing it first): E's
        # verdict said less free than F3's of the same settings; saved, it is loaded again with them
        timeouts: dict[str, object] = {}
        said = notices(app, timeouts)
        await _load_settings_of(pilot, app, "office-cpu-like")
        assert isinstance(app.screen, LoadSettings) and app.screen.freed == menu.freed
        # what the model was made for, in words ("8.192 için eğitildi" said tokens to office staff)
        e = app.screen
        helps = [str(label.render()) for label in e.query(".load-help")]
        # what the context typed holds, as F3 says it, short on its row ("the model's limit: about 6,100 words"
        # alone read as what 4,096 holds); the model's limit where the context typed is over it
        office = e.profile
        assert helps[0] == f"about {rounded_words(office.context * 0.75)} words; a message up to {message(office)}", helps
        from textual.widgets import Input

        context = e.query_one("#load-context", Input)
        context.value = "16384"
        await until(pilot, lambda: "over the model's limit (about 6,100 words)" in str(e.query_one("#load-context-help").render()))
        context.value = str(office.context)
        await until(pilot, lambda: str(e.query_one("#load-context-help").render()) == helps[0])
        # its speed names bench once ("bench measures" stood in three sentences of it)
        await until(pilot, lambda: "words a second" in str(e.query_one("#load-speed").render()))
        speed = str(e.query_one("#load-speed").render())
        assert speed.count("bench") == 1 and speed.endswith("'workstation bench' measures it on this PC, with and "
                                                            "without each setting."), speed
        # F1 says what its rows' names and choices mean (Context memory K, q8_0)
        await pilot.press("f1")
        await until(pilot, lambda: type(app.screen).__name__ == "KeysDialog")
        assert app.screen.rows[-1][1] == app.texts("keys.dash_figures")  # type: ignore[attr-defined]
        # every K/V type in words, and K and V said in words once (F1 named three, and "K: keys, V: values")
        terms = app.screen.rows[-1][2]  # type: ignore[attr-defined]
        assert ("K (what the model looks each earlier word up by) and V (what it reads back about it)" in terms
                and "K: keys" not in terms), terms
        for words in ("f32 double size, exact", "f16 full size, exact", "bf16 full size, nearly exact",
                     "q8_0 half size, nearly exact", "q5_0 1/3 size, a bit less exact", "q5_1 1/3 size, a bit less exact",
                     "q4_0 quarter size, less exact", "q4_1 quarter size, less exact", "iq4_nl quarter size, less exact"):
            assert words in terms, (words, terms)
        # ...and E's own keys, its fields' first (it listed "Ctrl+R Shipped settings" alone, read as F3's)
        # (in its own words, as its key line says them: "Esc: leave unsaved", not the binding's "cancel")
        keys = [row[:2] for row in app.screen.rows if row[0]]  # type: ignore[attr-defined]
        assert keys[:5] == [("Tab", "Next"), ("Enter", "Open a choice"), ("Ctrl+S", "Save"), ("Esc", "Leave unsaved"),
                            ("Ctrl+R", "Shipped settings")], keys
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is e)
        await pilot.press("home", "ctrl+k", *"1024", "ctrl+s")
        await until(pilot, lambda: app.loading is None and app.engine_info is not None and app.engine_info.n_ctx == 1024)
        copy = user_profiles_dir() / "office-cpu-like.yaml"
        assert app.profile.source == copy and app.profile.context == 1024
        assert said[-1] == (f"Saved as your own copy, {copy}; it is used in place of the one that came with the app. "
                            "Loading the profile again with the new settings."), said
        assert timeouts[said[-1]] is None  # it asks nothing: the app's reading time (it stayed 10 s)
        # loaded, it stays (where the copy is kept: its path went as the load ended, read by no one)
        assert said[-1] in [n.message for n in app._notifications]
        await pilot.press("f3")  # listed once, as the copy (not the shipped file beside it)
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        assert [getattr(e, "source", None) for e in app.screen.entries] == [desk, copy]  # type: ignore[attr-defined]
        # put back (Ctrl+R) as it loads: once loaded, the file in use is the shipped one (it was the
        # copy removed, listed first as a broken profile, and remembered for the next start)
        loading = app.loading = app.profile
        await _load_settings_of(pilot, app, "office-cpu-like")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and not copy.exists())
        assert app.profile.name == "office-cpu-like"  # nor titled as the copy put aside, until it loaded again
        said = notices(app)
        app.post_message(ProfileLoaded(app.engine, loading))
        await until(pilot, lambda: app.loading is None and bool(said))
        assert said == ["Loaded: office-cpu-like"], said  # (it said "… (my copy)")
        await pilot.press("escape", "f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        shipped = folder / "office-cpu-like.yaml"
        assert app.profile.source == shipped and app.store.recalled(LAST_PROFILE) == "office-cpu-like"
        assert app.profile.name == "office-cpu-like"
        assert [getattr(e, "source", None) for e in app.screen.entries] == [desk, shipped]  # type: ignore[attr-defined]


async def test_an_error_naming_a_file_with_brackets_is_shown_as_written(folder: Path, tmp_path: Path) -> None:
    """A path with '[/bold]' in it, named by an error: the toast shows it as written (it was read
    as markup: text in brackets vanished, and a closing tag with no opening one raised while the
    toast was drawn, which took the app down and left it hanging on a blank screen)."""
    from textual.content import Content
    from textual.markup import MarkupError
    from textual.widgets import Input

    from workstation.tui.screens.file_picker import FilePicker

    _write(folder, "a", {"model": "nowhere.gguf"})
    app = WorkstationApp("a", sample_system=True, language="en", start_engine=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("ctrl+o")  # the Open dialog says a path that is not there itself
        await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(Input)))
        app.screen.query_one(Input).value = str(tmp_path / "[/bold]nope.txt")
        app.screen.query_one(Input).focus()
        await pilot.press("enter")
        problem = app.screen.query_one("#picker-problem")
        await until(pilot, lambda: problem.display)
        assert str(problem.render()).startswith(f"There is no '{tmp_path / '[/bold]nope.txt'}'.")  # as written
        (tmp_path / "[").mkdir()
        (tmp_path / "[/bold]nope.txt").write_bytes(bytes(range(256)) * 10)  # there now, and no document
        await pilot.press("enter")
        await until(pilot, lambda: "binary" in str(problem.render()))
        assert str(problem.render()) == "'bold]nope.txt' is a binary file, not text."  # as written
        with pytest.raises(MarkupError):  # what drawing such a name as markup does
            Content.from_markup("[/bold]nope.txt")
        await pilot.press("escape")
        app.notify("no item named '[Content_Types].xml'")  # a toast draws the text as it is
        assert all(n.markup is False for n in app._notifications)
        await pilot.pause(0.3)  # the toasts are drawn: the app is still up
    assert app._exception is None


async def test_a_broken_profile_is_reached_with_the_keys_and_says_what_to_mend(folder: Path, smollm2_path: Path) -> None:
    """A broken profile file's row was disabled: Home stopped at the row below it, so it was
    seen only with a mouse wheel, and Enter on it did nothing."""
    from textual.widgets import OptionList

    from workstation.tui.screens.profile_menu import ProfileMenu

    _write(folder, "a", {"model": str(smollm2_path)})
    _write(folder, "bad", {"model": str(smollm2_path), "gpu_layers": "lots", "contxt": 2})
    app = WorkstationApp("a", sample_system=False, language="en", start_engine=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        options = app.screen.query_one(OptionList)
        broken = next(i for i, e in enumerate(app.screen.entries) if not hasattr(e, "key"))
        await pilot.press("home")
        await pilot.press(*["down"] * broken)
        assert options.highlighted == broken
        await pilot.press("enter")
        said = lambda: " ".join(str(n.message) for n in app._notifications)  # noqa: E731
        await until(pilot, lambda: "It cannot be loaded: " in said())
        assert "gpu_layers" in said() and said().endswith("Mend the file in a text editor, then open F3 again.")
        # its problems one to a line, in the list and the notice (on one line the last were cut off)
        row = str(options.get_option_at_index(broken).prompt)
        assert "has 2 problems:\n    (1) unknown field 'contxt'" in row and "\n    (2) field 'gpu_layers'" in row, row
        assert "\n    (2) field 'gpu_layers' is 'lots'" in said()
        assert isinstance(app.screen, ProfileMenu)  # still open: nothing was loaded
        assert app.profile is not None and app.profile.key == "a"


@pytest.mark.parametrize(("size", "lang"), [((120, 35), "en"), ((80, 24), "tr")])
async def test_f3_shows_the_running_profile_and_the_hint_once_every_verdict_is_in(size: tuple[int, int],
                                                                                  lang: str) -> None:
    """The shipped profiles: each verdict adds lines above the highlighted (running) profile,
    which went out of view, so Enter loaded a profile the user could not see; at 80x24 the
    hint under the list was cut off, and so was the end of a profile taller than the list (in
    Turkish, 12 lines of the 11 shown: its verdict's last words, which no key brought in sight)."""
    from workstation.tui.screens.profile_menu import ProfileMenu

    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language=lang)
    async with app.run_test(size=size) as pilot:
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu)
                    and len(app.screen.verdicts) == sum(1 for e in app.screen.entries if hasattr(e, "key")))
        await pilot.pause()
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        current = menu.entries[menu.query_one("#profiles").highlighted]  # type: ignore[attr-defined]
        assert getattr(current, "key", None) == "office-cpu"
        options = menu.query_one("#profiles")
        in_view = "\n".join(options.render_line(y).text for y in range(options.size.height))
        assert f"● {current.title(lang)}" in in_view, in_view  # type: ignore[union-attr]
        # the top line is a profile's name, never the last lines of one whose name is cut off
        titles = [f"{e.title(lang)}  ({e.key})" for e in menu.entries if hasattr(e, "key")]  # type: ignore[union-attr]
        top = options.render_line(0).text.strip().removeprefix("● ")
        assert options.scroll_y > 0 and top in titles, (top, in_view)
        await pilot.press("up", "up", "up", "down", "down", "down", "down")  # the arrows keep it so
        assert options.render_line(0).text.strip().removeprefix("● ") in titles, options.scroll_y
        for _ in menu.entries:  # each profile highlighted is in sight whole, its first line to its last
            top, lines = options._index_to_line[options.highlighted], options._heights[options.highlighted]
            shown = options.scrollable_content_region.height
            assert options.scroll_y <= top and top + lines <= options.scroll_y + shown, (top, lines, shown)
            await pilot.press("down")
        dialog, hint = menu.query_one("#profile-menu"), menu.query_one(".dialog-hint")
        assert hint.region.height and hint.region.bottom <= dialog.region.bottom - 1  # inside the border
        # each shipped profile said in words (it said "a q8_0 K/V cache (about half the memory of f16)" and
        # "Set thinking to false"): the K/V types are the line under it's, in kv_words' words
        jargon = r"K/V|q8_0|q4_0|f16|Q[48]_[01]|to false|'i false|[Ss]pecul|[Ss]pekülatif|token"
        said = [e.about(lang) for e in menu.entries if hasattr(e, "about") for lang in ("en", "tr")]
        assert len(said) >= 14 and not [a for a in said if re.search(jargon, a)], said


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_f4_shows_the_highlighted_model_in_full_and_whether_it_fits(language: str) -> None:
    """At 80 columns the table cuts a model's details: the line under it says them uncut, the
    catalog's description, and whether the model fits this PC at a chat's context — a catalog
    model before it is downloaded too (planned from its published shape), in the UI's language."""
    from textual.widgets import DataTable, Static, TabbedContent

    from workstation.core.gpu_layers import offloadable_layers
    from workstation.core.hardware import FakeGpuProbe, set_probe
    from workstation.core.model_info import read_model_info
    from workstation.tui.screens.models import ModelsScreen

    set_probe(FakeGpuProbe.of(("RTX 4060 Ti", 16, 15.0)))
    try:
        app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language=language)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.catalog))
            models = app.screen
            assert isinstance(models, ModelsScreen)
            detail = models.query_one("#model-detail", Static)
            first = models.installed[0]
            await until(pilot, lambda: first in models.fits)
            text = str(detail.render())
            assert text.startswith(f"{first.name} · {first.size_text} · {first.details}"), text
            # the layers llama.cpp can put on the GPU, as the status bar ("GPU layers 0/31") and fit count them
            n_layer = read_model_info(first.path).n_layer
            assert f" · {offloadable_layers(n_layer)} {'katman' if language == 'tr' else 'layers'}" in first.details
            # the verdict first (a small terminal cut it), after how long a conversation it is worked out for
            said = (r"Bu bilgisayarda, yaklaşık [\d.]+ sözcük kadar bir konuşma için \(.*\): tamamen GPU belleğine sığar"
                    if language == "tr" else
                    r"On this PC, for a conversation of up to about [\d,]+ words \(.*\): fits entirely on the GPU")
            assert re.match(said, text.splitlines()[1]), text
            assert app.focused is models.query_one("#installed", DataTable)  # the arrows move in the list
            hint = models.query_one("#model-task")  # how to use it, in view at 80x24 (the details' end was cut)
            # the base model first: U says what it does with it, as F3's verdict says of its profile
            # (F4 said "U chats with this model" under "no chat template", "not trained for chat")
            assert not first.for_chat and str(hint.render()) == app.texts("models.use_hint_not_chat")
            # its details say so in words ("Q4_K_M · 19 katman · şablonsuz": no chat template was jargon)
            base = {"tr": "sohbet modeli değil: metni sürdürür", "en": "not a chat model: continues text"}[language]
            assert first.details.startswith(base + " · ")
            # what it reads in words before the technical facts ("gemma3 · 268M · Q4_K_M" came first),
            # and the box under the table says what those mean
            reads = {"tr": " · en çok yaklaşık ", "en": " · can read up to about "}[language]
            assert first.details.index(reads) < first.details.index(" · Q4_K_M"), first.details
            # F1 here says what the technical ones mean (Q4_K_M, 268M, layers)
            await pilot.press("f1")
            await until(pilot, lambda: type(app.screen).__name__ == "KeysDialog")
            assert app.screen.rows[-1][1:] == (app.texts("keys.dash_figures"), app.texts("models.terms"))  # type: ignore[attr-defined]
            assert "how tightly the model's file is packed" in Texts("en")("models.terms")
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is models)
            # …first, in the table's row too: at 80 columns it cut the details after "Q4_K_M", and the
            # base model looked like the chat models beside it
            assert any(line.lstrip().startswith(first.name) and base in line for line in screen_lines(app)), screen_lines(app)
            assert hint.region.bottom <= app.screen.region.bottom - 1
            await pilot.press("down")  # a chat model: U chats with it, said on one line
            await until(pilot, lambda: str(hint.render()) == app.texts("models.use_hint") and hint.region.height == 1)
            assert hint.region.bottom <= app.screen.region.bottom - 1
            await pilot.press("up")
            catalog = models.query_one("#catalog", DataTable)
            # Right shows the catalog, its list ready for Up and Down (the tabs took the arrows
            # only once reached with Shift+Tab); Left goes back, and Right again
            await pilot.press("right")
            assert models.query_one(TabbedContent).active == "tab-catalog" and app.focused is catalog
            # office staff download a model: "pull" is Ollama's and the command line's word, not F4's
            footer = {b.binding.description for b in app.active_bindings.values() if b.binding.show}
            assert ("indir" if language == "tr" else "download") in footer, footer
            words = [app.texts(key, name="m") for key in ("action.models.help", "models.pick_catalog", "models.pulling",
                                                          "models.use_pull_first", "binding.models.pull")]
            assert not [w for w in words if re.search(r"(?i)\bpull", w)], words
            await pilot.press("down")
            assert catalog.cursor_row == 1
            await pilot.press("left")
            assert models.query_one(TabbedContent).active == "tab-installed"
            assert app.focused is models.query_one("#installed", DataTable)
            await pilot.press("right")
            assert models.query_one(TabbedContent).active == "tab-catalog" and app.focused is catalog
            names = [row.name for row in models.catalog]
            catalog.move_cursor(row=names.index("qwen2.5-14b-instruct-q4_k_m"))
            # (the column's worker may have worked it out already: the box says it once highlighted)
            qwen = models.catalog[names.index("qwen2.5-14b-instruct-q4_k_m")]
            await until(pilot, lambda: qwen in models.fits
                        and str(detail.render()).startswith("qwen2.5-14b-instruct-q4_k_m · "))
            text = str(detail.render())
            size = next(row.size_text for row in models.catalog if row.name == "qwen2.5-14b-instruct-q4_k_m")
            assert re.fullmatch(r"~\d+\.\d GB", size), size  # a figure with a decimal point, in English
            shown = size.replace(".", ",") if language == "tr" else size  # ~9,0 GB in Turkish
            assert text.startswith(f"qwen2.5-14b-instruct-q4_k_m · {shown} · "), text
            assert ("Belgelerde, tablolarda" if language == "tr" else "Strong at documents") in text.splitlines()[-1]
            assert re.match(said, text.splitlines()[1]), text  # (planned as gpu-qwen25-14b, which runs it, as fit plans it)
            assert ("sözcük (bu GPU'ya ölçeklenmiş" if language == "tr" else "words a second (an estimate from published figures scaled to this GPU") in text
            set_probe(FakeGpuProbe.of(("RTX 3050", 6, 5.5)))  # too small for all of it
            models.fits.clear()
            catalog.move_cursor(row=names.index("qwen2.5-14b-instruct-q4_k_m") - 1)
            catalog.move_cursor(row=names.index("qwen2.5-14b-instruct-q4_k_m"))
            await until(pilot, lambda: qwen in models.fits)
            partial = models.fits[qwen].text
            assert ("49 katmanın " if language == "tr" else " of 49 layers on the GPU") in partial, partial
            # drawn, not under the footer: whole, or its box scrolls and the hint says the key that scrolls it
            box, task = models.query_one("#model-detail-box"), models.query_one("#model-task")
            assert box.region.bottom <= task.region.y
            assert detail.region.bottom <= task.region.y or app.texts("models.details_key") in str(task.render())
    finally:
        set_probe(None)


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_f4_at_80x24_shows_every_line_of_the_details(language: str) -> None:
    """At 80x24 F4 cut the installed model's detail before its last line ("…a guess; bench" and
    no "measures)."), and the catalog's description did not show at all: they fit now, or
    scroll, by keyboard too (Tab reaches the box, as the hint says; only a mouse scrolled it).
    The lists' last column showed "can read up to abo", "Llama 3.1 Community Lic": it is whole,
    or shortened to whole parts or words and "…"."""
    from textual.containers import VerticalScroll
    from textual.widgets import DataTable, Static

    from workstation.core.hardware import FakeGpuProbe, set_probe
    from workstation.tui.screens.models import ModelsScreen

    set_probe(FakeGpuProbe.of())  # no GPU: the CPU's verdict, the longest
    try:
        app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language=language)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.catalog))
            models = app.screen
            assert isinstance(models, ModelsScreen)
            detail, box = models.query_one("#model-detail", Static), models.query_one("#model-detail-box", VerticalScroll)
            t = app.texts
            for table, rows in (("installed", models.installed), ("catalog", models.catalog)):
                if table == "catalog":
                    await pilot.press("right")
                for n, row in enumerate(rows[:4]):
                    models.query_one(f"#{table}", DataTable).move_cursor(row=n)
                    await until(pilot, lambda row=row: row in models.fits)
                    await pilot.pause()
                    listed = models.query_one(f"#{table}", DataTable)
                    cell = str(listed.get_row_at(n)[-1])
                    full = row.details or "–"
                    shown = " ".join(" ".join(screen_lines(app)).split())
                    if len(listed.columns) == (5 if table == "catalog" else 4):  # the last column shown
                        assert cell == full or (cell.endswith("…") and full.startswith(cell.rstrip(" …") + " ")), cell
                    else:  # left out beside "On this PC": not a word of it fits; the box says it whole
                        assert " ".join(full.split()[-2:]) in shown, (full, shown)
                    assert any(row.name in line and cell in line for line in screen_lines(app)), (cell, screen_lines(app))
                    last = str(detail.render()).split()[-2:]  # the last words: "measures)." / "ölçer)."
                    assert " ".join(last) in shown, (row.name, last, shown)
                    # every row but for 4 of a long list (the header's line above them)
                    assert models.query_one(f"#{table}").region.height >= min(len(rows) + 1, 5)
                    if table == "catalog" and row.description:
                        description = row.description.get(language) or row.description["en"]
                        assert " ".join(description.split()[-2:]) in shown, (description, shown)
            # fewer columns and lines: the details go on past their box; the hint says Tab, whole
            # (one line, it was cut at the screen's edge), and the keys scroll it
            task, catalog = models.query_one("#model-task"), models.query_one("#catalog", DataTable)
            await pilot.resize_terminal(60, 18)
            for n, row in enumerate(models.catalog[:4]):  # (the first whose details go on past the box)
                catalog.move_cursor(row=n)
                await until(pilot, lambda row=row, n=n: row in models.fits and catalog.cursor_row == n)
                await pilot.pause()
                if box.max_scroll_y:
                    break
            await until(pilot, lambda: box.max_scroll_y > 0 and t("models.details_key") in str(task.render()))
            assert len(catalog.columns) == 3  # the licence, in the details, left out: not a word of it fits
            await pilot.press("tab")
            assert app.focused is box and box.scroll_y == 0
            await pilot.press("end")
            await until(pilot, lambda: box.scroll_y == box.max_scroll_y)
            assert task.region.right <= 60 and task.region.height >= 1 + (len(str(task.render())) > 58)  # wrapped
            await pilot.press("shift+tab")
            assert app.focused is catalog
    finally:
        set_probe(None)


async def test_f4_asks_before_a_download_and_the_download_outlives_leaving_f4(
        models_home: Path, tmp_path: Path) -> None:
    """F4's p began a 4.9 GB download at once: it asks first (Enter or y goes on, Esc does not).
    Esc while it downloaded left it running out of sight: F4 again showed no bar, refused p
    ("being downloaded already") and never said when it ended. The same screen comes back
    with its bar and line, and a notice says when the model is in."""
    import threading

    from conftest import TINY
    from serve_helpers import FileServer
    from textual.widgets import DataTable

    from workstation.core.catalog import catalog_entries
    from workstation.tui.messages import Progress
    from workstation.tui.screens.dialogs import ConfirmDialog
    from workstation.tui.screens.models import ModelsScreen

    www = tmp_path / "www"
    www.mkdir()
    (www / "llama.gguf").write_bytes(TINY.read_bytes())
    server = FileServer(www)
    server.gate = threading.Event()  # the body waits: the download is under way until set
    entries = catalog_entries()  # the shipped catalog, its llama served here
    llama = next(entry for entry in entries if entry["name"] == "llama-3.1-8b-instruct-q4_k_m")
    llama.update(source=f"{server.url}/llama.gguf", sha256=None)
    (models_home / "catalog.yaml").write_text(yaml.safe_dump({"models": entries}), encoding="utf-8")
    (models_home / ".left.gguf.part").write_bytes(b"\0" * 3000)  # a `models add` killed mid-copy: gone at start
    os.utime(models_home / ".left.gguf.part", (time.time() - 3600, time.time() - 3600))  # (an hour ago)
    try:
        app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language="tr")
        said = notices(app)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: any(n.startswith("left.gguf modelinin yarım kalan kopyası (3 KB)") for n in said))
            assert not (models_home / ".left.gguf.part").exists()
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.catalog))
            models = app.screen
            assert isinstance(models, ModelsScreen)
            await pilot.press("right")
            names = [row.name for row in models.catalog]
            models.query_one("#catalog", DataTable).move_cursor(row=names.index("llama-3.1-8b-instruct-q4_k_m"))
            await pilot.press("p")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
            question = app.screen.question
            assert question.startswith("llama-3.1-8b-instruct-q4_k_m indirilsin mi (~4,6 GB, lisans: Llama 3.1 "
                                       "Community License)? Diskte "), question
            assert re.search(r"Diskte [\d,]+ [GMT]B boş yer var", question), question
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is models)
            await pilot.pause(0.2)
            assert server.ranges == [] and not models.busy
            await pilot.press("p")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog) and app.focused is not None
                        and app.focused.id == "yes")  # (an Enter before it had its focus went nowhere)
            await pilot.press("enter")
            await until(pilot, lambda: server.ranges == [None])  # asked of the server, the body held back
            await pilot.press("escape")  # left while it downloads
            await until(pilot, lambda: app.screen is app.chat_screen)
            await pilot.pause()  # the status bar says so (it said nothing until the notice at the end)
            assert "llama-3.1-8b-instruct-q4_k_m indiriliyor…" in " ".join(screen_lines(app))
            models.post_message(Progress(2 << 20, 5 << 20))  # (the body is held back: as its first MB would say)
            await until(pilot, lambda: "llama-3.1-8b-instruct-q4_k_m indiriliyor %40" in app.status_text())
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, ModelsScreen))
            assert app.screen is models  # the same screen, its download with it
            await pilot.pause()
            assert models.query_one("#pull-progress").display
            assert "llama-3.1-8b-instruct-q4_k_m indiriliyor…" in " ".join(screen_lines(app))
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.chat_screen)
            server.gate.set()
            await until(pilot, lambda: any(n.startswith("llama-3.1-8b-instruct-q4_k_m indirildi ve kuruldu: F4")
                                           for n in said))
            assert (models_home / llama["file"]).read_bytes() == TINY.read_bytes()
            assert "indiriliyor" not in app.status_text()
            await pilot.press("f4")  # listed as installed, the bar gone
            await until(pilot, lambda: any(row.name == "llama-3.1-8b-instruct-q4_k_m" and row.installed
                                           for row in models.catalog))
            assert not models.query_one("#pull-progress").display and not models.busy
    finally:
        server.close()


async def test_the_status_bar_shortens_itself_to_80_columns(folder: Path, smollm2_path: Path) -> None:
    """At 80 columns the line under the chat ended "· KV" (its K/V types cut off) while a reply
    was written with Ctrl+E's own sampling: it gives up words, then the K/V types, whole."""
    from workstation.core.profiles import Sampling
    from workstation.tui.widgets.status_bar import StatusBar

    _write(folder, "a", {"model": str(smollm2_path), "kv_cache": {"k": "q8_0", "v": "f16"}})
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        for language in ("en", "tr"):
            if app.texts.lang != language:
                await pilot.press("f9")
            app.session_sampling = Sampling()
            for generating in (False, True):
                app.generating = generating
                text = app.status_text()
                assert len(text) <= 80, text
                assert re.search(r" · [\w.…-]+q4_1$", text), text  # whole, never "· KV"
            app.update_status()
            await pilot.pause()
            bar = str(app.chat_screen.query_one(StatusBar).render())
            assert bar.rstrip() == app.status_text().rstrip(), bar
            app.session_sampling = None
            app.generating = False
            # no K/V types: "KV q8_0/f16", then "context memory K half size, V full size", said nothing
            # to office staff (F3 says a profile's memory in words, F5 the loaded types)
            assert app.status_text().endswith(" · smollm2-135m-instruct-q4_1"), app.status_text()


async def test_the_office_server_down_and_a_model_not_downloaded_are_said_in_turkish(folder: Path) -> None:
    """A desk PC whose office server is down, then a profile whose model is not downloaded
    yet: the Turkish UI says both in Turkish (the command line keeps its English)."""
    from workstation.core.errors import WorkstationError
    from workstation.core.profile_lookup import load_profile
    from workstation.core.remote import RemoteEngine

    _write(folder, "desk", {"backend": "openai",
                            "remote": {"base_url": "http://127.0.0.1:9/v1", "model": "office-model"}})
    _write(folder, "later", {"model": "qwen3-8b-q4_k_m"})
    with pytest.raises(WorkstationError) as down:
        RemoteEngine(load_profile("desk"))
    assert str(down.value) == ("Cannot reach the server at http://127.0.0.1:9/v1: nothing answers there; the office "
                               "server may be stopped, or this PC cannot reach it over the network (ask whoever runs "
                               "the office server).")
    app = WorkstationApp("desk", sample_system=False, language="tr")
    async with app.run_test(size=(120, 30)) as pilot:
        def said(text: str) -> bool:
            return any(text in str(n.message) for n in app._notifications)

        await until(pilot, lambda: said("http://127.0.0.1:9/v1 adresindeki sunucuya ulaşılamıyor: "
                                        "orada yanıt veren yok; ofis sunucusu kapalı olabilir ya da bu bilgisayar ağ "
                                        "üzerinden ona ulaşamıyor olabilir (ofis sunucusunu yöneten kişiye sorun)."))
        app.switch_profile(load_profile("later"))
        # in the app's own keys (a command line's './run.sh models pull …' was no help there)
        await until(pilot, lambda: said("qwen3-8b-q4_k_m modeli henüz indirilmedi (yaklaşık 4,7 GB); F4, ardından p "
                                        "onu indirir."))


async def test_a_document_that_cannot_be_read_is_said_in_turkish(folder: Path, tmp_path: Path) -> None:
    """Ctrl+O with a file that is not a document: the reader runs in a child process, and its
    sentence still comes back in the UI's language. A path typed at once after Ctrl+O goes into
    the dialog's path line (it went into the message box, and Enter opened the start folder); the
    question typed on while the file picked is read goes into the message box (it went into the
    path line: "There is no '…/docs/Who has…'", and was lost when the dialog closed)."""
    from textual.command import CommandPalette
    from textual.widgets import Input

    from workstation.tui.screens.file_picker import FilePicker, FileTree

    photo = tmp_path / "fotoğraf.txt"
    photo.write_bytes(bytes(range(256)) * 10)
    leave = tmp_path / "docs" / "izin.txt"
    leave.parent.mkdir()
    leave.write_text("Ayşe 14 gün, Mehmet 9 gün izin aldı.\n", encoding="utf-8")
    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = app.chat_screen.query_one("#prompt", Input)
        app.chat_screen.set_input("Kim en çok")
        await press_at_once(pilot, "ctrl+o", *str(photo))  # typed on before the dialog was drawn: for the dialog
        await until(pilot, lambda: isinstance(app.screen, FilePicker) and app.screen.query_one(Input).value == str(photo))
        assert prompt.value == "Kim en çok"
        await pilot.press("enter")  # said in the dialog, which stays for another pick
        problem = app.screen.query_one("#picker-problem")
        await until(pilot, lambda: str(problem.render()) == "'fotoğraf.txt' ikili bir dosya, metin değil.")
        assert isinstance(app.screen, FilePicker) and app.pending_document is None
        app.screen.query_one(Input).value = "yok.docx"  # a name alone: in the folder shown
        app.screen.query_one(Input).focus()
        await pilot.press("enter")  # said in the dialog, in Turkish
        problem = app.screen.query_one("#picker-problem")
        await until(pilot, lambda: problem.display)
        shown = app.screen.folder  # type: ignore[attr-defined]
        assert str(problem.render()) == f"'{shown / 'yok.docx'}' bulunamadı. Başka bir yol yazın ya da listeden seçin."
        line = app.screen.query_one(Input)
        line.value = ""
        # typed faster than the app handles it (a busy PC): the list follows the folder typed,
        # and the file's name typed after its slash stays (putting the folder back erased it)
        await press_at_once(pilot, *str(leave))
        await until(pilot, lambda: Path(app.screen.query_one(FileTree).path) == leave.parent)
        assert line.value == str(leave)
        await pilot.press("enter", *" izin aldı?")  # the question goes on while the file is read
        await until(pilot, lambda: app.pending_document is not None)
        assert app.pending_document == (leave, "Ayşe 14 gün, Mehmet 9 gün izin aldı.")
        assert prompt.value == "Kim en çok izin aldı?"
        # a file read while a dialog opened over the picker (Ctrl+P's palette, Ctrl+Q's question):
        # Textual's dismiss pops the top screen, and the palette vanished while the picker stayed,
        # its file taken. The picker closes once the palette is closed, with its file
        read_on, picked = threading.Event(), []
        app.pick_file("?", "document", lambda path, read: picked.append(read), load=lambda path: read_on.wait(30))
        await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(Input)))
        picker = app.screen
        picker.query_one(Input).value = str(leave)
        picker.query_one(Input).focus()
        await pilot.press("enter", "ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        palette = app.screen
        read_on.set()
        await until(pilot, lambda: picker._reading is None)  # type: ignore[attr-defined]
        await pilot.pause()
        assert app.screen is palette and app.screen_stack[-2] is picker and not picked
        await pilot.press("escape")
        await until(pilot, lambda: picked == [True] and app.screen is app.chat_screen)


async def test_a_desk_pc_finds_its_server_again(folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """The app started while the office server was down: sending once the server is back used
    to say "No model is loaded; press F3". It tries the server again and sends the message once
    the server answers (it stayed in the box, waiting for a second Enter that nothing asked
    for). A server that goes away later shows as unreachable, not ready;
    a reply it was writing is kept, marked as cut off by an error (it read "stopped", as Esc)."""

    from serve_helpers import free_port, serve, write_profile
    from tui_helpers import type_message

    from workstation.core.remote import RemoteEngine
    from workstation.tui.widgets.message_view import MessageView, metrics_line

    port = free_port()
    _write(folder, "desk", {"backend": "openai", "remote": {"base_url": f"http://127.0.0.1:{port}/v1"},
                            "sampling": {"temperature": 0.0, "max_tokens": 500}})
    app = WorkstationApp("desk", sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 30)) as pilot:
        def said(text: str) -> bool:
            return any(text in str(n.message) for n in app._notifications)

        await until(pilot, lambda: app.loading is None and said("Cannot reach the server"))
        # not "not loaded" (a server's model is not ours to load), nor "? on …" with no remote.model
        assert app.engine is None and f" not connected │ desk · the server's model on 127.0.0.1:{port}" in app.status_text()
        served = tmp_path / "served" / smollm2_path.name  # (a copy: its time of change is moved below)
        served.parent.mkdir()
        shutil.copyfile(smollm2_path, served)
        with serve(write_profile(tmp_path, served), "--port", str(port)) as server:
            await type_message(pilot, "Say hi")
            await until(pilot, lambda: said(f"Connecting to the server at http://127.0.0.1:{port}/v1 again; "
                                            "your message is sent once it answers"))
            await until(pilot, lambda: app.generating or app.last_metrics is not None)  # begun (or a fast one over)
            assert app.chat_screen.input_text() == ""
            await until(pilot, lambda: not app.generating)
            replies = list(app.chat_screen.query(MessageView))
            assert replies[-1].content.strip() and " ready │ desk" in app.status_text()
            # the server's model by its own name (it named the server's profile, serve-test, as the model)
            from workstation.core.installed_models import installed_name
            assert f"desk · {installed_name(smollm2_path)} on 127.0.0.1:{port}" in app.status_text(), app.status_text()
            # kept with the reply, so that F7's file names the model that answered
            assert (replies[-1].metrics or {}).get("served_model") == installed_name(smollm2_path)
            # its model file changed on disk: the server refuses every request (503) until restarted, and
            # the status said "ready" all along: it says the server is not answering, and why
            stamp = served.stat()
            os.utime(served, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
            await type_message(pilot, "Still there?")
            await until(pilot, lambda: not app.generating and app.chat_screen.input_text() == "Still there?")
            assert (" the server is not answering: its model file changed; whoever runs it must restart it │ desk"
                    in app.status_text()), app.status_text()
            # the other refusals of every request for now are said as plainly (each said "ready"), and a
            # reply below clears them as it clears this one (the refusal itself is read as above)
            for phrase, state in {"remote.stopping": "the server is stopping or restarting",
                                  "remote.cut_by_stopping": "the server is stopping or restarting",
                                  "remote.loading": "the server is starting (loading its model)",
                                  "remote.key_revoked": "the server refused your key: it was revoked",
                                  "remote.day_used": "your key has used its tokens for today",
                                  # a key deleted, refused, or not let use this profile or from here: also "ready"
                                  "remote.key_unknown": "the server refuses your key",
                                  "remote.key_refused": "the server refuses your key",
                                  "remote.key_not_here": "the server refuses your key",
                                  "remote.key_for_others": "the server refuses your key"}.items():
                app.not_answering = phrase
                assert f" {state}; " in app.status_text(), (phrase, app.status_text())
            app.not_answering = "remote.model_changed"
            os.utime(served, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # its file as it was: it answers again
            before = app.last_metrics
            await pilot.press("enter")
            await until(pilot, lambda: app.last_metrics is not before and not app.generating)
            assert " ready │ desk" in app.status_text()
            # loaded while the server had larger limits (restarted since with smaller ones): its 400 is fitted
            # to its limits of now, and the room left under the box still said the old context's
            remote, now, room = app.engine, app.engine_info, app.context_fill_text()
            assert isinstance(remote, RemoteEngine) and now is not None and room
            remote.meta.update(n_ctx=100_000, max_prompt_tokens=100_000)
            app.engine_info = remote.info()
            app.chat_screen.set_input("The quarterly report lists desks, chairs and lamps for every office floor. " * 80)
            await pilot.press("enter")
            await until(pilot, lambda: not app.generating and app.chat_screen.input_text().startswith("The quarterly"))
            assert app.engine_info is not None and app.engine_info.n_ctx == now.n_ctx != 100_000
            assert app.engine_info.max_prompt_tokens == now.max_prompt_tokens != 100_000
            assert app.context_fill_text() == room, (room, app.context_fill_text())
            app.live_tokens = 0
            app.chat_screen.set_input("Write a long story about a dragon.")
            await pilot.press("enter")
            await until(pilot, lambda: app.live_tokens >= 3)
            # the server is stopped (SIGTERM) in the middle of the reply: said while the reply goes on
            # for the server's grace (it said "generating" to the cut)
            server.proc.send_signal(signal.SIGTERM)
            await until(pilot, lambda: " the server is stopping: this reply may be cut off │ desk" in app.status_text())
            server.proc.kill()  # the server goes away in the middle of the reply
            await until(pilot, lambda: not app.generating and app.unreachable)
        assert " server unreachable (the next message tries again) │ desk" in app.status_text()
        cut = list(app.chat_screen.query(MessageView))[-1]
        assert cut.content.strip() and cut.metrics is not None and cut.metrics["stop_reason"] == "failed"
        # why, kept with the reply (it said only "cut off by an error" once the notice faded)
        why = (f"Lost the connection to http://127.0.0.1:{port}/v1: the server closed the connection in the middle "
               "of the reply (it stopped or restarted)")
        assert metrics_line(cut.metrics, app.texts) == f"cut off: {why}", cut.metrics
        kept = {"stop_reason": "failed", "stop_said": f"{why}."}
        assert metrics_line(kept, Texts("tr")).startswith("yarıda kesildi: Lost the connection")
        assert app.store.messages(app.conversation_id)[-1].metrics == kept, [(m.id, m.role, m.content[:30], m.metrics) for m in app.store.messages(app.conversation_id)]
        # the next message, the server still gone: it stayed in the chat unanswered and the box emptied
        await type_message(pilot, "Are you there?")
        await until(pilot, lambda: not app.generating and app.chat_screen.input_text() == "Are you there?")
        assert list(app.chat_screen.query(MessageView))[-1] is cut
        assert app.store.messages(app.conversation_id)[-1].metrics == kept
        # refused a connection (not lost in the middle of a reply): still said unreachable, not "ready"
        assert " server unreachable (the next message tries again) │ desk" in app.status_text(), app.status_text()
        # F3 on the same profile, the server still gone: its one sentence once (the load and the
        # old profile's load again failed alike, and the notice said the sentence twice)
        from workstation.core.profile_lookup import load_profile
        app._notifications.clear()
        app.switch_profile(load_profile("desk"))
        await until(pilot, lambda: app.loading is None and said("Cannot reach the server"))
        failed = [str(n.message) for n in app._notifications if "Cannot reach the server" in str(n.message)]
        assert len(failed) == 1 and failed[0].count("Cannot reach the server") == 1, failed


async def test_a_message_sent_while_the_server_is_down_goes_once_it_answers(
        folder: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Enter with the office server down said "your message is sent once it answers", then
    "Cannot reach the server", and the message sat in the box for good once the server was
    back (only another Enter sent it); F6 said "No model is loaded; press F3", then "press Enter on
    a message to try again". The server is tried again every few seconds until it answers, the
    failures said once; F6's Ctrl+R tries it too."""

    from serve_helpers import free_port, serve, write_profile
    from tui_helpers import type_message

    from workstation.tui import turn as turn_module
    from workstation.tui.screens.summarize import SummarizeScreen
    from workstation.tui.widgets.message_view import MessageView

    monkeypatch.setattr(turn_module, "SERVER_RETRY_S", 0.5)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    _write(folder, "desk", {"backend": "openai", "remote": {"base_url": url},
                            "sampling": {"temperature": 0.0, "max_tokens": 8}})
    app = WorkstationApp("desk", sample_system=False, language="en", store_path=tmp_path / "c.db")
    said = notices(app)
    async with app.run_test(size=(120, 30)) as pilot:
        def count(text: str) -> int:
            return sum(text in message for message in said)

        await until(pilot, lambda: app.loading is None and count("Cannot reach the server") == 1)
        await pilot.press("f6")  # not "No model is loaded; press F3": the profile is the server's
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        app.screen.query_one("#summarize-path").value = str(tmp_path / "notes.txt")
        await pilot.press("ctrl+r")  # the server tried again from F6 too ("press Enter on a message", there)
        await until(pilot, lambda: count(f"Connecting to the server at {url} again; the summary starts once it answers") == 1
                    and count("Cannot reach the server") == 2 and app.loading is None)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        await type_message(pilot, "Say hi")
        await until(pilot, lambda: count("Your message stays in the box: the server is tried again every 0 s") == 1
                    or count("Your message stays in the box: the server is tried again every 1 s") == 1)
        failures = count("Cannot reach the server")
        await pilot.pause(2.0)  # a few tries, the server still down: said once
        assert count("Cannot reach the server") == failures == 3 and app.chat_screen.input_text() == "Say hi"
        with serve(write_profile(tmp_path, smollm2_path), "--port", str(port)):
            await until(pilot, lambda: app.generating or app.last_metrics is not None)  # no second Enter
            await until(pilot, lambda: not app.generating)
            assert app.chat_screen.input_text() == "" and list(app.chat_screen.query(MessageView))[-1].content.strip()
        assert count("Cannot reach the server") == failures


async def test_a_reply_the_server_cut_off_by_stopping_names_the_key_that_asks_again(
        folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """The office server stopped in the middle of a reply: "cut off: … send it again once the
    server is back", the box empty and nothing naming Alt+R (Ask again). The sentence names it,
    under the reply, once: it was said again in a Problem box over the reply it was under. With
    F5 open the reply is not in sight: the Problem box says it there."""
    from serve_helpers import free_port, serve, write_profile
    from tui_helpers import type_message

    from workstation.tui.screens.dashboard import DashboardScreen
    from workstation.tui.widgets.message_view import MessageView, metrics_line

    why = "The office server is stopping or restarting, so the reply was cut off; once it is back, Alt+R asks again."
    port = free_port()
    served = write_profile(tmp_path, smollm2_path, sampling={"temperature": 0.0, "max_tokens": 400})
    _write(folder, "desk", {"backend": "openai", "remote": {"base_url": f"http://127.0.0.1:{port}/v1"},
                            "sampling": {"temperature": 0.0, "max_tokens": 400}})
    app = WorkstationApp("desk", sample_system=False, language="en", store_path=tmp_path / "c.db")
    said = notices(app)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.loading is None)  # (no server yet: the message is sent once it answers)
        with serve(served, "--port", str(port), "--shutdown-grace", "0") as server:
            await type_message(pilot, "Write a long story about a dragon.")
            await until(pilot, lambda: app.live_tokens >= 3)
            server.proc.send_signal(signal.SIGTERM)
            cut = list(app.chat_screen.query(MessageView))[-1]
            await until(pilot, lambda: not app.generating and cut.metrics is not None)
        # said once: "cut off: The office server is stopping …, so the reply was cut off" said the cut twice
        assert cut.metrics is not None and metrics_line(cut.metrics, app.texts) == why[:-1], cut.metrics
        assert cut.content.strip()  # (the reply is kept, its reason under it)
        ended: list[bool] = []
        app.call_later(lambda: ended.append(True))  # (after the failure's handler has done all it does)
        await until(pilot, lambda: bool(ended))
        assert not [n for n in said if "cut off" in n], said
        assert "{again}" in Texts("tr").get("chat.cut_by_stopping")
        # again with F5 open as the server stops: no reply in sight to put it under, so the Problem box
        app.live_tokens = 0
        with serve(served, "--port", str(port), "--shutdown-grace", "0") as server:
            await type_message(pilot, "Write another long story about a dragon.")
            await until(pilot, lambda: app.engine is not None and app.live_tokens >= 3 and app.generating)
            await pilot.press("f5")
            await until(pilot, lambda: isinstance(app.screen, DashboardScreen))
            server.proc.send_signal(signal.SIGTERM)
            await until(pilot, lambda: any(why in n for n in said))
        assert isinstance(app.screen, DashboardScreen)


async def test_a_long_status_message_is_cut_before_the_profiles_name(
        folder: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 110 columns a desk PC whose key's day ran out showed "… │ Office server (OpenAI-compa…
    · the se…": the profile's name and the server cut, the long message whole. The message is
    cut now, and the name stays whole."""
    from serve_helpers import serve, write_profile
    from tui_helpers import type_message

    from workstation.core.keys import DB_NAME, KeyRing

    server_data = _server_key(tmp_path, monkeypatch, "bob", 100_000)
    name = "Office server (OpenAI-compatible)"
    with serve(write_profile(tmp_path, smollm2_path), data=server_data) as server:
        _write(folder, "desk", {"name": name, "backend": "openai",
                                "remote": {"base_url": server.base_url, "api_key_env": "WS_DESK_KEY"},
                                "sampling": {"temperature": 0.0, "max_tokens": 8}})
        app = WorkstationApp("desk", sample_system=False, language="en", store_path=tmp_path / "c.db")
        async with app.run_test(size=(110, 32)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            assert app.engine is not None
            question = [{"role": "user", "content": "What is on the agenda today?"}]
            admin = KeyRing(server_data / DB_NAME)  # the question and a few words of its reply
            admin.change("bob", tokens_per_day=app.engine.count_prompt(question) + 4, max_parallel=None, profiles=())
            admin.close()
            await type_message(pilot, "What is on the agenda today?")
            await until(pilot, lambda: app.last_metrics is not None and not app.generating)
            await until(pilot, lambda: "your key has used its" in app.status_text())
            line = app.status_text()
            assert len(line) <= 110 and line.endswith(f" {app.glyphs.between} {name}"), line
            assert line.startswith(" your key has used its tokens for today; it can answer again at "), line
            await pilot.resize_terminal(80, 32)  # narrower: the message is cut, the name still whole
            await until(pilot, lambda: app.size.width == 80)
            line = app.status_text()
            assert len(line) <= 80 and line.endswith(f"… {app.glyphs.between} {name}"), line
            assert line.startswith(" your key has used its tokens"), line


async def test_a_message_the_server_refuses_comes_back_into_the_box(
        folder: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A message the office server refused (a key whose day's tokens are used up, revoked)
    stayed in the chat with no reply and no word, its reason in a notice that faded: it comes
    back into the box, to send again later, as a message too long for the context does."""
    from serve_helpers import serve, write_profile
    from tui_helpers import type_message

    from workstation.core.keys import DB_NAME, KeyRing
    from workstation.tui import status_line
    from workstation.tui.widgets.message_view import MessageView, metrics_line

    monkeypatch.setattr(status_line, "DAY_RECHECK_S", 0.5)
    server_data = _server_key(tmp_path, monkeypatch, "bob", 5)  # less than any question
    with serve(write_profile(tmp_path, smollm2_path), data=server_data) as server:
        _write(folder, "desk", {"backend": "openai", "remote": {"base_url": server.base_url, "api_key_env": "WS_DESK_KEY"},
                                "sampling": {"temperature": 0.0, "max_tokens": 8}})
        app = WorkstationApp("desk", sample_system=False, language="en", store_path=tmp_path / "c.db")
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            # (it said "choose a larger model with F4": F4 holds this PC's models, not the server's)
            def welcome() -> str:
                return str(app.chat_screen.query_one("#welcome").render())

            await until(pilot, lambda: "the office server's model, is a very small model (135M parameters)" in welcome()
                        and "ask whoever runs the server for a larger one" in welcome())
            await type_message(pilot, "What is on the agenda today?")
            # (more than its whole day: said so, as waiting would not help)
            await until(pilot, lambda: any("more than your key's whole day of 5, so waiting will not help" in str(n.message)
                                           for n in app._notifications))
            await until(pilot, lambda: app.chat_screen.input_text() == "What is on the agenda today?")
            assert not app.generating and not list(app.chat_screen.query(MessageView))
            assert app.conversation_id is None or not app.store.messages(app.conversation_id)
            # its day widened to the question and a few words of its reply (an admin's `keys change`): the reply
            # stops where the day's tokens end, and the status said "ready" though the next message is refused
            question = [{"role": "user", "content": "What is on the agenda today?"}]
            assert app.engine is not None
            admin = KeyRing(server_data / DB_NAME)
            admin.change("bob", tokens_per_day=app.engine.count_prompt(question) + 4, max_parallel=None, profiles=())
            admin.close()
            await pilot.press("enter")
            await until(pilot, lambda: app.last_metrics is not None and not app.generating)
            assert app.last_metrics is not None and app.last_metrics.stop_reason == "quota", app.last_metrics
            assert " your key has used its tokens for today; " in app.status_text(), app.status_text()
            # the cut reply says it was cut off, and why, and when it answers again as the status line says it (the
            # figures line ended "· your key's tokens for today ran out", no time: the status line said "at 00:00")
            from workstation.core.quota import next_day_start

            resets = time.strftime("%H:%M", time.localtime(next_day_start(time.time())))
            day = f"your key has used its tokens for today; it can answer again at {resets}"
            assert day in app.status_text(), app.status_text()
            cut = list(app.chat_screen.query(MessageView))[-1]
            assert metrics_line(cut.metrics or {}, app.texts).endswith(f" · cut off: {day}"), cut.metrics
            assert metrics_line(cut.metrics or {}, Texts("tr")).endswith(
                f" · yarıda kesildi: anahtarınız bugünkü sözcük parçası (token) hakkını kullandı; saat {resets} itibarıyla "
                "yeniden yanıt verebilir"), cut.metrics
            # asked again while still used up: the words stay (the real usage_today, its calls counted)
            asked: list[int] = []
            real = app.engine.usage_today

            def counted() -> object:
                asked.append(1)
                return real()

            monkeypatch.setattr(app.engine, "usage_today", counted)
            await until(pilot, lambda: len(asked) >= 2 or " your key has used its tokens for today; " not in app.status_text())
            await pilot.pause()
            assert " your key has used its tokens for today; " in app.status_text(), app.status_text()
            # the admin raises the limit (keys set bob --tokens-per-day 100000): the status bar asks the server
            # again by itself and clears (it said "used up" until the next message was sent)
            admin = KeyRing(server_data / DB_NAME)
            admin.change("bob", tokens_per_day=100_000, max_parallel=None, profiles=())
            admin.close()
            await until(pilot, lambda: " ready │ desk" in app.status_text())
            # F9: the server's model too small for Turkish; it said "a larger model (F4)", this PC's
            await pilot.press("f9")
            await until(pilot, lambda: any("sunucuyu yöneten kişiden daha büyük bir model isteyin" in str(n.message)
                                           for n in app._notifications))
            assert not any("(F4)" in str(n.message) for n in app._notifications)


async def test_f3_says_whether_a_desk_profiles_server_answers(folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """F3 said a desk PC's profile "runs on the server at …" whether the server was there or
    not; `profiles check` asked it. F3 now asks too, as it works out the local profiles' fit."""

    from serve_helpers import free_port, serve, write_profile

    from workstation.tui.screens.profile_menu import ProfileMenu

    port = free_port()
    _write(folder, "local", {"model": str(smollm2_path)})
    _write(folder, "desk", {"backend": "openai", "remote": {"base_url": f"http://127.0.0.1:{port}/v1"}})
    _write(folder, "wrong", {"backend": "openai", "remote": {"base_url": f"http://127.0.0.1:{port}/v1",
                                                             "model": "no-such-model"}})
    app = WorkstationApp("local", start_engine=False, sample_system=False, language="en")

    async def verdicts() -> dict[str, str]:
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu)
                    and len(app.screen.verdicts) == sum(1 for e in app.screen.entries if hasattr(e, "key")))
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        found = {e.key: menu.verdicts[i] or "" for i, e in enumerate(menu.entries) if hasattr(e, "key")}
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        return found

    async with app.run_test(size=(120, 35)) as pilot:
        down = await verdicts()
        assert down["desk"].startswith(f"Cannot reach the server at http://127.0.0.1:{port}/v1"), down
        assert down["local"].startswith("runs on the CPU: needs"), down  # the local one is planned as before
        with serve(write_profile(tmp_path, smollm2_path), "--port", str(port)):
            up = await verdicts()
        # its profile as F3 lists it there ("serve-test" here), as `profiles check` says it
        assert up["desk"] == "The server answers now (its model: serve-test).", up
        served = "serve-test"
        assert up["wrong"] == (f"The server answers, but serves {served}, not no-such-model: set remote.model "
                               "to one of those, or leave it out for the first."), up


async def test_f3_says_what_a_desk_profiles_server_reads_at_once(folder: Path, tmp_path: Path,
                                                                 smollm2_path: Path) -> None:
    """A local profile's entry says "a conversation of about 770 words; …"; a desk PC's said only
    its server's address. It says what the server's model reads at once too (its ``/models`` meta's
    context), by the same words (``context_words``: the language's figure, no model file here)."""
    from serve_helpers import free_port, serve, write_profile

    from workstation.tui.screens.profile_menu import ProfileMenu

    port = free_port()
    _write(folder, "local", {"model": str(smollm2_path), "context": 1024})
    _write(folder, "desk", {"backend": "openai", "remote": {"base_url": f"http://127.0.0.1:{port}/v1"}})
    app = WorkstationApp("local", start_engine=False, sample_system=False, language="en")
    with serve(write_profile(tmp_path, smollm2_path, context=1024), "--port", str(port)):
        async with app.run_test(size=(120, 35)) as pilot:
            await pilot.press("f3")
            await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and len(app.screen.verdicts) == 2)
            menu = app.screen
            assert isinstance(menu, ProfileMenu)
            said = {e.key: str(menu._prompt(i, e)) for i, e in enumerate(menu.entries) if hasattr(e, "key")}
    # a conversation's and a message's (1,024 tokens less those kept for the reply), as a local one's
    assert "a conversation of about 770 words; a message up to about 760" in said["local"], said
    assert "\n  the server's model: a conversation of about 770 words; a message up to about 760\n" in said["desk"], said


async def test_f3_says_a_desk_profiles_server_model_by_its_own_figure_in_turkish(
        folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """A desk PC said the server's SmolLM2 reads about 1,600 Turkish words at once (the language's
    general figure: no model file here), where a profile of the same model here said 1,100 (its
    tokenizer's own): the server says its model's figures (``/models``), and F3 says them."""
    from serve_helpers import free_port, serve, write_profile

    from workstation.core.language_words import model_figures
    from workstation.core.locales import locale_texts
    from workstation.core.phrases import context_basis, context_words
    from workstation.tui.screens.profile_menu import ProfileMenu

    turkish = locale_texts("tr").get
    own = context_words(1024, context_basis(turkish, model_figures(smollm2_path, turkish)), turkish)
    general = context_words(1024, context_basis(turkish), turkish)
    assert own != general
    port = free_port()
    _write(folder, "local", {"model": str(smollm2_path), "context": 1024})
    _write(folder, "desk", {"backend": "openai", "remote": {"base_url": f"http://127.0.0.1:{port}/v1"}})
    app = WorkstationApp("local", start_engine=False, sample_system=False, language="tr")
    with serve(write_profile(tmp_path, smollm2_path, context=1024), "--port", str(port)):
        async with app.run_test(size=(120, 35)) as pilot:
            await pilot.press("f3")
            await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and len(app.screen.verdicts) == 2)
            menu = app.screen
            assert isinstance(menu, ProfileMenu)
            said = {e.key: str(menu._prompt(i, e)) for i, e in enumerate(menu.entries) if hasattr(e, "key")}
    assert own in said["local"] and own in said["desk"] and general not in said["desk"], (own, said)


@pytest.mark.parametrize(("lang", "said"), [("en", "Note: context is 16,384 tokens but "),
                                             ("tr", "Not: bağlam 16.384 token, ama ")])
async def test_f3_says_what_loading_a_profile_would_note(folder: Path, smollm2_path: Path, lang: str,
                                                         said: str) -> None:
    """A context past the model's trained length: F3 said only that the profile fits, and the
    note came once it was loaded."""
    from workstation.tui.screens.profile_menu import ProfileMenu

    _write(folder, "long", {"model": str(smollm2_path), "context": 16384})
    app = WorkstationApp("long", start_engine=False, sample_system=False, language=lang)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and 0 in app.screen.verdicts)
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        assert said in str(menu._prompt(0, menu.entries[0])), menu.verdicts


async def test_f3_names_and_describes_each_profile_in_the_uis_language(
        folder: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F3 showed every profile's English name to a Turkish user, and no one's description:
    ``name_tr``/``description_tr`` (as the catalog's ``description_tr``) are shown in Turkish,
    the English ones otherwise, and the loaded notice names the profile the same way. One from
    the office's folder (WORKSTATION_PROFILES) is said so, as `profiles list` says it."""
    from workstation.tui.screens.profile_menu import ProfileMenu

    _write(folder, "office", {"model": str(smollm2_path), "name": "Office CPU", "name_tr": "Ofis CPU'su",
                              "description": "The default.\n  A tiny model.", "description_tr": "Varsayılan."})
    shared = tmp_path / "shared-profiles"
    shared.mkdir()
    monkeypatch.setenv("WORKSTATION_PROFILES", str(shared))
    _write(shared, "plain", {"model": str(smollm2_path), "name": "Plain"})
    async def look(lang: str, name: str, about: str, decimal: str, office: str, loads: bool) -> None:
        app = WorkstationApp("office", sample_system=False, language=lang, start_engine=loads)
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: (app.engine is not None or not loads) and app.loading is None)
            await pilot.press("f3")
            await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
            menu = app.screen
            assert isinstance(menu, ProfileMenu)
            await until(pilot, lambda: 0 in menu.verdicts)  # (its fit checked: with no model loaded it is read)
            first, second = (str(menu._prompt(i, e)) for i, e in enumerate(menu.entries))
            assert first.startswith(f"● {name}  (office)\n  {about}\n  "), first
            # the verdict's sizes too, each with its unit as human_bytes says it (the model's need in
            # MB: it said "needs 0.3 GB" where F4 says 282 MB)
            sizes = re.findall(r"\d[\d.,]* [KMG]B", first.splitlines()[-1])
            assert any(size.endswith(" MB") for size in sizes) and all(
                re.fullmatch(rf"\d+(?:{re.escape(decimal)}\d)? [KMG]B", size) for size in sizes), first
            assert second.startswith(f"  Plain  (plain · {office})\n  ") and "\n  \n" not in second  # none: no empty line
            if not loads:  # (the profile named by the status line as F3 names it; loading is the same in either language)
                await pilot.press("escape")
                await until(pilot, lambda: f"{app.glyphs.between} {name} · " in app.status_text())
                return
            await pilot.press("down", "enter")
            await until(pilot, lambda: app.profile.key == "plain" and app.loading is None)
            await pilot.press("f3")
            await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
            await pilot.press("up", "enter")
            await until(pilot, lambda: app.profile.key == "office" and app.loading is None)
            # loaded: said by the status line under the chat (by the name F3 lists), no "Loaded: {name}"
            # notice over its lines
            await until(pilot, lambda: f"{app.glyphs.between} {name} · " in app.status_text())
            assert not any(name in str(n.message) for n in app._notifications)

    await look("en", "Office CPU", "The default. A tiny model.", ".", "the office's", loads=True)
    await look("tr", "Ofis CPU'su", "Varsayılan.", ",", "ofisin", loads=False)  # (read, no model loaded)


async def test_f9_on_f4_relabels_the_list() -> None:
    """F9 while F4 shows: the tabs, the columns and the rows follow the new language (they stayed
    in English, the Turkish details under English columns)."""
    from textual.widgets import DataTable, TabbedContent

    from workstation.tui.screens.models import ModelsScreen

    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(190, 24)) as pilot:  # (the details whole, beside "On this PC": narrower, they are shortened)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.installed))
        models = app.screen
        table = models.query_one("#installed", DataTable)
        labels = lambda: [str(c.label) for c in table.columns.values()]  # noqa: E731
        assert labels() == ["Name", "Size", "On this PC", "Details"] and " layers" in str(table.get_row_at(0)[3])
        await pilot.press("f9")
        await until(pilot, lambda: labels() == ["Ad", "Boyut", "Bu bilgisayarda", "Ayrıntılar"] and table.row_count > 0
                    and " katman" in str(table.get_row_at(0)[3]))
        assert str(models.query_one(TabbedContent).get_tab("tab-installed").label) == "Kurulu"
        assert table.row_count == len(models.installed)


async def test_a_long_conversation_title_ends_with_an_ellipsis_and_gets_room_on_a_wide_screen() -> None:
    """The sidebar cut a long title mid-word without a sign, and stayed 22 columns wide at 120."""
    from workstation.core.store import ConversationStore
    from workstation.tui.widgets.conversation_list import ConversationItem

    store = ConversationStore()
    conv = store.new("When is the move and who packs the boxes of the finance team")
    store.add_message(conv.id, "user", "Hello")
    shown = {}
    for width in (80, 120):
        app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language="en")
        async with app.run_test(size=(width, 30)) as pilot:
            await until(pilot, lambda app=app: bool(app.chat_screen.query(ConversationItem)))
            await pilot.pause()
            title = app.chat_screen.query(ConversationItem).first().query("Label").first()
            # (on two lines where it is long: the sign at the end of the second)
            lines = [title.render_line(y).text.strip() for y in range(title.size.height)]
            shown[width] = " ".join(line for line in lines if line)
    assert shown[80].endswith("…") and shown[120].endswith("…"), shown
    assert "When is the move and who packs the boxes of the finance team".startswith(shown[80][:-1]), shown
    assert len(shown[120]) > len(shown[80]), shown


@pytest.mark.parametrize("pasted", ["'{path}'", '"{path}"', "file://{url}", "  {path}\n", "{shell}", "{escaped}"])
async def test_a_path_pasted_from_a_file_manager_opens_the_document(folder: Path, tmp_path: Path, pasted: str) -> None:
    """A path copied from a file manager arrives in quotes when it has spaces, or as a file://
    address; both were read as a name in the folder shown ("There is no '/tmp/…/'/tmp/…''").
    A terminal's drag and drop writes it as a shell would: quoted, or with backslashes."""
    import re
    import shlex
    from urllib.parse import quote

    from textual.widgets import Input

    from workstation.tui.screens.file_picker import FilePicker

    doc = tmp_path / "Q3 sales report (John's copy) ğ.txt"
    doc.write_text("Sales rose by a tenth in the third quarter.", encoding="utf-8")
    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(Input)))
        app.screen.query_one(Input).value = pasted.format(
            path=doc, url=quote(str(doc)), shell=shlex.quote(str(doc)), escaped=re.sub(r"([ ()'])", r"\\\1", str(doc)))
        app.screen.query_one(Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.pending_document is not None)
        assert app.pending_document == (doc, "Sales rose by a tenth in the third quarter.")


def test_a_name_with_a_backslash_that_is_there_is_taken_as_typed(tmp_path: Path) -> None:
    """Shell quoting is undone only for a path not there as typed: a\\b.txt was read as ab.txt."""
    from workstation.core.paths import typed_path

    odd = tmp_path / "a\\b.txt"
    odd.write_text("x", encoding="utf-8")
    assert typed_path(str(odd)) == odd
    assert typed_path(str(tmp_path / "Q3\\ report.pdf")) == tmp_path / "Q3 report.pdf"  # a new file: as a shell means it


async def _load_settings_of(pilot, app: WorkstationApp, key: str) -> None:  # noqa: ANN001
    """F3, the profile ``key`` highlighted, E: its load settings, their first verdict in."""
    from textual.widgets import OptionList

    from workstation.tui.screens.load_settings import LoadSettings
    from workstation.tui.screens.profile_menu import ProfileMenu

    if not isinstance(app.screen, ProfileMenu):
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
    menu = app.screen
    assert isinstance(menu, ProfileMenu)
    menu.query_one(OptionList).highlighted = next(i for i, e in enumerate(menu.entries) if getattr(e, "key", "") == key)
    await pilot.press("e")
    await until(pilot, lambda: isinstance(app.screen, LoadSettings) and app.screen._asked > 0
                and str(app.screen.query_one("#load-verdict").content) != "checking fit…")


def _verdict(app: WorkstationApp) -> str:
    return str(app.screen.query_one("#load-verdict").content)


async def test_f3_e_keeps_its_keys_in_sight_at_80x24(folder: Path, smollm2_path: Path) -> None:
    """At 80x24 F3's E opened scrolled to its verdict, its key line ("Tab: sonraki · … · Ctrl+S:
    kaydet · Esc: vazgeç") above the dialog's top: it stays in sight, at the dialog's foot, as it scrolls."""
    from workstation.core.paths import user_profiles_dir

    own = user_profiles_dir()
    own.mkdir(parents=True, exist_ok=True)
    _write(own, "running", {"model": str(smollm2_path)})
    _write(own, "long-documents", {"model": str(smollm2_path), "name": "Long documents (my copy)",
                                   "name_tr": "Uzun belgeler (kopyam)", "context": 8192})
    app = WorkstationApp("running", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(80, 24)) as pilot:
        await _load_settings_of(pilot, app, "long-documents")
        from workstation.tui.screens.load_settings import SettingsVerdict

        # a verdict as long as one beside this PC's replies with the model (taller than 80x24 has room for)
        screen = app.screen
        screen.post_message(SettingsVerdict(screen._asked, _verdict(app), " ".join(["Modeliyle son 4 yanıtınız."] * 40)))
        await until(pilot, lambda: "Modeliyle son 4" in str(screen.query_one("#load-speed").content))
        await pilot.pause(0.2)
        keys = app.texts("load.keys_box").split(" · ")
        for _ in range(2):
            lines = screen_lines(app)
            assert any(keys[0] in line and keys[-1] in line for line in lines), lines
            await pilot.press("pagedown")


async def test_f3_e_changes_a_profiles_load_settings_in_its_file(folder: Path, smollm2_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """F3's verdict named a context that would fit, and only a YAML file could change it: E opens
    the load settings, whose verdict follows the settings as they change; Ctrl+S writes only the
    settings changed into the profile's file (its comments at the top, and what it left to the
    defaults, kept); Esc leaves the file as it was."""
    from textual.widgets import Label, Select

    from workstation.core.paths import user_profiles_dir
    from workstation.tui.screens.profile_menu import ProfileMenu

    own = user_profiles_dir()
    own.mkdir(parents=True, exist_ok=True)
    _write(own, "running", {"model": str(smollm2_path)})
    _write(own, "mine", {"model": str(smollm2_path)})
    path = own / "mine.yaml"
    # notes between a section's lines and at a line's end too (a save took them away: PyYAML keeps none)
    notes = ("context: 512  # for long letters\nkv_cache:\n  # IT: q4_0 garbled replies\n  k: f16\n"
             "  v: f16  # exact\n")
    path.write_text("# my notes\n" + path.read_text(encoding="utf-8").replace("model:", "# IT's model\nmodel:")
                    .replace("context: 512\n", notes) + "# more than 8192 stalls this PC\n", encoding="utf-8")
    before = path.read_bytes()
    app = WorkstationApp("running", start_engine=False, sample_system=False, language="en")
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", '[{"name": "NVIDIA GeForce RTX 4060", "vram_total_gb": 8, "vram_free_gb": 7.5}]')
    async with app.run_test(size=(80, 24)) as pilot:
        said = notices(app)
        await _load_settings_of(pilot, app, "mine")
        small = _verdict(app)
        # every setting and its help on one line at 80x24, in plain words: what the choice made does
        # ("Speculative: lookup / draft" was jargon; the GPU line named the card, not what 0 meant)
        for row in app.screen.query(".load-row"):
            assert row.region.height == 1, [str(x.content) for x in row.query(Label)]
        help_of = {name: app.screen.query_one(f"#load-{name}-help", Label) for name in ("gpu", "spec")}
        assert str(help_of["gpu"].content) == "CPU only: slower; leaves the GPU free"
        assert str(help_of["spec"].content) == "replies come at the usual speed"
        app.screen.query_one("#load-gpu-layers", Select).value = "auto"
        app.screen.query_one("#load-spec", Select).value = "lookup"
        await until(pilot, lambda: str(help_of["spec"].content) == "faster when a reply quotes your text")
        assert str(help_of["gpu"].content) == "as much on the GPU as fits (7.5 GB free)"
        # the K/V help says what the type chosen does ("f16: exact; q4_0: a quarter of the memory"
        # stood beside every choice, q4_1 too)
        kv_help = app.screen.query_one("#load-kv-v-help", Label)
        assert str(kv_help.content) == "full size, exact"
        app.screen.query_one("#load-kv-v", Select).value = "q4_0"
        await until(pilot, lambda: str(kv_help.content) == "quarter size, less exact")
        # on the CPU a quantized K/V cache costs speed, said beside it and counted in the estimate (q8_0
        # said "nearly exact", its "Up to about 58 words a second" unmoved, where bench measured 0.79x);
        # a speed-up said "faster" and the estimate did not count it: it says so, and where it is measured
        speed = app.screen.query_one("#load-speed", Label)
        app.screen.query_one("#load-gpu-layers", Select).value = 0
        await until(pilot, lambda: str(kv_help.content) == "quarter size, less exact, slower on CPU")
        assert kv_help.parent is not None and kv_help.parent.region.height == 1
        await until(pilot, lambda: "counts the smaller context memory as slower" in str(speed.content))
        assert "not counted in this estimate" in str(speed.content), speed.content
        app.screen.query_one("#load-kv-v", Select).value = "f16"
        app.screen.query_one("#load-spec", Select).value = "off"
        await until(pilot, lambda: str(speed.content).startswith("Up to about") and "slower" not in str(speed.content)
                    and "not counted" not in str(speed.content))
        await pilot.press("home", "ctrl+k", *"1048576")  # the context typed: the verdict follows it
        await until(pilot, lambda: "1,048,576" in _verdict(app))
        assert "1,048,576" not in small, small
        await pilot.press("escape")  # nothing saved
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        assert path.read_bytes() == before
        # in Turkish too, on one line at 80x24, on a GPU and on the CPU (q5_0's "üçte bir boy, biraz daha az
        # kesin, CPU'da yavaş" wrapped, so did its "bağlam belleği" one): every code of the list in plain words,
        # under a name that says what the list is ("K önbelleği" alone was jargon)
        from workstation.core.profiles import KV_CACHE_TYPES

        async def every_kv_code(names: list[str], slower: str) -> None:
            await _load_settings_of(pilot, app, "mine")
            assert [str(x.content) for x in app.screen.query(".load-name")][2:4] == names  # (after the context and the longest reply)
            kv_help = app.screen.query_one("#load-kv-k-help", Label)
            for layers, kind in (("auto", "q5_0"), *((0, k) for k in KV_CACHE_TYPES)):
                app.screen.query_one("#load-gpu-layers", Select).value = layers
                app.screen.query_one("#load-kv-k", Select).value = kind
                await until(pilot, lambda k=kind, cpu=layers == 0: str(kv_help.content).startswith(app.texts(f"kv.{k}") + ", ")
                            and str(kv_help.content).endswith(slower) == (cpu and k not in ("f32", "f16", "bf16")))
                await pilot.pause()
                for row in app.screen.query(".load-row"):
                    assert row.region.height == 1, [str(x.content) for x in row.query(Label)]

        app.action_toggle_language()  # (F9 is the chat's key)
        await every_kv_code(["Bağlam belleği K", "Bağlam belleği V"], "CPU'da yavaş")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        app.action_toggle_language()
        await every_kv_code(["Context memory K", "Context memory V"], "slower on CPU")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        await _load_settings_of(pilot, app, "mine")
        await pilot.press("home", "ctrl+k", *"8192")
        app.screen.query_one("#load-kv-k", Select).value = "q8_0"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        assert said[-1] == f"Saved in {path}.", said
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        assert any(getattr(e, "key", "") == "mine" and e.context == 8192 for e in menu.entries)  # type: ignore[union-attr]
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# my notes\n") and "# IT's model\nmodel:" in text, text  # (every note kept: PyYAML keeps none)
    assert text.endswith("# more than 8192 stalls this PC\n"), text
    assert notes.replace("512", "8192").replace("k: f16", "k: q8_0") in text, text  # only the lines changed
    data = yaml.safe_load(text)
    assert data["context"] == 8192 and data["kv_cache"] == {"k": "q8_0", "v": "f16"} and data["gpu_layers"] == 0, data
    assert "parallel" not in data and "speculative" not in data, data  # (left to their defaults, as written)


async def test_f3_e_saving_the_profile_in_use_says_a_long_conversation_is_read_again(folder: Path, smollm2_path: Path) -> None:
    """Saving a change to the profile in use loads its model again, which holds none of the open
    conversation: a user's next reply read a long one again for 59 s, told nothing before. The
    save's note says so, with the time at this conversation's reading speed."""
    from textual.widgets import Select

    from workstation.core.metrics import TurnMetrics, reading_speed
    from workstation.core.paths import user_profiles_dir
    from workstation.core.store import ConversationStore

    own = user_profiles_dir()
    own.mkdir(parents=True, exist_ok=True)
    _write(own, "long", {"model": str(smollm2_path), "context": 2048})
    # the long conversation as a reply left it, its figures kept with it (reading its 1,100 tokens
    # of question with the model cost this test 6 s of CPU and is not what it is about)
    store = ConversationStore()
    conv = store.new("Notes", profile="long")
    store.add_message(conv.id, "user", "Please read these notes. " + "The office opens at nine and closes at five. " * 110)
    read = TurnMetrics(ttft_ms=4200, prompt_n=1150, cache_n=0, prompt_ms=4100, predicted_n=4, predicted_ms=60,
                       kv_used=1154, kv_size=2048, stop_reason="length")
    read.finish_rates()
    store.add_message(conv.id, "assistant", "The office opens", read.to_dict())
    store.set_open(conv.id)
    store.close()
    app = WorkstationApp("long", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.conversation_id == conv.id)
        assert app.history.turns
        last = app.history.turns[-1]
        assert last.prompt_n + last.cache_n > 1000 and reading_speed(app.history.turns)
        said = notices(app)
        await _load_settings_of(pilot, app, "long")
        # said in the verdict as soon as a change would do it (it came only once saved), not before
        verdict = app.screen.query_one("#load-verdict")
        await until(pilot, lambda: str(verdict.render()) != app.texts("profiles.fit_checking"))
        assert "reads this long conversation again" not in str(verdict.render())
        app.screen.query_one("#load-kv-v", Select).value = "q8_0"
        await until(pilot, lambda: "Your next reply first reads this long conversation again" in str(verdict.render()))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any("Loading the profile again" in n for n in said))
        note = next(n for n in said if "Loading the profile again" in n)
        assert "Your next reply first reads this long conversation again" in note and " about " in note, note
        assert note.count("reads this long conversation again") == 1


async def test_f3_e_changes_the_longest_reply_in_words_checked_as_a_profile_is(folder: Path, smollm2_path: Path) -> None:
    """F6's summary cut short and a reply cut at its limit sent the user into the profile's file to
    raise max_tokens: E has a row for it ("Longest reply"), said in words as the context's row is,
    refused out of range by the profile's own check (in the dialog's words), and saved in the file
    with only that line changed; in Turkish too, on one line at 80x24."""
    from textual.widgets import Input, Label

    from workstation.core.paths import user_profiles_dir
    from workstation.core.profile_check import MAX_PREDICT
    from workstation.tui.screens.profile_menu import ProfileMenu

    own = user_profiles_dir()
    own.mkdir(parents=True, exist_ok=True)
    _write(own, "running", {"model": str(smollm2_path)})
    _write(own, "mine", {"model": str(smollm2_path), "context": 4096,
                         "sampling": {"temperature": 0.0, "max_tokens": 1000}})
    path = own / "mine.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("max_tokens: 1000", "max_tokens: 1000  # IT: short"),
                    encoding="utf-8")
    app = WorkstationApp("running", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        said = notices(app)
        await _load_settings_of(pilot, app, "mine")
        screen = app.screen
        names = [str(x.content) for x in screen.query(".load-name")]
        assert names[:2] == ["Context", "Longest reply"], names
        box = screen.query_one("#load-max-tokens", Input)
        help_ = screen.query_one("#load-max-tokens-help", Label)
        assert box.value == "1,000" and str(help_.content) == "about 750 words", (box.value, help_.content)
        assert help_.parent is not None and help_.parent.region.height == 1
        box.focus()
        await pilot.press("end", *["backspace"] * 8, *"2000")
        await until(pilot, lambda: str(help_.content) == "about 1,500 words")
        # longer than the context: said beside it (a reply of 20,000 stood as "about 15,000 words")
        context = screen.query_one("#load-context", Input).value
        await pilot.press("end", *["backspace"] * 8, *"20000")
        await until(pilot, lambda: str(help_.content).startswith("about 15,000 words: more than the context holds"))
        assert f"({context.replace(',', '')}" not in str(help_.content) and "words in all" in str(help_.content)
        problem = screen.query_one("#load-problem", Label)
        assert not problem.display  # (a note, not a refusal: a profile's file may say so too)
        await pilot.press("end", *["backspace"] * 8, "0")  # the profile's own check: 1 to 10,000,000
        await until(pilot, lambda: problem.display)
        assert str(problem.content) == f"Longest reply is 0; allowed values are 1 to {MAX_PREDICT:,}.", problem.content
        await pilot.press("ctrl+s")  # refused: nothing written
        assert "max_tokens: 1000  # IT: short" in path.read_text(encoding="utf-8")
        await pilot.press("backspace", *"2000", "ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        assert said[-1] == f"Saved in {path}.", said
        app.action_toggle_language()
        await _load_settings_of(pilot, app, "mine")
        assert [str(x.content) for x in app.screen.query(".load-name")][1] == "En uzun yanıt"
        assert app.screen.query_one("#load-max-tokens", Input).value == "2.000"
        tr_help = app.screen.query_one("#load-max-tokens-help", Label)
        assert str(tr_help.content).startswith("yaklaşık ") and tr_help.parent is not None \
            and tr_help.parent.region.height == 1, tr_help.content
    text = path.read_text(encoding="utf-8")
    assert "max_tokens: 2000  # IT: short" in text, text  # (only that line changed, its note kept)
    assert yaml.safe_load(text)["sampling"] == {"temperature": 0.0, "max_tokens": 2000}


async def test_f3_e_saves_a_shipped_profile_as_the_users_copy_and_refuses_what_it_cannot_change(
        folder: Path, smollm2_path: Path) -> None:
    """A profile that came with the app is not the user's file to overwrite: saved as the user's
    own copy in the user's profiles folder (used in its place), and Ctrl+R on the copy puts the
    shipped one back. At 80x24 a long verdict is scrolled into sight. A desk PC's profile (the server
    sets its context) and a broken file: E says in one sentence why they cannot be changed here."""
    from workstation.core.paths import user_profiles_dir
    from workstation.core.profile_lookup import load_profile_file
    from workstation.tui.screens.dialogs import ConfirmDialog
    from workstation.tui.screens.load_settings import copy_descriptions
    from workstation.tui.screens.profile_menu import ProfileMenu

    _write(folder, "running", {"model": str(smollm2_path)})
    (folder / "beside.gguf").symlink_to(smollm2_path)
    _write(folder, "shipped", {"model": "beside.gguf",  # (a model named beside it: by its whole path in the copy)
                               "description": "Reads twice as much at once.", "description_tr": "İki kat okur."})
    _write(folder, "big", {"model": "qwen2.5-14b-instruct-q4_k_m",  # (not downloaded: its catalog shape)
                           "name": "Office GPU — Qwen2.5 14B with its 0.5B draft model, for long reports",
                           "speculative": {"mode": "draft", "draft_model": "qwen2.5-0.5b-instruct-q4_k_m"}})
    _write(folder, "gone", {"model": str(folder / "gone.gguf")})
    _write(folder, "desk", {"backend": "openai", "remote": {"base_url": "http://127.0.0.1:9/v1"}})
    _write(folder, "zbroken", {"model": str(smollm2_path), "contxt": 2})
    shipped = (folder / "shipped.yaml").read_bytes()
    app = WorkstationApp("running", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        said = notices(app)
        await _load_settings_of(pilot, app, "big")
        await pilot.press("home", "ctrl+k", *"1048576")
        await until(pilot, lambda: "1,048,576" in _verdict(app))
        # not downloaded: a sentence ending with a full stop; its draft model's "does not fit" not said twice
        assert _verdict(app).endswith("it fits here; or choose a smaller model in F4.") \
            and _verdict(app).count("does not fit") == 1, _verdict(app)
        # at 80x24 the long "does not fit" ran below the dialog, and no key reached it from the field:
        # its end comes into sight, the field too; PgUp/PgDn scroll the rest
        # (its speed names bench once now, and the dialog fits 80x24: 20 lines make it too tall again)
        await pilot.resize_terminal(80, 20)
        await pilot.pause()
        dialog = app.screen.query_one("#load-settings")
        assert dialog.max_scroll_y > 0  # (too tall for 80x20: else this proves nothing)
        for name in ("#load-verdict", "#load-speed", "#load-context"):
            assert dialog.scrollable_content_region.contains_region(app.screen.query_one(name).region), name
        await pilot.press("pageup")
        assert dialog.scroll_y == 0 and app.screen.focused is app.screen.query_one("#load-context")
        await pilot.press("pagedown")
        assert dialog.scroll_y == dialog.max_scroll_y
        await pilot.resize_terminal(80, 24)
        await pilot.press("escape")
        await _load_settings_of(pilot, app, "shipped")
        await pilot.press("home", "ctrl+k", *"1024", "ctrl+s")
        copy = user_profiles_dir() / "shipped.yaml"
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and copy.exists())
        assert said[-1] == f"Saved as your own copy, {copy}; it is used in place of the one that came with the app."
        data = yaml.safe_load(copy.read_text(encoding="utf-8"))
        assert data["context"] == 1024 and data["model"] == str((folder / "beside.gguf").resolve()), data
        assert (folder / "shipped.yaml").read_bytes() == shipped
        # the shipped description's claims are no longer true of a copy with another context: it says
        # what changed instead (it kept "reads twice as much" beside "reads up to about 4,500 words");
        # set back as shipped, the shipped one again; a description the user wrote is kept
        assert (data["description"], data["description_tr"]) == (
            "Your copy of the profile that came with the app, with the context 1,024 (it was 512).",
            "Uygulamayla gelen profilin kopyanız; değişenler: bağlam 1.024 (önceden 512)."), data
        mine = load_profile_file(copy)
        assert copy_descriptions(mine, dataclasses.replace(mine, context=512)) == {
            "description": "Reads twice as much at once.", "description_tr": "İki kat okur."}
        assert copy_descriptions(mine, dataclasses.replace(mine, kv_cache=KVCache("q8_0", "f16")))["description"] == (
            "Your copy of the profile that came with the app, with the context 1,024 (it was 512) and the context "
            "memory K q8_0 (it was f16).")
        assert copy_descriptions(dataclasses.replace(mine, description="Mine."), dataclasses.replace(mine, context=512)) \
            == {"description_tr": "İki kat okur."}
        # the copy's title is the user's own (the shipped one's, "…, 8K context", could lie), and F3
        # tells a copy from the shipped profiles
        menu = app.screen
        assert isinstance(menu, ProfileMenu) and data["name"] == "shipped (my copy)", data
        row = next(i for i, e in enumerate(menu.entries) if getattr(e, "key", "") == "shipped")
        assert str(menu._prompt(row, menu.entries[row])).startswith("  shipped (my copy)  (shipped)\n")
        copy.write_text(copy.read_text(encoding="utf-8").replace("name: shipped (my copy)", "name: shipped"),
                        encoding="utf-8")  # (a copy saved before: its title the shipped one's)
        assert str(menu._prompt(row, load_profile_file(copy))).startswith("  shipped  (shipped · your copy)\n")
        # Ctrl+R on the copy puts back the shipped profile, asked first (nothing offered a way back)
        await _load_settings_of(pilot, app, "shipped")
        assert "Ctrl+R puts back the one that came with the app" in str(app.screen.query_one("#load-file").content)
        hint = app.screen.query_one(".dialog-hint")  # (Ctrl+R was named only in the file's line)
        assert str(hint.content) == "Tab, Enter: next · Ctrl+S: save · Ctrl+R: put back · Esc: leave unsaved"  # (in the context box)
        assert hint.region.height == 1
        for answer in ("n", "y"):
            await pilot.press("ctrl+r")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
            await pilot.press(answer)
            await until(pilot, lambda: not isinstance(app.screen, ConfirmDialog))
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and not copy.exists())
        # put aside, not deleted (there was no way back to the settings the user had made)
        kept = copy.parent / "removed" / "shipped.yaml"
        assert yaml.safe_load(kept.read_text(encoding="utf-8"))["context"] == 1024
        assert said[-1] == (f"Your copy is kept as {kept} (moved back to {copy.parent}, it is used again); the "
                            "profile's settings are the ones that came with the app again."), said
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        assert not any(getattr(e, "source", None) == kept for e in menu.entries)  # (no profile there)
        back = next(e for e in menu.entries if getattr(e, "key", "") == "shipped")
        assert back.source == folder / "shipped.yaml" and back.context == 512  # type: ignore[union-attr]
        # a model file that is not there: F3 said "F3 chooses another profile", in F3
        gone = next(i for i, e in enumerate(menu.entries) if getattr(e, "key", "") == "gone")
        await until(pilot, lambda: gone in menu.verdicts)
        assert menu.verdicts[gone] == (f"The model file {folder / 'gone.gguf'} does not exist: choose another profile "
                                       "here, or close this list (Esc) and see the models on this PC with F4.")
        await _load_settings_of(pilot, app, "gone")  # in E, Esc leaves the settings: its own sentence
        assert _verdict(app) == (f"The model file {folder / 'gone.gguf'} does not exist: leave these settings (Esc) "
                                 "and choose another profile, or close the list too and see the models on this PC "
                                 "with F4."), _verdict(app)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is menu)
        for key, why in (("desk", "This profile runs on a server, which sets its context and memory itself"),
                         (None, "A broken profile file cannot be changed here: mend it in a text editor")):
            menu.query_one("#profiles").highlighted = next(  # type: ignore[attr-defined]
                i for i, e in enumerate(menu.entries) if getattr(e, "key", None) == key)
            await pilot.press("e")
            await until(pilot, lambda: said[-1].startswith(why))  # noqa: B023
            assert app.screen is menu
            # a profile with nothing here to change: a plain note (it came in a box titled "Warning")
            shown = [n for n in app._notifications if str(n.message).startswith(why)]
            assert shown and shown[-1].severity == ("information" if key == "desk" else "warning"), shown


def test_the_status_line_says_what_a_variant_changes() -> None:
    """A profile run with settings changed for this run (-p office-cpu kv_cache=q8_0): the status
    line names it and what the variant changes, as F3 does."""
    from workstation.core.profile_variants import load_variant
    from workstation.core.profiles import profile_said

    variant = load_variant("office-cpu kv_cache=q8_0")
    said = profile_said(variant, "en")
    assert variant.variant_words and said.endswith(" · " + variant.variant_words), said


def test_the_status_line_keeps_a_copys_mark_when_it_cuts_the_name() -> None:
    """The user's own copy of a shipped profile, "Ofis CPU'su — SmolLM2 135M (kopyam)": the status
    line cut it to "Ofis CPU'su — SmolLM2 135M …", the shipped profile's name; the mark is kept and
    the name before it is cut."""
    from workstation.core.profile_variants import load_variant
    from workstation.core.profiles import PROFILE_SAID_MOST, profile_said

    shipped = load_variant("office-cpu")
    texts = {lang: Texts(lang) for lang in ("en", "tr")}
    for lang, t in texts.items():
        copy = dataclasses.replace(shipped, name=t("load.copy_name", name=shipped.title("en")),
                                   name_tr=t("load.copy_name", name=shipped.title("tr")) if lang == "tr" else "")
        said = profile_said(copy, lang)
        mark = t("load.copy_name", name="").strip()
        assert len(copy.title(lang)) > PROFILE_SAID_MOST, copy.title(lang)  # (else nothing is cut)
        assert said.endswith(mark) and len(said) <= PROFILE_SAID_MOST and "…" in said, said
        assert profile_said(shipped, lang) != said


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_f3_and_f4_say_one_figure_of_words_for_a_model_and_its_context(language: str, smollm2_path: Path,
                                                                              gemma_path: Path) -> None:
    """A first Turkish user saw office-cpu's 4,096 tokens as 1,600 words on F3 and SmolLM2 as 3,300
    on F4 (its own 8,192), gemma as 13,000 and 3,300 in one F4 panel, and F3's figure turn to 3,700
    with an English conversation open, all as plain "words". One way says them now: by the UI
    language's figure for the model's own tokenizer (SmolLM2 spends about 4 tokens on a Turkish
    word: said once, in plain words), the model's limit and the profile's context told apart on
    F4, and the open conversation's replies moving it not."""
    from textual.widgets import DataTable

    from workstation.core.engine_api import answer_reserve
    from workstation.core.language_words import model_figures
    from workstation.core.metrics import TurnMetrics
    from workstation.core.phrases import context_basis, context_words
    from workstation.tui.screens.models import ModelsScreen
    from workstation.tui.screens.profile_menu import ProfileMenu

    t = Texts(language)
    basis = {m: context_basis(t.get, model_figures(m, t.get)) for m in (smollm2_path, gemma_path)}
    office = context_words(4096, basis[smollm2_path], t.get)  # office-cpu's context
    costly = t("words.costly")
    assert office == {"en": "about 3,100 words", "tr": "yaklaşık 1.100 sözcük"}[language]
    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language=language)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and len(app.screen.verdicts) > 3)
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        current = next(i for i, e in enumerate(menu.entries) if menu._is_current(e))  # type: ignore[arg-type]
        row = str(menu._prompt(current, menu.entries[current]))
        message = context_words(4096 - answer_reserve(app.profile.sampling, 4096), basis[smollm2_path], t.get)  # type: ignore[union-attr]
        # a conversation's and a message's, the reply's room kept ("reads about 1,100 words at once" stood beside
        # the refusal of an 850-word contract), in the words F4, E and that refusal say it by
        reads = {"en": f"· a conversation of {office}; a message up to {message.removesuffix(' words')}",
                 "tr": f"· {office}lük bir sohbet; en çok {message}lük bir mesaj"}[language]
        assert reads in row, row
        # an English model reading Turkish: said once that it spends more of its room on Turkish words
        assert row.count(costly) == (language == "tr"), row
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ProfileMenu))
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.installed))
        models = app.screen
        assert isinstance(models, ModelsScreen)
        for path, limit in ((smollm2_path, 8192), (gemma_path, 32768)):
            index, found = next((i, r) for i, r in enumerate(models.installed) if r.path == path)
            models.query_one("#installed", DataTable).move_cursor(row=index)
            await until(pilot, lambda found=found: found in models.fits)  # type: ignore[misc]
            # the model's own limit in its details, said as the model's
            own = context_words(limit, basis[path], t.get)
            could = {"en": f"can read up to {own} at once", "tr": f"en çok {own} okuyabilir"}
            assert could[language] in found.details, found.details
            assert found.details.count(costly) == (language == "tr" and path == smollm2_path), found.details
            fit = models.fits[found].text
            if path == smollm2_path:  # the profile in use gives it its context: the figure F3 said
                # worked out for that profile's context, said up front (F4 said 423 MB at 8,192 tokens where F3 said 333)
                gives = {"en": f"On this PC, for a conversation of up to {office} (as {app.profile.title('en')} "  # type: ignore[union-attr]
                               "is set, in F3 → E, Context",
                         "tr": f"Bu bilgisayarda, {office} kadar bir konuşma için ({app.profile.title('tr')} ayarıyla, "  # type: ignore[union-attr]
                               "F3 → E, Bağlam"}
                assert fit.startswith(gives[language]), fit
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ModelsScreen))
        # a conversation's own words a token (English replies: 0.9 words a token) move it not: F3 said 950,
        # then 3,500, then 3,100 of one profile as the open conversation's replies were measured
        app.history.add(TurnMetrics(predicted_n=100, predicted_ms=1000, stop_reason="eos"), words=90)
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and len(app.screen.verdicts) > 3)
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        row = str(menu._prompt(current, menu.entries[current]))
        assert reads in row, row


async def test_a_summary_stopped_by_the_days_limit_says_when_it_can_go_on(
        folder: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F6 on a desk PC whose key has fewer tokens left today than the document's first part needs
    (a real ``workstation serve`` with keys): it said "when the server comes back, Ctrl+R
    summarizes it", though the server never went away; it says the limit raised or its reset
    time, as the chat's refusal does, and the tokens in words the office staff read."""
    from docmaker import honeybee_text
    from serve_helpers import serve, write_profile

    from workstation.core.quota import next_day_start

    server_data = _server_key(tmp_path, monkeypatch, "ayse", 60)  # less than a part of the document
    doc = tmp_path / "report.txt"
    doc.write_text(honeybee_text(8), encoding="utf-8")
    with serve(write_profile(tmp_path, smollm2_path), data=server_data) as server:
        _write(folder, "desk", {"backend": "openai", "remote": {"base_url": server.base_url, "api_key_env": "WS_DESK_KEY"},
                                "sampling": {"temperature": 0.0, "max_tokens": 24}})
        app = WorkstationApp("desk", sample_system=False, language="tr", store_path=tmp_path / "c.db")
        async with app.run_test(size=(110, 32)) as pilot:
            screen = await summarize_in_f6(pilot, app, doc)
            state = lambda: f6_state(screen)  # noqa: E731
            await until(pilot, lambda: not screen.running and "özetlenmedi" in state())
            resets = time.strftime("%H:%M", time.localtime(next_day_start(time.time())))
            assert state().startswith("report.txt belgesinden hiçbir bölüm özetlenmedi: "), state()
            assert "Sunucu geri geldiğinde" not in state(), state()
            # (a part larger than the key's whole day: no reset at {resets} helps, only a larger limit)
            assert state().endswith("Sınır yükseltildiğinde Ctrl+R onu özetler."), (state(), resets)
            assert "özetin sonraki adımının tek başına" in state() and "bütün bir günlük 60 sınırından fazla" in state(), state()
            await pilot.press("f9")  # the same in English
            await until(pilot, lambda: "Nothing of" in state())
            assert state().endswith("Once the limit is raised, Ctrl+R summarizes it."), state()
            assert "the summary's next step alone needs about" in state() and "whole day of 60" in state(), state()


async def test_a_used_up_day_says_when_on_the_status_line_and_clears_once_raised(
        folder: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A message refused because the key's day is used up: the status line said "the server
    answers again once they reset", with no time, while the pop-up said "at 00:00"; it says the
    time (one phrase for both). The admin raises the limit (keys set ayse --tokens-per-day
    60000): the app's own recheck (``_recheck_day``, every 30 s, called here) clears the words
    without a keypress."""
    from serve_helpers import serve, write_profile
    from tui_helpers import type_message

    from workstation.core.keys import DB_NAME, KeyRing
    from workstation.core.quota import next_day_start

    server_data = _server_key(tmp_path, monkeypatch, "ayse", 40)
    with serve(write_profile(tmp_path, smollm2_path, sampling={"temperature": 0.0, "max_tokens": 64, "seed": 1}),
               data=server_data) as server:
        _write(folder, "desk", {"backend": "openai", "remote": {"base_url": server.base_url, "api_key_env": "WS_DESK_KEY"},
                                "sampling": {"temperature": 0.0, "max_tokens": 64}})
        app = WorkstationApp("desk", sample_system=False, language="tr", store_path=tmp_path / "c.db")
        async with app.run_test(size=(160, 30)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            await type_message(pilot, "Hi")  # the day's 40 tokens end in its reply
            await until(pilot, lambda: app.last_metrics is not None and not app.generating)
            await type_message(pilot, "Hi")  # refused: the day is used up
            await until(pilot, lambda: app.not_answering == "remote.day_used" and not app.generating)
            resets = time.strftime("%H:%M", time.localtime(next_day_start(time.time())))
            popup = " ".join(str(n.message) for n in app._notifications)
            again = f"saat {resets} itibarıyla yeniden yanıt verebilir"
            assert again in popup, popup
            assert f"anahtarınız bugünkü sözcük parçası (token) hakkını kullandı; {again}" in app.status_text(), app.status_text()
            admin = KeyRing(server_data / DB_NAME)  # keys set ayse --tokens-per-day 60000
            admin.change("ayse", tokens_per_day=60_000, max_parallel=None, profiles=())
            admin.close()
            app._recheck_day()  # what the app's 30 s timer calls
            await until(pilot, lambda: app.not_answering == "")
            assert "(token) hakkını kullandı" not in app.status_text(), app.status_text()


# the key's day used up before (by another program with the same key here): F6's first request refused;
# or 304 tokens, its one part's 296-token prompt taken and its reply cut by the server 8 tokens in (a
# document of 6 paragraphs: 12 made a 512-token prompt, read at twice the CPU for the same check)
@pytest.mark.parametrize(("per_day", "used_before"), [(40, True), (304, False)], ids=["refused", "cut"])
async def test_a_summary_stopped_for_a_used_up_day_says_so_on_the_status_line(
        folder: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, per_day: int,
        used_before: bool) -> None:
    """F6 stopped by the key's day limit (refused, or its part cut where the day ran out): its
    screen said why, but the status line said "ready", where a chat turn stopped so says "used
    up" and when the server answers again (``server_answered``: one path for both)."""
    import httpx
    from docmaker import honeybee_text
    from serve_helpers import serve, write_profile

    from workstation.core.quota import next_day_start

    server_data = _server_key(tmp_path, monkeypatch, "ayse", per_day)
    doc = tmp_path / "report.txt"
    doc.write_text(honeybee_text(1), encoding="utf-8")
    with serve(write_profile(tmp_path, smollm2_path, sampling={"temperature": 0.0, "max_tokens": 64, "seed": 1}),
               data=server_data) as server:
        if used_before:
            used = httpx.post(f"{server.base_url}/chat/completions", headers={"Authorization": f"Bearer {os.environ['WS_DESK_KEY']}"},
                              json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 64}, timeout=120)
            assert used.status_code == 200, used.text  # the day's 40 tokens end in its reply
        _write(folder, "desk", {"backend": "openai", "remote": {"base_url": server.base_url, "api_key_env": "WS_DESK_KEY"},
                                "sampling": {"temperature": 0.0, "max_tokens": 24}})
        app = WorkstationApp("desk", sample_system=False, language="en", store_path=tmp_path / "c.db")
        async with app.run_test(size=(160, 32)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            assert "used its tokens for today" not in app.status_text(), app.status_text()
            screen = await summarize_in_f6(pilot, app, doc)
            state = lambda: f6_state(screen)  # noqa: E731
            await until(pilot, lambda: not screen.running and "Nothing of" in state())
            said_by = {True: "has used its 40 tokens", False: "The server stopped the summary: your key has used"}
            assert said_by[used_before] in state(), state()
            resets = time.strftime("%H:%M", time.localtime(next_day_start(time.time())))
            assert app.not_answering == "remote.day_used", (app.not_answering, state())
            said = app.status_text()
            assert f"your key has used its tokens for today; it can answer again at {resets}" in said, said


async def test_a_desk_pc_names_the_office_server_and_its_profile_in_turkish(
        folder: Path, tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The window title said "yerel modeller" (local models) while the app ran on the office
    server: it names the server; `profiles check -p office-server --lang tr` printed the English
    name though ``name_tr`` was there (``profile_said``, the one naming of a profile)."""
    from serve_helpers import serve, write_profile

    from workstation.cli import main

    with serve(write_profile(tmp_path, smollm2_path)) as server:
        _write(folder, "office-server", {"backend": "openai", "name": "Office server", "name_tr": "Ofis sunucusu",
                                         "remote": {"base_url": server.base_url}})
        assert main(["profiles", "check", "-p", "office-server", "--lang", "tr"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("office-server: geçerli (Ofis sunucusu)"), out
        _write(folder, "local", {"model": str(smollm2_path)})
        app = WorkstationApp("office-server", sample_system=False, language="tr", store_path=tmp_path / "c.db")
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            await until(pilot, lambda: app.sub_title.startswith("yanıtlar ofis sunucusundan, 127.0.0.1:"))
            assert "yerel" not in app.sub_title


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_the_status_line_names_a_profile_whole_where_it_has_room(language: str) -> None:
    """The shipped "Long documents — SmolLM2 135M" was said "Long documents — SmolLM2 13…" at 110
    columns, with room to spare: cut only where the line has no room for it whole (and its model)."""
    from workstation.core.profile_variants import load_variant
    from workstation.core.profiles import PROFILE_SAID_MOST
    from workstation.tui.widgets.status_bar import StatusBar

    title = load_variant("long-documents").title(language)
    app = WorkstationApp("long-documents", sample_system=False, language=language)
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        bar = app.chat_screen.query_one(StatusBar)
        await until(pilot, lambda: f" {app.glyphs.between} {title} · " in str(bar.render()))
        assert "…" not in str(bar.render()), str(bar.render())
        assert language == "tr" or len(title) > PROFILE_SAID_MOST, title  # (the Turkish name is 28: the test's other half)
        await pilot.resize_terminal(40, 24)  # room for the name alone: whole, the model left out
        await until(pilot, lambda: str(bar.render()).rstrip().endswith(f" {app.glyphs.between} {title}"))
        await pilot.resize_terminal(30, 24)  # no room: cut, the line within the terminal's width
        await until(pilot, lambda: "…" in str(bar.render()))
        assert len(str(bar.render()).rstrip()) <= 30, str(bar.render())


@pytest.mark.parametrize("size", [(80, 24), (110, 32)])
async def test_f3_opens_with_the_profiles_above_the_current_one_in_view(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]) -> None:
    """F3 opened scrolled to the current profile, at the top: the bigger-model profiles above it
    out of view and nothing said of them. Now the current one is seen whole at the list's foot
    with as many whole profiles above it as the list holds."""
    from conftest import tui_profile

    from workstation.tui.screens.profile_menu import ProfileList

    folder = tmp_path / "profiles"
    folder.mkdir()
    for n in range(1, 9):
        tui_profile(folder / f"p{n}.yaml", str(smollm2_path))
    as_shipped_profiles(monkeypatch, folder)
    app = WorkstationApp("p7", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=size) as pilot:
        await pilot.press("f3")
        await until(pilot, lambda: bool(app.screen.query(ProfileList)))
        options = app.screen.query_one(ProfileList)
        await until(pilot, lambda: options.highlighted is not None and bool(options._index_to_line))
        for _ in range(5):
            await pilot.pause()
        shown = options.scrollable_content_region.height
        starts = options._index_to_line
        at = options.highlighted
        assert at is not None and [getattr(e, "key", None) for e in app.screen.entries][at] == "p7"
        end = starts[at] + options._heights[at]
        assert options.scroll_y <= starts[at] and end <= options.scroll_y + shown  # the current one whole
        fits = min(y for y in starts.values() if y >= end - shown)  # the most whole profiles above it
        assert options.scroll_y == fits, (options.scroll_y, fits, shown, starts)
        assert options.scroll_y > 0

        async def placed_again_when(more: int, than: int) -> int:
            """The window made ``more`` rows taller: the list placed as at the start for its new height."""
            await pilot.resize_terminal(size[0], size[1] + more)
            await until(pilot, lambda: options.scrollable_content_region.height > than)
            for _ in range(5):
                await pilot.pause()
            height = options.scrollable_content_region.height
            fits = min(y for y in starts.values() if y >= end - height)
            assert options.scroll_y == fits, (options.scroll_y, fits, height, starts)
            return height

        # fitted again before a key is pressed (the window made taller; on a busy PC a second fit as
        # it opened): placed again as at the start, not left at the first fit's (fewer profiles above)
        taller = await placed_again_when(6, shown)
        # the first fit before the current profile was highlighted (a busy PC): the placing is of the
        # profile highlighted as it is placed, and a later fit places it again as at the start
        menu = app.screen
        menu._placed, menu._placed_at = False, None
        options.highlighted = None
        menu.fit_list()
        options.highlighted = at
        for _ in range(5):
            await pilot.pause()
        await placed_again_when(12, taller)


async def test_a_desk_pcs_room_left_is_said_in_the_words_of_the_conversations_language(
        folder: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """A desk PC under --lang tr, its person writing English: the line under the box said "yaklaşık
    1.100 sözcüklük yer kaldı; Türkçe sözcük daha çok yer tutar" (the server's Turkish figure for its
    model), where the server's own line says about 3,100 English words of the context. The room is
    said in words of the conversation's language (``conversation_language``), in the UI's words."""
    from serve_helpers import serve, write_profile
    from tui_helpers import type_message

    from workstation.core.phrases import about_words

    with serve(write_profile(tmp_path, smollm2_path, context=2048)) as server:
        _write(folder, "desk", {"backend": "openai", "remote": {"base_url": server.base_url},
                                "sampling": {"temperature": 0.0, "max_tokens": 16}})
        app = WorkstationApp("desk", sample_system=False, language="tr", store_path=tmp_path / "c.db")
        async with app.run_test(size=(110, 32)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            basis = app.words_basis()
            assert basis is not None and basis.costly, basis  # (the server's Turkish figure, under half its English)
            await type_message(pilot, "When will the office move to the new building? Tell me the date.")
            await until(pilot, lambda: app.last_metrics is not None and not app.generating)
            await until(pilot, lambda: app.context_fill_text() != "", what="the room left said")
            room = app.context_fill_text()
            last = app.history.turns[-1]
            left = app.engine_info.n_ctx - (last.prompt_n + last.cache_n + last.predicted_n)
            assert "Türkçe sözcük" not in room, room
            assert room == f"bu sohbette yaklaşık {app.texts.number(about_words(left))} sözcüklük yer kaldı", room
            assert app.conversation_language() == "en"


async def test_f3_e_enter_in_a_box_moves_on_and_never_saves(folder: Path, smollm2_path: Path) -> None:
    """F3 → E → Tab Tab Tab → Enter, V q4_0 → Tab Tab → Enter: Tab went from Speed-up back into the
    context box, where Enter saved the profile and loaded its model again with settings only tried
    ("Saved in …"), while the key line said "Enter: open a choice". Enter in a box now moves on
    (only Ctrl+S saves); the key line says what Enter does where the focus is; the setting that has
    the keys stands out (its name underlined, its box shaded); the K/V list says each type in words."""
    from textual.widgets import Input, Label, Select
    from textual.widgets._select import SelectCurrent, SelectOverlay

    from workstation.core.paths import user_profiles_dir
    from workstation.tui.screens.load_settings import LoadSettings

    own = user_profiles_dir()
    own.mkdir(parents=True, exist_ok=True)
    _write(own, "running", {"model": str(smollm2_path)})
    _write(own, "travel-helper", {"model": str(smollm2_path)})
    path = own / "travel-helper.yaml"
    before = path.read_bytes()
    app = WorkstationApp("running", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        said = notices(app)
        await _load_settings_of(pilot, app, "travel-helper")
        screen = app.screen
        assert isinstance(screen, LoadSettings)
        keys = screen.query_one("#load-keys", Label)
        context = screen.query_one("#load-context", Input)
        assert screen.focused is context and str(keys.content) == "Tab, Enter: next · Ctrl+S: save · Esc: leave unsaved"

        def name_of(widget: object) -> Label:
            return widget.parent.query_one(".load-name", Label)  # type: ignore[attr-defined, no-any-return]

        def stands_out(widget: Input | Select) -> bool:
            name = name_of(widget)
            return bool(name.styles.text_style.bold and name.styles.text_style.underline)

        await pilot.pause()
        assert stands_out(context)
        await pilot.press("tab", "tab", "tab")
        v = screen.query_one("#load-kv-v", Select)
        assert screen.focused is v
        await pilot.pause()
        assert str(keys.content) == "Tab: next · Enter: open a choice · Ctrl+S: save · Esc: leave unsaved"
        await until(pilot, lambda: stands_out(v), what=f"{name_of(v).styles.text_style} {v.parent.has_focus_within} {name_of(context).styles.text_style}")
        assert not stands_out(context)
        k = screen.query_one("#load-kv-k", Select)  # (the box shaded where it has the keys, not elsewhere)
        assert v.query_one(SelectCurrent).styles.background != k.query_one(SelectCurrent).styles.background
        await pilot.press("enter")  # the list: each type in words beside its name
        overlay = v.query_one(SelectOverlay)
        await until(pilot, lambda: overlay.display and overlay.has_focus)
        listed = [str(overlay.get_option_at_index(i).prompt) for i in range(overlay.option_count)]
        assert "q4_0    quarter size, less exact" in listed and "q8_0    half size, nearly exact" in listed, listed
        assert "f16     full size, exact" in listed and "iq4_nl  quarter size, less exact" in listed, listed
        assert overlay.region.width >= 30  # (not cut at the box's 12 columns)
        overlay.highlighted = [v for _p, v in v._options].index("q4_0")
        await pilot.press("enter")
        await until(pilot, lambda: v.value == "q4_0" and screen.focused is v)
        assert str(v.query_one(SelectCurrent).query_one("#label").render()) == "q4_0"  # (the box: the name alone)
        await pilot.press("tab", "tab")
        assert screen.focused is context
        await pilot.press("enter")  # moves on: nothing saved, nothing loaded again
        await pilot.pause(0.3)
        assert app.screen is screen and screen.focused is screen.query_one("#load-max-tokens", Input)
        assert path.read_bytes() == before and not any("Saved" in n for n in said), said
        await pilot.press("ctrl+s")  # only Ctrl+S saves
        await until(pilot, lambda: app.screen is not screen and path.read_bytes() != before)
        assert yaml.safe_load(path.read_text(encoding="utf-8"))["kv_cache"]["v"] == "q4_0"
