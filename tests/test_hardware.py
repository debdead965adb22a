"""CPU, RAM and GPUs: the real ``NvmlProbe`` over a stand-in NVML library (the one layer faked
here: this machine has no GPU), the real NVML where it is installed, and the hw command."""

from __future__ import annotations

import json
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from conftest import kernel_physical_cores

from workstation.cli import main
from workstation.core import hardware
from workstation.core.hardware import FakeGpuProbe, NvmlProbe

GIB = 1024**3


class _NvmlError(Exception):
    pass


def _fake_nvml(cards: list[dict[str, Any]], *, init_fails: bool = False) -> types.ModuleType:
    """A module with pynvml's names that answers like NVML would for ``cards`` (each a dict
    of name, total/used GiB, max memory clock MHz, bus width bits; ``broken`` fails its reads)."""
    nv = types.ModuleType("pynvml")
    nv.NVMLError = _NvmlError  # type: ignore[attr-defined]
    nv.NVML_CLOCK_MEM = 2  # type: ignore[attr-defined]
    nv.NVML_TEMPERATURE_GPU = 0  # type: ignore[attr-defined]

    def init() -> None:
        if init_fails:
            raise _NvmlError("NVML Shared Library Not Found")

    def card(h: int) -> dict[str, Any]:
        if cards[h].get("broken"):
            raise _NvmlError("GPU is lost")
        return cards[h]

    nv.nvmlInit = init  # type: ignore[attr-defined]
    nv.nvmlSystemGetDriverVersion = lambda: b"550.54"  # type: ignore[attr-defined]
    nv.nvmlDeviceGetCount = lambda: len(cards)  # type: ignore[attr-defined]
    nv.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    nv.nvmlDeviceGetName = lambda h: card(h)["name"].encode()  # type: ignore[attr-defined]
    nv.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(  # type: ignore[attr-defined]
        total=card(h)["total"] * GIB, used=card(h)["used"] * GIB, free=(card(h)["total"] - card(h)["used"]) * GIB
    )
    nv.nvmlDeviceGetMaxClockInfo = lambda h, _kind: card(h)["mem_clock_mhz"]  # type: ignore[attr-defined]
    nv.nvmlDeviceGetMemoryBusWidth = lambda h: card(h)["bus_bits"]  # type: ignore[attr-defined]
    nv.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=37, memory=12)  # type: ignore[attr-defined]
    nv.nvmlDeviceGetTemperature = lambda h, _sensor: 61  # type: ignore[attr-defined]
    nv.nvmlDeviceGetPowerUsage = lambda h: 215_500  # type: ignore[attr-defined]  # milliwatts

    def no_power_limit(h: int) -> float:
        raise _NvmlError("Not Supported")  # consumer cards often refuse some reads

    nv.nvmlDeviceGetEnforcedPowerLimit = no_power_limit  # type: ignore[attr-defined]
    return nv


def test_nvml_probe_reads_cards_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    cards = [
        # RTX 4090: GDDR6X at 10501 MHz on a 384-bit bus, which NVIDIA publishes as 1008 GB/s
        {"name": "NVIDIA GeForce RTX 4090", "total": 24, "used": 3, "mem_clock_mhz": 10501, "bus_bits": 384},
        {"name": "NVIDIA GeForce RTX 3060", "broken": True},
        # a card NVML gives no clocks for: the published table answers
        {"name": "Tesla T4", "total": 16, "used": 1, "mem_clock_mhz": 0, "bus_bits": 0},
    ]
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(cards))
    a, t4 = NvmlProbe().gpus()  # the lost card is left out, the others still come through
    assert (a.index, a.name, t4.index, t4.name) == (0, "NVIDIA GeForce RTX 4090", 2, "Tesla T4")
    assert a.vram_free == 21 * GIB and a.vram_used == 3 * GIB and a.driver == "550.54"
    assert a.bandwidth_gbps == pytest.approx(hardware.GPU_BANDWIDTH_GBPS["RTX 4090"], rel=0.01)
    assert t4.bandwidth_gbps == 320
    assert (a.util_percent, a.mem_util_percent, a.temperature_c, a.power_w) == (37.0, 12.0, 61.0, 215.5)
    assert a.power_limit_w is None  # not supported: left empty, not an error


def test_no_nvml_library_or_driver_is_an_empty_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([], init_fails=True))
    assert NvmlProbe().gpus() == []
    monkeypatch.setitem(sys.modules, "pynvml", None)  # nvidia-ml-py not installed: import fails
    assert NvmlProbe().gpus() == []


def test_real_nvml_agrees_with_the_driver() -> None:
    """The real library: as many cards as NVML itself counts (none on a machine without a driver)."""
    import pynvml

    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError:
        count = 0
    gpus = NvmlProbe().gpus()
    assert len(gpus) == count
    for g in gpus:
        assert g.vram_total > 0 and 0 <= g.vram_free <= g.vram_total and g.name


def test_bandwidth_table_matches_the_longest_name() -> None:
    assert hardware.gpu_bandwidth_gbps("NVIDIA GeForce RTX 4060 Ti") == 288  # not the RTX 4060's 272
    assert hardware.gpu_bandwidth_gbps("NVIDIA GeForce RTX 4070 Ti SUPER") == 672
    assert hardware.gpu_bandwidth_gbps("NVIDIA H100 80GB HBM3") == 2000
    assert hardware.gpu_bandwidth_gbps("Some Future Card") == hardware.DEFAULT_GPU_BANDWIDTH_GBPS


def test_cpu_memory_and_sample() -> None:
    cpu = hardware.cpu_info()
    assert cpu.physical_cores >= 1 and cpu.logical_cores >= cpu.physical_cores and cpu.model
    kernel = kernel_physical_cores()
    if kernel is not None:  # Linux: the kernel's own list of cores
        assert hardware.count_physical_cores() == kernel == cpu.physical_cores
    mem = hardware.memory_info()
    assert 0 < mem.available <= mem.total
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        total_kib = int(next(ln for ln in meminfo.read_text().splitlines() if ln.startswith("MemTotal:")).split()[1])
        assert mem.total == total_kib * 1024
    s = hardware.sample(FakeGpuProbe.of(("RTX 3060", 12, 10)))
    assert 0 <= s.cpu_percent <= 100 and s.ram_total == mem.total and s.process_rss > 0
    assert s.ram_used == s.ram_total - s.ram_available
    (g,) = s.gpus
    assert (g.vram_used, g.vram_total) == (2 * GIB, 12 * GIB)  # used = total - free
    # a decode on the CPU reads at most what the cores and the RAM can stream
    assert hardware.cpu_bandwidth_gbps(2) == 2 * hardware.PER_CORE_BANDWIDTH_GBPS
    assert hardware.cpu_bandwidth_gbps(64) == hardware.RAM_BANDWIDTH_GBPS


def test_hw_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["hw"]) == 0
    out = capsys.readouterr().out
    assert f"{hardware.cpu_info().physical_cores}" in out and "CPU:" in out
    monkeypatch.setenv(
        "WORKSTATION_FAKE_GPUS",
        json.dumps([{"name": "RTX 4070", "vram_total_gb": 12, "vram_free_gb": 11}, {"name": "T4", "vram_total_gb": 16}]),
    )
    assert main(["hw", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cpu"]["physical_cores"] == hardware.cpu_info().physical_cores and data["memory"]["total"] > 0
    first, second = data["gpus"]
    assert first["vram_used"] == 1 * GIB and first["bandwidth_gbps"] == 504
    assert second["vram_free"] == 16 * GIB and second["bandwidth_gbps"] == 320  # free defaults to all of it
    assert (data["memory_limit_left"] is None) == (hardware.memory_left_under_limits() is None)  # (no limit here: None)
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:  # under a limit (one far past any use, as ulimit -v sets it): what it leaves, not None
        resource.setrlimit(resource.RLIMIT_AS, (2**60 if hard == resource.RLIM_INFINITY else hard, hard))
        assert main(["hw", "--json"]) == 0
        left = json.loads(capsys.readouterr().out)["memory_limit_left"]
        assert isinstance(left, int) and 0 < left < 2**60, left
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert main(["hw", "--lang", "tr"]) == 0  # in the app's language or --lang's (it was English on a Turkish PC)
    out = capsys.readouterr().out
    assert " çekirdek, " in out and "\nGPU 0:  RTX 4070: 12 GB VRAM içinden 11 GB boş; %" in out, out
    # under a memory limit (ulimit -v here), what it leaves is said beside the machine's free memory
    import subprocess

    limited = subprocess.run(
        [sys.executable, "-m", "workstation.cli", "hw"], capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).parent.parent, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (3 * GIB, resource.RLIM_INFINITY)))
    assert limited.returncode == 0 and re.search(r"free of [\d.]+ GB \(a memory limit leaves this program "
                                                 r"[\d.]+ [GM]B\)", limited.stdout), limited.stdout + limited.stderr


def test_a_cgroup_memory_limit_is_read_in_v1_and_in_v2s_own_group(tmp_path: Path) -> None:
    """Under cgroup v1 (Docker on Ubuntu 20.04, RHEL 8) only v2's memory.max was read: `fit` said
    a 128K context runs under a 2 GB limit, and the kernel killed the load with no word."""
    def group(path: Path, limit: int, used: int, inactive: int) -> None:
        path.mkdir(parents=True)
        (path / "memory.limit_in_bytes").write_text(f"{limit}\n")
        (path / "memory.usage_in_bytes").write_text(f"{used}\n")
        (path / "memory.stat").write_text(f"cache 5\ninactive_file 1\ntotal_inactive_file {inactive}\n")

    v1 = tmp_path / "memory"
    group(v1, 9223372036854771712, 9 * GIB, 0)  # the root: no limit
    group(v1 / "office", 3 * GIB, 2 * GIB, GIB // 2)  # a limit above the process's own group
    group(v1 / "office" / "app", 4 * GIB, GIB, 0)
    own = "12:pids:/office/app\n4:memory:/office/app\n0::/\n"
    assert hardware.cgroup_memory_left(tmp_path, own) == 3 * GIB - (2 * GIB - GIB // 2)
    # a container sees its own group at the root (the host's path in /proc/self/cgroup is not there)
    (v1 / "memory.limit_in_bytes").write_text(f"{2 * GIB}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{GIB}\n")
    assert hardware.cgroup_memory_left(tmp_path, "4:memory:/docker/0123abcd\n") == GIB
    assert hardware.cgroup_memory_left(tmp_path / "none", own) is None  # no cgroup: no limit
    # cgroup v2 outside a container: a systemd service's MemoryMax= is its own group's memory.max
    # (only the root's was read, and the root group has none)
    service = tmp_path / "v2" / "system.slice" / "workstation.service"
    service.mkdir(parents=True)
    (service / "memory.max").write_text(f"{2 * GIB}\n")
    (service / "memory.current").write_text(f"{GIB}\n")
    (service / "memory.stat").write_text(f"anon {GIB}\ninactive_file {GIB // 4}\n")
    assert hardware.cgroup_memory_left(tmp_path / "v2", "0::/system.slice/workstation.service\n") == GIB + GIB // 4
    assert hardware.cgroup_memory_left(tmp_path / "v2", "0::/\n") is None
