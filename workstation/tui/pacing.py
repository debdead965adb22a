"""How much the chat screen does while a reply streams.

Every screen update is CPU work in the app's process. When the engine decodes on the CPU
with a thread on every core, that work is taken from llama.cpp's threads, which wait for each
other at every step: one delayed thread delays the token, so a token is late by about the
time the screen took. So the screen gives way then: it updates ``BUSY_CPU.updates_hz`` times a
second and renders finished paragraphs as Markdown rarely (each time costs two or three
layout passes of the screen, about 50 ms with SmolLM2 on 2 cores); the whole reply is
rendered as Markdown at its end either way. When the engine leaves a core free, runs on a GPU
or on another machine, the screen updates often and formats as it goes (``FREE_CPU``).
Measured with ``bench/tui_overhead.py``.

Over SSH every repaint also crosses the link: the message box's blinking cursor alone redrew
the box twice a second, 1.4 KB/s at rest at 80x24, so there it does not blink (``over_ssh``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from workstation.core.hardware import count_physical_cores


@dataclass(frozen=True)
class Pace:
    updates_hz: float  # screen updates a second while a reply streams
    markdown_every_s: float  # finished paragraphs become Markdown at most this often
    dashboard_every_s: float  # the dashboard (F5) redraws its charts at most this often


# the dashboard redraws four sparklines, a gauge and the status: at 4 Hz beside an engine on every
# core, a new-user trial saw 28 tok/s with F5 open against 42-48 without
BUSY_CPU = Pace(updates_hz=4.0, markdown_every_s=10.0, dashboard_every_s=1.0)
FREE_CPU = Pace(updates_hz=12.0, markdown_every_s=1.0, dashboard_every_s=0.25)


def engine_fills_cpu(threads: int, layers_on_cpu: bool, cores: int | None = None) -> bool:
    """The engine has a thread on every physical core and work for them (layers on the CPU)."""
    return layers_on_cpu and threads >= (cores if cores is not None else count_physical_cores())


def pace(threads: int, layers_on_cpu: bool, cores: int | None = None) -> Pace:
    """How the screen streams a reply from an engine with ``threads`` on this machine."""
    return BUSY_CPU if engine_fills_cpu(threads, layers_on_cpu, cores) else FREE_CPU


def over_ssh(environ: Mapping[str, str] | None = None) -> bool:
    """The app's terminal is at the other end of an SSH connection (sshd sets these)."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"))
