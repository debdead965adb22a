"""The RAM free for a model: what is free now less a reserve for the system and the office's
other programs, or what a memory limit (``ulimit -v``, a cgroup) leaves this process; and,
where a model's weights do not all fit beside the rest, why it runs slowly (its weights are
read from the disk again for every token) and what makes it fast."""

from __future__ import annotations

from workstation.core.catalog import human_bytes
from workstation.core.hardware import MIB
from workstation.core.phrases import Phrase

RAM_RESERVE_BYTES = 1024 * MIB  # leave the OS and the office apps room


def ram_free_now() -> tuple[int, int | None]:
    """The RAM free now (psutil's available), and what a memory limit (ulimit -v, a cgroup)
    leaves this process where that is less (None where there is none): the RAM free is then
    the limit plus the reserve, which is for other programs, not within the limit."""
    import psutil

    from workstation.core.hardware import memory_left_under_limits

    available = psutil.virtual_memory().available
    limit = memory_left_under_limits()
    if limit is not None and limit + RAM_RESERVE_BYTES < available:
        return limit + RAM_RESERVE_BYTES, limit
    return available, None


def paged_phrase(paged: int, need: int, free: int, limited: bool, total: int) -> Phrase:
    """Why a plan whose weights do not all fit in the memory free (``paged`` bytes of them
    are read from the disk again for every token) runs slowly, and how much more free memory
    makes it fast. ``need``: the RAM it wants; ``free``: what is free for it (less the reserve; the limit's room under
    one); ``limited``: under a memory limit (more room is a larger limit, not other programs
    closed); ``total``: the PC's memory (where it is all too little, closing programs does
    not make the room: more memory in the PC does)."""
    how: Phrase = ("fit.paged_limit", {}) if limited else ("fit.paged_close", {}) \
        if need <= total - RAM_RESERVE_BYTES else ("fit.paged_more_ram", {"total": human_bytes(total)})
    return ("fit.paged_why", {"need": human_bytes(need), "free": human_bytes(free), "short": human_bytes(paged),
                              "how": how})
