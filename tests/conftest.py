"""Shared fixtures: the real PyPI-packaged models and small profiles built in code."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

# None of the user's own settings reach the tests (a test sets what it is about): with
# WORKSTATION_PROFILE naming a model not downloaded here, `chat` without -p failed; with
# WORKSTATION_DATA set, the module-scoped engines recorded their loads in the user's real data
# folder; WORKSTATION_ALLOW_ROOT let root through where a test expects it refused; advice names
# the command that started us (WORKSTATION_COMMAND, which a shell opened from ./run.sh has).
# A process this suite starts (an xdist worker, a script a test runs that imports this file)
# keeps what the suite gave it: the test's own data folder among it.
if os.environ.get("WORKSTATION_TEST_RUN") != "1":
    for _name in [name for name in os.environ if name.startswith("WORKSTATION_")]:
        del os.environ[_name]
    os.environ["WORKSTATION_TEST_RUN"] = "1"
    # Tests never touch the user's real data directory, nor the checkout: a model loaded by a
    # module-scoped fixture (before the per-test folder below) records its memory check somewhere.
    _TEST_DATA = tempfile.mkdtemp(prefix="workstation-tests-")
    os.environ["WORKSTATION_DATA"] = _TEST_DATA
    atexit.register(shutil.rmtree, _TEST_DATA, ignore_errors=True)  # each run left one behind
# the terminal the app draws for is the same wherever the tests run: a UTF-8 language setting
# (LANG=C or POSIX would send the snapshots ASCII, glyphs.terminal_charset), not the Linux
# console, in colour, not over SSH (the cursor would not blink), English unless a test says
os.environ["LANG"] = "C.UTF-8"
for _name in ("LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LANGUAGE", "NO_COLOR", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"):
    os.environ.pop(_name, None)
if os.environ.get("TERM", "").startswith("linux") or os.environ.get("TERM") in (None, "", "dumb"):
    os.environ["TERM"] = "xterm-256color"

from workstation.core.packaged_models import ensure  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profiles import Profile  # noqa: E402

if TYPE_CHECKING:
    from workstation.core.sizing import SizingResult

SMOLLM2 = "smollm2-135m-instruct-q4_1"
GEMMA = "gemma-3-270m-q4_k_m"
TINY = Path(__file__).parent / "hostile" / "tiny-valid.gguf"  # a valid GGUF of a few KB


def wait_until(condition: Callable[[], object], what: str, limit_s: float, every_s: float = 0.05) -> None:
    """Wait until ``condition()`` holds, looking every ``every_s``; fail after ``limit_s``
    seconds, saying ``what`` was waited for. Never asserts on time itself."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {limit_s:g} s, in vain, for: {what}")
        time.sleep(every_s)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m alone`` (test.sh's second part) reads only the test files that mark a test so:
    importing every other one to find none took 10 s, alone on the machine, of the suite's 15
    minutes."""
    if (config.option.markexpr == "alone" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")):
        return "mark.alone" not in collection_path.read_text(encoding="utf-8") or None
    return None


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path_factory.mktemp("data")))
    monkeypatch.delenv("TMUX", raising=False)  # (the copy notices add a line for tmux: a test run in tmux reads the same)


@pytest.fixture(autouse=True)
def _priority_kept() -> Iterator[None]:
    """A test leaves this process's priority as it found it: `batch` lowers its own (nice 10)
    for good, and once run by main() here every later test of this pytest worker, in this file
    and the next, ran behind everything else on the machine."""
    before = os.nice(0)
    yield
    assert os.nice(0) == before, (f"the test lowered this process's priority (nice {before} -> {os.nice(0)}): "
                                  "run what lowers it (batch) in a process of its own")


@pytest.fixture(autouse=True)
def _ctrl_c_kept() -> Iterator[None]:
    """A test leaves Ctrl-C's handler as it found it. An async test that read it inside its loop
    read asyncio's own (set for the loop's run only), put that back after the loop, and a later
    test of this process (Ctrl-C during a load) found asyncio's handler in place of Python's."""
    before = signal.getsignal(signal.SIGINT)
    yield
    assert signal.getsignal(signal.SIGINT) is before, (
        "the test left another Ctrl-C handler in place: take the signals_kept fixture, which reads "
        "the handlers before the test's event loop runs")


@pytest.fixture
def signals_kept() -> Iterator[None]:
    """The handlers of the signals the app takes (``quit_on_signals``), read before the test's
    event loop runs and put back after it: read inside the loop, Ctrl-C's is asyncio's own."""
    from workstation.tui.quitting import QUIT_SIGNALS

    before = {sig: signal.getsignal(sig) for sig in (*QUIT_SIGNALS, signal.SIGCONT)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


@pytest.fixture
def steady_ram(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int | None]:
    """This PC's free memory (``ram_free_now``) read once and held for the test: a test that
    sizes a context by one reading and plans or loads it by the next was judged against
    another figure (the suite's other process loads and closes models beside it; CI saw the
    free memory move by a GB between two reads)."""
    from workstation.core import draft_plan, planner, ram_room

    now = ram_room.ram_free_now()
    for module in (ram_room, planner, draft_plan):  # (each holds the name it imported)
        monkeypatch.setattr(module, "ram_free_now", lambda: now)
    return now


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    return ensure(SMOLLM2)


@pytest.fixture(scope="session")
def gemma_path() -> Path:
    return ensure(GEMMA)


def requantized_copy(src: Path, qtype: str) -> Path:
    """``src`` requantized to ``qtype`` by llama.cpp's quantizer, kept beside it and reused
    (``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``SmolLM2-135M-Instruct.Q8_0.gguf``)."""
    from workstation.core.quantize import quantize_model

    dest = src.with_name(f"{src.name.rsplit('.', 2)[0]}.{qtype.upper()}.gguf")
    if not dest.exists():
        quantize_model(src, dest, qtype, allow_requantize=True)
    return dest


# A reasoning model's template (DeepSeek-R1's, Qwen3's with thinking on) opens the thinking
# block itself: the generation prompt ends with "<think>" and the reply starts inside it. With
# enable_thinking false it writes an empty block instead, as Qwen3's does.
THINKING_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}"
)


@pytest.fixture(scope="session")
def thinking_model_path(smollm2_path: Path) -> Path:
    """SmolLM2 with a reasoning model's chat template (``THINKING_TEMPLATE``), written by the
    ``gguf`` package's own ``gguf_new_metadata`` once and kept in models/variants/ (where
    ``models list`` does not look)."""
    import hashlib
    import subprocess
    import sys

    digest = hashlib.sha256(THINKING_TEMPLATE.encode()).hexdigest()[:8]
    dest = smollm2_path.parent / "variants" / f"{smollm2_path.stem}.thinking-{digest}.gguf"
    if not dest.exists():
        dest.parent.mkdir(exist_ok=True)
        part = dest.with_suffix(f".{os.getpid()}.part")  # (two test workers may write it at once)
        subprocess.run(
            [sys.executable, "-m", "gguf.scripts.gguf_new_metadata", "--chat-template", THINKING_TEMPLATE,
             "--force", str(smollm2_path), str(part)],
            check=True, capture_output=True,
        )
        part.replace(dest)
    return dest


def as_turkish(figure: str) -> str:
    """A figure as English writes it (1,599.5) the Turkish way (1.599,5): the separators swapped."""
    return figure.translate(str.maketrans(".,", ",."))


def kernel_physical_cores() -> int | None:
    """Physical cores as the kernel lists them: distinct (physical id, core id) pairs."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return None
    pairs = set()
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if "core id" in fields:
            pairs.add((fields.get("physical id", "0"), fields["core id"]))
    return len(pairs) or None


ProfileFactory = Callable[..., Profile]


def make_profile(model: str | Path = SMOLLM2, **overrides: Any) -> Profile:
    """A profile for tests: greedy, small context, one thread, no system prompt.

    One thread: llama.cpp's threads wait for each other spinning, and the suite runs in two
    processes on a machine of two cores that others share; a second thread per process made
    each model call several times slower (and burned the other process's CPU while waiting)."""
    data: dict[str, Any] = {
        "name": "test",
        "model": str(model),
        "context": 2048,
        "threads": 1,
        "gpu_layers": 0,
        "sampling": {"temperature": 0.0, "max_tokens": 48, "seed": 1, "repeat_penalty": 1.0},
        "system_prompt": "",
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return profile_from_dict(data, "<test profile>")


def write_profile_file(path: Path, profile: Profile | None = None, **overrides: Any) -> Path:
    """``profile`` (else ``make_profile(**overrides)``) written to ``path`` as a YAML profile,
    every setting in it (its ``source`` left out); with a ``profile``, ``overrides`` are laid
    over its settings as make_profile lays them (a dict merged into a section)."""
    if profile is None:
        profile = make_profile(**overrides)
        overrides = {}
    data = profile.to_dict()
    data.pop("source", None)
    for key, value in overrides.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture
def profile_factory(smollm2_path: Path) -> ProfileFactory:
    return make_profile


@pytest.fixture(scope="module")
def engine(smollm2_path: Path) -> Iterator[Any]:
    """One loaded SmolLM2 engine per test module (greedy, context 2048)."""
    from workstation.core.engine import Engine

    eng = Engine(make_profile())
    yield eng
    eng.close()


@pytest.fixture
def models_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty models/ folder (the catalog still comes from the checkout)."""
    home = tmp_path / "models"
    home.mkdir()
    monkeypatch.setenv("WORKSTATION_MODELS", str(home))
    return home


def table_only(workload_ref: str = "office-20", people: int | None = None, **over: object) -> SizingResult:
    """The sizing of a shipped workload over the shipped GPU table only: the same on every
    machine (this machine's CPU is left out); ``people``: for that many (as ``size --people``);
    ``over`` changes the workload's settings."""
    from workstation.core.sizing import candidate_machines, size
    from workstation.core.workload import load_workload, workload_from_dict

    w = load_workload(workload_ref, people)
    if over:
        data = w.to_dict()
        data.pop("source")
        data.update(over)
        w = workload_from_dict(data, "<test>")
    return size(w, candidate_machines(w, []))


def workload_file(folder: Path, workload_ref: str = "office-20", **over: object) -> Path:
    """``folder/office.yaml``: a shipped workload with ``over`` changing its settings, for
    `size FILE` (one model instead of the catalog's: a fifth of the sizing's CPU)."""
    from workstation.core.workload import load_workload

    data = {k: v for k, v in load_workload(workload_ref).to_dict().items() if k != "source"}
    path = folder / "office.yaml"
    path.write_text(json.dumps({**data, **over}), encoding="utf-8")
    return path


def kld_profile_file(folder: Path, name: str, model: Path) -> Path:
    """``folder/name.yaml``: a profile of ``model`` as eval --kld is given it, with only the
    settings written here (context 256, one thread, CPU); sampling is left to its defaults."""
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\nmodel: {model}\ncontext: 256\nthreads: 1\ngpu_layers: 0\nsystem_prompt: ''\n",
        encoding="utf-8",
    )
    return path


# Gemma 3's chat template (as its GGUF carries it): it refuses two user messages in a row.
GEMMA3 = (
    "{{ bos_token }}{%- if messages[0]['role'] == 'system' -%}{%- set first = messages[0]['content'] + '\\n\\n' -%}"
    "{%- set loop_messages = messages[1:] -%}{%- else -%}{%- set first = '' -%}{%- set loop_messages = messages -%}{%- endif -%}"
    "{%- for message in loop_messages -%}{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{%- endif -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\\n' + (first if loop.first else '') + message['content'] | trim }}"
    "<end_of_turn>\n{%- endfor -%}{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)


# --- the TUI tests' profiles (test_tui.py, test_tui_screens.py) -----------------------------------
def tui_profile(path: Path, model: str, **over: object) -> None:
    """A profile file for the app: greedy, context 1024, one thread, 8 tokens a reply."""
    data: dict[str, object] = {
        "name": path.stem.upper(),
        "model": model,
        "context": 1024,
        "threads": 1,
        "gpu_layers": 0,
        "sampling": {"temperature": 0.0, "max_tokens": 8, "seed": 1, "repeat_penalty": 1.0},
        "system_prompt": "",
    }
    data.update(over)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def as_shipped_profiles(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """``folder`` stands for the app's profiles: the shipped ones (in this process) and the
    office's (WORKSTATION_PROFILES, which a command run as a child process lists before them)."""
    from workstation.core import paths

    monkeypatch.setattr(paths, "SHIPPED_PROFILES", folder)
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))


@pytest.fixture
def profiles(tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The app's profiles folder: a, b (K q8_0, 400 tokens a reply) and broken (no model)."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    tui_profile(folder / "a.yaml", str(smollm2_path))
    tui_profile(
        folder / "b.yaml", str(smollm2_path), kv_cache={"k": "q8_0", "v": "f16"},
        sampling={"temperature": 0.0, "max_tokens": 400, "seed": 1, "repeat_penalty": 1.0},
    )
    tui_profile(folder / "broken.yaml", str(tmp_path / "missing.gguf"))
    as_shipped_profiles(monkeypatch, folder)
    return folder


# --- a program in a terminal of its own (a pty) ---------------------------------------------------
def read_terminal(fd: int, until: Callable[[bytes], bool], limit_s: float, what: str) -> bytes:
    """What the app draws, read until ``until`` says so (or the terminal is gone); with no
    ``what``, read for ``limit_s`` and no more."""
    import os
    import select
    import time

    seen, deadline = b"", time.monotonic() + limit_s
    while not until(seen):
        if time.monotonic() >= deadline and not what:
            break
        assert time.monotonic() < deadline, f"never {what}"
        if select.select([fd], [], [], 0.2)[0]:
            try:
                more = os.read(fd, 65536)
            except OSError:
                break
            if not more:
                break
            seen += more
    return seen


def wait_for_exit(pid: int, limit_s: float, what: str) -> int:
    import os
    import time

    deadline = time.monotonic() + limit_s
    while (ended := os.waitpid(pid, os.WNOHANG)) == (0, 0):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return os.waitstatus_to_exitcode(ended[1])


@contextmanager
def app_in_a_terminal(*args: str, memory_limit: int | None = None, **env: str) -> Iterator[tuple[int, int]]:
    """``workstation tui ARGS`` in a real terminal (a pty, its controlling terminal): its pid
    and the terminal's end to read and type into; killed and reaped on the way out.
    ``memory_limit``: bytes of address space it runs under, as ``ulimit -v`` sets them."""
    import pty
    import resource
    import sys

    pid, fd = pty.fork()
    if pid == 0:  # the child: the app
        os.environ.update({"TERM": "xterm-256color", **env})
        if memory_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, resource.RLIM_INFINITY))
        os.execv(sys.executable, [sys.executable, "-m", "workstation", "tui", *args])
    try:
        yield pid, fd
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        try:
            os.close(fd)
        except OSError:
            pass
