"""The lock file one process holds (``core/file_lock.HeldFile``: serve's data folder, batch's
output folder): what the one refused reads in it, and nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from workstation.core.file_lock import HeldFile, LockHeld


def test_the_one_refused_reads_the_holders_words_alone_and_the_file_goes_with_the_lock(tmp_path: Path) -> None:
    """A lock file a killed holder left with its longer words ("pid 123456 port 18000") says only
    the new holder's after it writes ("pid 7"), not their tail; released, the file is gone and the
    lock can be taken again."""
    path = tmp_path / "serve.lock"
    path.write_text("pid 123456 port 18000")
    held = HeldFile(path)
    held.write("pid 7")
    with pytest.raises(LockHeld) as refused:
        HeldFile(path)
    assert refused.value.holder == "pid 7"
    held.release()
    assert not path.exists()
    again = HeldFile(path)
    again.release()
