"""The sampling settings of this session's chat turns (Ctrl+E), as LM Studio's side panel and
Ollama's ``/set parameter``: the profile's file is not changed, and a profile chosen with F3
starts from its own file's settings again. The values are checked by the profile's own check
(``profile_check.check_sampling``), so the dialog refuses what a profile file would."""

from __future__ import annotations

import dataclasses

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from workstation.core.errors import ProfileError
from workstation.core.phrases import read_number
from workstation.core.profile_check import check_sampling, sampling_changes
from workstation.core.profiles import Sampling
from workstation.tui.i18n import Texts
from workstation.tui.widgets.line_input import LineInput

# the settings the dialog shows, in its order: (field, whole numbers only)
FIELDS: tuple[tuple[str, bool], ...] = (
    ("temperature", False), ("top_p", False), ("top_k", True), ("min_p", False), ("repeat_penalty", False),
    ("presence_penalty", False), ("frequency_penalty", False), ("max_tokens", True), ("seed", True),
)


def changes(sampling: Sampling, base: Sampling) -> dict[str, object]:
    """The dialog's settings of ``sampling`` other than ``base``'s (the profile's), by field."""
    return sampling_changes(sampling, base, (name for name, _whole in FIELDS))


def shown(value: float | int | None) -> str:
    """A setting as its box shows it: 0.7, 1, 0.1234567 (every digit: Enter on a dialog left
    as it was must not round it into "own sampling")."""
    if value is None:
        return ""
    text = repr(value) if isinstance(value, float) else str(value)
    return text[:-2] if text.endswith(".0") else text


# whole numbers a box shows with the UI's language's thousands marks, as the load settings' context
# box does (Turkish 2.048; it showed "2048" beside F3's "4.096"); not the seed: a name, not an amount
GROUPED = frozenset({"top_k", "max_tokens"})


def in_box(name: str, value: float | int | None, texts: Texts) -> str:
    """Setting ``name``'s ``value`` as its box shows it, in the UI's language: 0,7 and 2.048 in
    Turkish (``read_number`` takes it back as it is)."""
    return said(value, texts) if name in GROUPED else texts.number(shown(value))


def said(value: float | int | None, texts: Texts) -> str:
    """A setting in a sentence, as the UI's language writes it: 0,7 and 2.048 in Turkish."""
    return texts.number(written(value))


def written(value: float | int | None) -> str:
    """A setting in a sentence, written the English way (0.7, 2,048): a sentence's value that
    ``texts`` writes in its language as it says it, in the new one after F9 too."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return shown(value)


# what a box takes as it is typed: digits, a sign, and either decimal mark (Turkish writes 0,7:
# Textual's "number" box dropped the comma as it was typed, and 0,3 was taken as 3)
TYPED = r"[-+]?[0-9.,]*([eE][-+]?[0-9]*)?"  # (1e-05, as a small min_p is shown, stays editable)


class SamplingDialog(ModalScreen[Sampling | None]):
    """The settings as text boxes, one a line; Enter applies them (``dismiss(Sampling)``), Esc
    leaves them as they were (``None``), Ctrl+R puts back the profile file's."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False),
                Binding("ctrl+r", "profile_values", "profile's", show=False),
                Binding("down", "app.focus_next", "next", show=False),
                Binding("up", "app.focus_previous", "previous", show=False)]

    def __init__(self, texts: Texts, now: Sampling, profiles: Sampling, profile_name: str) -> None:
        super().__init__(classes="dialog-screen")
        self.texts = texts
        self.now = now
        self.profiles = profiles
        self.profile_name = profile_name

    def compose(self) -> ComposeResult:
        t = self.texts
        with Vertical(classes="dialog wide", id="sampling"):
            yield Label(t("sampling.title", name=self.profile_name), classes="dialog-title", markup=False)
            # the keys first: at 80x24 the hint under the settings was out of sight
            yield Label(t("sampling.keys"), id="sampling-keys", classes="dialog-hint", markup=False)
            # what is wrong, above the settings: below them a narrow terminal left it out of sight
            yield Label("", id="sampling-problem", classes="dialog-problem", markup=False)
            for name, _whole in FIELDS:
                with Horizontal(classes="sampling-row"):
                    yield Label(t(f"sampling.{name}"), classes="sampling-name", markup=False)
                    yield LineInput(in_box(name, getattr(self.now, name), t), id=f"s-{name}", compact=True,
                                restrict=TYPED, placeholder=t("sampling.random") if name == "seed" else "")
                    yield Label(t(f"sampling.{name}.help"), classes="sampling-help", markup=False)
            yield Label(t("sampling.hint"), classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#sampling-problem", Label).display = False
        self.query_one("#s-temperature", Input).focus()

    def chosen(self) -> Sampling:
        """The values typed, checked as a profile's are; ProfileError names the one that is not
        right in the dialog's own words."""
        values: dict[str, float | int | None] = {}
        for name, whole in FIELDS:
            typed = self.query_one(f"#s-{name}", Input).value.strip()
            label = self.texts(f"sampling.{name}")
            if not typed:
                if name != "seed":
                    raise ProfileError(self.texts("sampling.empty", name=label))
                values[name] = None
                continue
            try:
                values[name] = read_number(typed, whole, self.texts.get("number.thousands") or ",")
            except ValueError:
                raise ProfileError(self.texts("sampling.not_a_number", name=label, value=typed)) from None
            if name == "seed" and values[name] == -1:  # llama.cpp's -1: a new one each time, shown so
                values[name] = None
        chosen = dataclasses.replace(self.now, **values)  # type: ignore[arg-type]
        check_sampling(chosen, lambda field: self.texts(f"sampling.{field}"))
        return chosen

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            chosen = self.chosen()
        except ProfileError as err:
            problem = self.query_one("#sampling-problem", Label)
            problem.update(self.texts.error(err))  # (check_sampling's in this language, its numbers too)
            problem.display = True
            return
        self.dismiss(chosen)

    @on(Input.Changed)
    def _changed(self) -> None:
        self.query_one("#sampling-problem", Label).display = False  # (it stayed once the field was right)

    def typed(self) -> bool:
        """Whether a box holds something typed that closing the dialog would lose (Ctrl+Q asks)."""
        return any(self.query_one(f"#s-{name}", Input).value != in_box(name, getattr(self.now, name), self.texts)
                   for name, _whole in FIELDS)

    def action_profile_values(self) -> None:
        for name, _whole in FIELDS:
            self.query_one(f"#s-{name}", Input).value = in_box(name, getattr(self.profiles, name), self.texts)
        self.query_one("#sampling-problem", Label).display = False

    def action_cancel(self) -> None:
        self.dismiss(None)
