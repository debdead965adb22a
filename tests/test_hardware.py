"""CPU, RAM and GPUs: the real NVML path (no GPU here is a normal answer) and the fake probe."""

from __future__ import annotations

import json

import pytest

from workstation.cli import main
from workstation.core import hardware
from workstation.core.hardware import FakeGpuProbe, NvmlProbe


def test_nvml_without_gpu_is_an_empty_list() -> None:
    gpus = NvmlProbe().gpus()
    assert isinstance(gpus, list)
    for g in gpus:  # on a machine with a GPU the real values come through
        assert g.vram_total > 0 and 0 <= g.vram_free <= g.vram_total and g.name


def test_fake_probe_and_bandwidth_table() -> None:
    probe = FakeGpuProbe.of(("NVIDIA GeForce RTX 4090", 24, 20), ("Tesla T4", 16, 15))
    a, b = probe.gpus()
    assert a.vram_total == 24 * 1024**3 and a.vram_used == 4 * 1024**3
    assert a.bandwidth_gbps == 1008 and b.bandwidth_gbps == 320
    assert hardware.gpu_bandwidth_gbps("NVIDIA GeForce RTX 4060 Ti") == 288
    assert hardware.gpu_bandwidth_gbps("Some Future Card") == hardware.DEFAULT_GPU_BANDWIDTH_GBPS


def test_cpu_memory_and_sample() -> None:
    cpu = hardware.cpu_info()
    assert cpu.physical_cores >= 1 and cpu.logical_cores >= cpu.physical_cores and cpu.model
    mem = hardware.memory_info()
    assert 0 < mem.available <= mem.total
    s = hardware.sample(FakeGpuProbe.of(("RTX 3060", 12, 10)))
    assert 0 <= s.cpu_percent <= 100 and s.ram_total == mem.total and s.process_rss > 0
    assert len(s.gpus) == 1 and s.gpus[0].vram_used == 2 * 1024**3
    assert hardware.sample(FakeGpuProbe()).gpus == []
    assert hardware.cpu_bandwidth_gbps(2) == 20.0


def test_hw_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["hw"]) == 0
    assert "CPU:" in capsys.readouterr().out
    monkeypatch.setenv("WORKSTATION_FAKE_GPUS", json.dumps([{"name": "RTX 4070", "vram_total_gb": 12, "vram_free_gb": 11}]))
    assert main(["hw", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cpu"]["physical_cores"] >= 1 and data["memory"]["total"] > 0
    assert data["gpus"][0]["name"] == "RTX 4070" and data["gpus"][0]["bandwidth_gbps"] == 504
