"""One message class per event that workers post to the app (workers never touch widgets)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message

from workstation.core.engine_process import EngineProcess, EngineStopped
from workstation.core.errors import WorkstationError
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import Phrase
from workstation.core.profiles import Profile
from workstation.core.table_facts import SheetFacts


class TokenStreamed(Message):
    """A piece of the reply arrived (``count`` generated tokens, batched by the worker);
    ``reasoning``: a reasoning model's thinking that came with it."""

    def __init__(self, text: str, count: int = 1, reasoning: str = "") -> None:
        super().__init__()
        self.text = text
        self.count = count
        self.reasoning = reasoning


class ServerWaited(Message):
    """Nothing yet from the remote server: it queues the request behind the person's own other
    one (``own``), or it is slow to answer; ``stalled``: nothing more from it for ``seconds``
    in the middle of the reply; ``held``: the server's code for why it holds the request back
    (``ServerWaiting.held``)."""

    def __init__(self, own: bool, stalled: bool = False, seconds: float = 0.0, held: str = "") -> None:
        super().__init__()
        self.own = own
        self.stalled = stalled
        self.seconds = seconds
        self.held = held


class PromptProgressed(Message):
    """A part of a long prompt has been read: ``fraction`` of what there was to read (0 to 1);
    ``read``: the prompt's tokens in the cells now (the cached ones too), of its ``total``."""

    def __init__(self, fraction: float, read: int = 0, total: int = 0) -> None:
        super().__init__()
        self.fraction = fraction
        self.read = read
        self.total = total


class TurnFinished(Message):
    """The reply ended (end of text, length, or cancelled: ``metrics.stop_reason``)."""

    def __init__(self, text: str, metrics: TurnMetrics, reasoning: str = "") -> None:
        super().__init__()
        self.text = text
        self.metrics = metrics
        self.reasoning = reasoning


class EngineFailed(Message):
    """A load or a turn failed; ``reason`` is one sentence for the user."""

    def __init__(self, reason: str, during: str = "turn", unreachable: bool = False, too_long: bool = False,
                 refused: bool = False, lost: WorkstationError | None = None, not_answering: str = "") -> None:
        super().__init__()
        self.reason = reason
        # the engine is lost (its process stopped: ``EngineStopped``; its model file changed):
        # the app says why and loads the model again (``ModelLoading._engine_lost``)
        self.lost = lost
        self.during = during  # turn | load
        self.unreachable = unreachable  # the engine's server could not be reached (it may be back later)
        self.too_long = too_long  # the message is more than the context holds, even alone
        self.refused = refused  # the server refused it before a word (the key, the day's tokens, all busy)
        self.not_answering = not_answering  # the refusal's phrase, where the server refuses every request (status_line)


class EngineExited(Message):
    """The engine's process ended while idle, or at least not by ``close`` (``EngineProcess.watch``)."""

    def __init__(self, engine: EngineProcess, error: EngineStopped) -> None:
        super().__init__()
        self.engine = engine
        self.error = error


class LoadProgress(Message):
    def __init__(self, profile: Profile, fraction: float) -> None:
        super().__init__()
        self.profile = profile
        self.fraction = fraction


class ProfileLoaded(Message):
    """An engine is ready. ``restored`` is True when it is the previous profile brought back
    after the new one failed to load, or the chat's own engine after the API could not start
    (``serve_failed``); ``reason`` says why."""

    def __init__(
        self,
        engine: EngineProcess,
        profile: Profile,
        restored: bool = False,
        reason: str = "",
        api: Any = None,
        serve_failed: bool = False,
        serve_stopped: bool = False,
        notes: list[Any] | None = None,
        switch_stopped_api: Profile | None = None,
    ) -> None:
        super().__init__()
        self.switch_stopped_api = switch_stopped_api  # another profile loaded while this one was served
        self.notes = notes or []  # load_notes.load_notes: settings that load but work against the user
        self.serve_failed = serve_failed
        self.serve_stopped = serve_stopped  # Ctrl+G again: the API stopped, the chat's own engine is back
        self.engine = engine
        self.profile = profile
        self.restored = restored
        self.reason = reason
        self.api = api  # the API server the engine is a client of, if serving


@dataclass
class GpuReading:
    index: int
    name: str
    utilization: float | None  # percent
    vram_used: int | None  # bytes
    vram_total: int | None
    temperature: float | None  # Celsius
    power: float | None  # watts


class SystemSampled(Message):
    """CPU, RAM and GPUs now (sampled in a thread worker)."""

    def __init__(self, cpu: float, ram_used: int, ram_total: int, gpus: list[GpuReading],
                 cpu_others: float | None = None) -> None:
        """``cpu_others``: cores other programs kept busy over the last second, the app's own use
        taken out (``thread_policy.CpuLoad.others``, as a reply's thread choice counts them)."""
        super().__init__()
        self.cpu = cpu
        self.ram_used = ram_used
        self.ram_total = ram_total
        self.gpus = gpus
        self.cpu_others = cpu_others


class DocumentRead(Message):
    """A document read for attaching: its text, what its reader left out (``Document.notes``), and
    its tables' facts (``Document.facts``)."""

    def __init__(self, path: str, text: str, notes: list[Phrase] | None = None,
                 facts: list[SheetFacts] | None = None) -> None:
        super().__init__()
        self.path = path
        self.text = text
        self.notes = notes or []
        self.facts = facts or []


class TableFactsRead(Message):
    """The facts of an attached document's tables, counted again from its file (``Attachments._recount_facts``)."""

    def __init__(self, path: Path, facts: list[SheetFacts]) -> None:
        super().__init__()
        self.path = path
        self.facts = facts


class VersionsWeighed(Message):
    """Whether ``document``, attached after ``before``, is a second version of it
    (``document_changes.looks_like_versions``, weighed off the screen's thread: ``Attachments._weigh_versions``)."""

    def __init__(self, before: tuple[Path, str], document: tuple[Path, str], alike: bool) -> None:
        super().__init__()
        self.before = before
        self.document = document
        self.alike = alike


class AttachedFileFound(Message):
    """Where the document of a message put back by Up was attached from (``Attachments._find_attached_file``):
    ``path`` None where no kept file has its text now; ``facts``, its tables' facts read with it."""

    def __init__(self, document: tuple[Path, str], path: Path | None, facts: list[SheetFacts]) -> None:
        super().__init__()
        self.document = document
        self.path = path
        self.facts = facts


class HolderFound(Message):
    """Another of the user's profiles that holds an attached document too long for this one
    whole (``attaching.Holder``), or None: none does."""

    def __init__(self, document: tuple[Path, str], holder: Any, searched_for: Profile) -> None:
        super().__init__()
        self.document = document
        self.holder = holder
        self.searched_for = searched_for  # the profile it was too long for (left out of the search)


class AttachmentMeasured(Message):
    """An attached document's tokens (as a message of its own), the most a message may hold,
    and its text's own tokens (what it adds to a conversation)."""

    def __init__(self, document: tuple[Path, str], tokens: int, room: int, n_ctx: int, own: int) -> None:
        super().__init__()
        self.document = document
        self.tokens = tokens
        self.room = room
        self.n_ctx = n_ctx
        self.own = own


class AttachmentNotMeasured(Message):
    """An attached document could not be measured (the model, or the office server, failed):
    why, said (F6's Ctrl+K said "still being measured" for ever)."""

    def __init__(self, document: tuple[Path, str], error: BaseException) -> None:
        super().__init__()
        self.document = document
        self.error = error


class TaskFailed(Message):
    """A background task other than the engine failed (a file, a pull, a fit check)."""

    def __init__(self, reason: str, error: Exception | None = None) -> None:
        super().__init__()
        self.reason = reason
        self.error = error  # what ``reason`` says, for a screen that says it again (F9's language of now)


class Progress(Message):
    """Progress of a long task on a screen (pull, summarize): done of total, with a label."""

    def __init__(self, done: float, total: float | None, label: str = "", data: Any = None) -> None:
        super().__init__()
        self.done = done
        self.total = total
        self.label = label
        self.data = data
