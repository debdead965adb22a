"""This machine: CPU, RAM (psutil) and NVIDIA GPUs (NVML through nvidia-ml-py, ``pynvml``).

No GPU, no driver or no NVML library is a normal answer: an empty GPU list, never an error.
GPUs are read through a small ``GpuProbe`` interface so tests can stand in a ``FakeGpuProbe``
(the one thing that is faked: this machine has no GPU). ``WORKSTATION_FAKE_GPUS`` (JSON, a
list of ``{"name": ..., "vram_total_gb": ..., "vram_free_gb": ...}``) puts a fake probe behind
the command line too, so ``workstation fit`` can answer "what if I had this card".
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import platform
import threading
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import psutil

from workstation.core.gpu_table import GpuSpec, find_spec, gpu_specs

MIB = 1024**2
GIB = 1024**3


@dataclass
class GpuInfo:
    index: int
    name: str
    vram_total: int  # bytes
    vram_free: int
    vram_used: int
    util_percent: float | None = None
    mem_util_percent: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    driver: str | None = None
    bandwidth_gbps: float | None = None  # memory bandwidth, GB/s (NVML clocks or the table)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GpuProbe(Protocol):
    """Reads the GPUs now; must be cheap and must return [] when there are none."""

    def gpus(self) -> list[GpuInfo]: ...


class FakeGpuProbe:
    """GPUs given in code (tests, "what if" planning)."""

    def __init__(self, gpus: list[GpuInfo] | None = None) -> None:
        self._gpus = list(gpus or [])

    @classmethod
    def of(cls, *cards: tuple[str, float, float]) -> FakeGpuProbe:
        """``FakeGpuProbe.of(("RTX 4090", 24, 23.5))``: (name, total GiB, free GiB) per card."""
        gpus = []
        for i, (name, total_gb, free_gb) in enumerate(cards):
            total, free = int(total_gb * GIB), int(free_gb * GIB)
            gpus.append(
                GpuInfo(i, name, total, free, total - free, 0.0, 0.0, 40.0, 30.0, 300.0, "fake",
                        gpu_bandwidth_gbps(name))
            )
        return cls(gpus)

    def gpus(self) -> list[GpuInfo]:
        return [GpuInfo(**asdict(g)) for g in self._gpus]


def table_gpu(spec: GpuSpec, index: int = 0) -> GpuInfo:
    """A card of the table as if it were in this PC, all its memory free: what ``size`` and
    ``fit --gpu`` plan on ("what if we bought one")."""
    return GpuInfo(index, spec.name, spec.vram_bytes, spec.vram_bytes, 0, bandwidth_gbps=spec.bandwidth_gbps)


class NvmlProbe:
    """The real thing: NVML. Initialised once; any NVML failure means 'no GPU'."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ok: bool | None = None
        self._nvml: Any = None
        self._driver: str | None = None

    def _init(self) -> bool:
        if self._ok is not None:
            return self._ok
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            try:
                drv = pynvml.nvmlSystemGetDriverVersion()
                self._driver = drv.decode() if isinstance(drv, bytes) else str(drv)
            except Exception:  # noqa: BLE001
                self._driver = None
            self._ok = True
        except Exception:  # noqa: BLE001 - no library, no driver, no device: no GPU
            self._ok = False
        return self._ok

    def gpus(self) -> list[GpuInfo]:
        with self._lock:
            if not self._init():
                return []
            nv = self._nvml
            try:
                count = nv.nvmlDeviceGetCount()
            except Exception:  # noqa: BLE001
                return []
            result = []
            for i in range(count):
                try:
                    h = nv.nvmlDeviceGetHandleByIndex(i)
                    name = nv.nvmlDeviceGetName(h)
                    name = name.decode() if isinstance(name, bytes) else str(name)
                    mem = nv.nvmlDeviceGetMemoryInfo(h)
                except Exception:  # noqa: BLE001
                    continue
                info = GpuInfo(i, name, int(mem.total), int(mem.free), int(mem.used), driver=self._driver)
                info.bandwidth_gbps = _nvml_bandwidth(nv, h) or gpu_bandwidth_gbps(name)
                for attr, fn in (
                    ("util", lambda h=h: nv.nvmlDeviceGetUtilizationRates(h)),
                    ("temperature_c", lambda h=h: float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
                    ("power_w", lambda h=h: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
                    ("power_limit_w", lambda h=h: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
                ):
                    try:
                        value = fn()
                    except Exception:  # noqa: BLE001 - not every card reports everything
                        continue
                    if attr == "util":
                        info.util_percent = float(value.gpu)
                        info.mem_util_percent = float(value.memory)
                    else:
                        setattr(info, attr, value)
                result.append(info)
            return result


def _nvml_bandwidth(nv: Any, handle: Any) -> float | None:
    """Peak memory bandwidth from the max memory clock and bus width (GB/s), if NVML has them."""
    try:
        clock_mhz = nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_MEM)
        bus_bits = nv.nvmlDeviceGetMemoryBusWidth(handle)
    except Exception:  # noqa: BLE001
        return None
    if not clock_mhz or not bus_bits:
        return None
    # NVML reports the memory clock of DDR memory; data moves on both edges
    return round(clock_mhz * 1e6 * 2 * bus_bits / 8 / 1e9, 1)


# Published peak memory bandwidth (GB/s) of common NVIDIA cards: the shipped GPU table
# (workstation/data/gpus.yaml, also what `size` proposes); matched by substring, longest first.
GPU_BANDWIDTH_GBPS: dict[str, float] = {s.match: s.bandwidth_gbps for s in gpu_specs()}
DEFAULT_GPU_BANDWIDTH_GBPS = 250.0  # an unknown card: a cautious mid-range figure
# CPU RAM: a decode on the CPU reads the weights through the cores; a dual-channel DDR4/DDR5
# desktop streams 40-80 GB/s in total, and one core sustains roughly 10 GB/s. Estimates.
RAM_BANDWIDTH_GBPS = 50.0
PER_CORE_BANDWIDTH_GBPS = 10.0


def gpu_bandwidth_gbps(name: str) -> float:
    spec = find_spec(name)
    return spec.bandwidth_gbps if spec else DEFAULT_GPU_BANDWIDTH_GBPS


@functools.cache
def count_physical_cores() -> int:
    """Physical CPU cores this process may use (logical ones where psutil cannot tell): no more
    than the CPUs it is allowed to run on (``taskset``, a container's cpuset) nor its CPU quota
    (``docker --cpus``, cgroup v2 ``cpu.max``). ``threads: auto`` took the machine's 2 cores
    under ``taskset -c 0``, and two threads on one CPU decoded 27% slower than one."""
    cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        cores = min(cores, len(os.sched_getaffinity(0)) or cores)
    return max(1, min(cores, _cpu_quota() or cores))


def _cpu_quota() -> int | None:
    """The CPUs a cgroup v2 quota allows (``cpu.max`` "200000 100000": 2), rounded up; None
    without one."""
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        return None if quota == "max" else max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        return None


def cpu_bandwidth_gbps(physical_cores: int | None = None) -> float:
    """What a CPU decode can read per second (GB/s), an estimate; ``WORKSTATION_RAM_GBPS`` overrides."""
    env = os.environ.get("WORKSTATION_RAM_GBPS")
    if env:
        try:
            given = float(env)
            if math.isfinite(given) and given > 0:  # (0 divided the speed estimate by zero)
                return given
        except ValueError:
            pass
    cores = physical_cores or count_physical_cores()
    return min(RAM_BANDWIDTH_GBPS, PER_CORE_BANDWIDTH_GBPS * cores)


# --- the probe in use -------------------------------------------------------------------------
_probe: GpuProbe | None = None


def _fake_from_env() -> GpuProbe | None:
    raw = os.environ.get("WORKSTATION_FAKE_GPUS")
    if not raw:
        return None
    try:
        cards = json.loads(raw)
        return FakeGpuProbe.of(
            *[(str(c.get("name", "GPU")), float(c["vram_total_gb"]), float(c.get("vram_free_gb", c["vram_total_gb"])))
              for c in cards]
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return FakeGpuProbe([])


def get_probe() -> GpuProbe:
    global _probe
    fake = _fake_from_env()
    if fake is not None:
        return fake
    if _probe is None:
        _probe = NvmlProbe()
    return _probe


def set_probe(probe: GpuProbe | None) -> None:
    """Replace the GPU probe (tests); ``None`` goes back to NVML."""
    global _probe
    _probe = probe


def gpus(probe: GpuProbe | None = None) -> list[GpuInfo]:
    return (probe or get_probe()).gpus()


# --- CPU and RAM ------------------------------------------------------------------------------
@dataclass
class CpuInfo:
    model: str
    physical_cores: int
    logical_cores: int
    flags: list[str] = field(default_factory=list)  # the SIMD features llama.cpp uses
    architecture: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


SIMD_FLAGS = (
    "sse3", "ssse3", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
    "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16", "neon", "asimd",
    "sve",
)


@lru_cache(maxsize=1)
def cpu_info() -> CpuInfo:
    model = ""
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    model = model or platform.processor() or platform.machine()
    return CpuInfo(
        model=model,
        physical_cores=count_physical_cores(),
        logical_cores=psutil.cpu_count(logical=True) or os.cpu_count() or 1,
        flags=[f for f in SIMD_FLAGS if f in flags],
        architecture=platform.machine(),
    )


@dataclass
class MemoryInfo:
    total: int
    available: int
    used: int
    percent: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def memory_left_under_limits() -> int | None:
    """Bytes this process may still take under the limits it runs under, None without one:
    ``ulimit -v`` (RLIMIT_AS, less what it maps now) and a container's cgroup memory limit
    (``cgroup_memory_left``). The plan read the machine's free memory alone: under a 2 GB
    limit ``fit`` said a 128K context runs, and loading it failed with llama.cpp's words."""
    import resource

    left = []
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        with contextlib.suppress(psutil.Error):
            left.append(max(0, soft - psutil.Process().memory_info().vms))
    group = cgroup_memory_left()
    if group is not None:
        left.append(group)
    return min(left) if left else None


_NO_LIMIT = 2**60  # cgroup v1 writes "no limit" as the largest page count (9223372036854771712)


def _own_cgroups(base: Path, proc_cgroup: str, v1: bool) -> set[Path]:
    """This process's group under ``base`` and every one above it: in cgroup v1's memory
    hierarchy, or v2's (its "0::" line). A container sees its own group at the root, and the
    host's path in /proc/self/cgroup does not exist there: the root alone is then read."""
    own = "/"
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and ("memory" in parts[1].split(",") if v1 else parts[:2] == ["0", ""]):
            own = parts[2] or "/"
            break
    names = [p for p in own.split("/") if p]
    return {base.joinpath(*names[:n]) for n in range(len(names) + 1)}


def cgroup_memory_left(root: Path = Path("/sys/fs/cgroup"), proc_cgroup: str | None = None) -> int | None:
    """Bytes the memory cgroup (v2 ``memory.max``, or v1 ``memory.limit_in_bytes``, this process's
    group and those above it) still lets this process's group take, None without a limit. The
    page cache the kernel gives back first is not counted as used (a model file just read or
    pulled is charged to the group, and stays so after the process ends). cgroup v1 (Docker on
    Ubuntu 20.04, RHEL 8, WSL2's default): its limit was not read, ``fit`` said a 128K context
    runs under a 2 GB limit, and the kernel killed the load with no word but "Killed"."""
    def read(path: Path) -> str:
        return path.read_text().strip()

    def stat(path: Path, key: str) -> int:
        for line in read(path).splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
        return 0

    if proc_cgroup is None:
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            proc_cgroup = ""
    left: list[int] = []
    # v2: the own group and those above it (a systemd service's MemoryMax=, a container's group
    # mounted at the root); the root group itself has no memory.max
    for group in _own_cgroups(root, proc_cgroup, v1=False):
        try:
            limit = read(group / "memory.max")
            if limit != "max":
                used = int(read(group / "memory.current")) - stat(group / "memory.stat", "inactive_file")
                left.append(max(0, int(limit) - used))
        except (OSError, ValueError):
            continue
    v1 = root / "memory"
    if (v1 / "memory.limit_in_bytes").exists():
        for group in _own_cgroups(v1, proc_cgroup, v1=True):
            try:
                limit_v1 = int(read(group / "memory.limit_in_bytes"))
                if limit_v1 >= _NO_LIMIT:
                    continue
                used = int(read(group / "memory.usage_in_bytes")) - stat(group / "memory.stat", "total_inactive_file")
                left.append(max(0, limit_v1 - used))
            except (OSError, ValueError):
                continue
    return min(left) if left else None


def memory_info() -> MemoryInfo:
    vm = psutil.virtual_memory()
    return MemoryInfo(int(vm.total), int(vm.available), int(vm.total - vm.available), float(vm.percent))


# SMBIOS chassis types (DMI's /sys/class/dmi/id/chassis_type): a laptop's, and a desktop's or a server's
LAPTOP_CHASSIS = {8, 9, 10, 11, 14, 30, 31, 32}  # portable, laptop, notebook, hand held, sub notebook, tablet, convertible, detachable
DESKTOP_CHASSIS = {3, 4, 5, 6, 7, 13, 15, 16, 17, 23, 24, 35, 36}  # desktop, tower, all in one, rack mount, mini PC…


def is_laptop(sys_root: Path = Path("/sys")) -> bool | None:
    """Whether this PC is a laptop: True where it has a battery of its own (``power_supply``'s
    type Battery, not a wireless mouse's, whose scope is Device) or DMI calls its case a laptop's;
    False where DMI calls it a desktop's or a server's; None where neither says (a virtual
    machine, another system): a graphics card to buy is no advice for a laptop."""
    supplies = sys_root / "class" / "power_supply"
    with contextlib.suppress(OSError):
        for supply in supplies.iterdir():
            kind = _read_text(supply / "type")
            if kind == "Battery" and _read_text(supply / "scope") != "Device":
                return True
    chassis = _read_text(sys_root / "class" / "dmi" / "id" / "chassis_type")
    if chassis and chassis.isdigit():
        if int(chassis) in LAPTOP_CHASSIS:
            return True
        if int(chassis) in DESKTOP_CHASSIS:
            return False
    return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


@dataclass
class HardwareReport:
    cpu: CpuInfo
    memory: MemoryInfo
    gpus: list[GpuInfo]
    cpu_bandwidth_gbps: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu": self.cpu.to_dict(),
            "memory": self.memory.to_dict(),
            "gpus": [g.to_dict() for g in self.gpus],
            "cpu_bandwidth_gbps": self.cpu_bandwidth_gbps,
        }


def report(probe: GpuProbe | None = None) -> HardwareReport:
    cpu = cpu_info()
    return HardwareReport(cpu, memory_info(), gpus(probe), cpu_bandwidth_gbps(cpu.physical_cores))


# --- the dashboard's live sample --------------------------------------------------------------
@dataclass
class GpuSample:
    index: int
    name: str
    util_percent: float | None
    vram_used: int
    vram_total: int
    temperature_c: float | None
    power_w: float | None


@dataclass
class Sample:
    cpu_percent: float
    ram_used: int
    ram_total: int
    ram_available: int
    process_rss: int
    gpus: list[GpuSample]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sample(probe: GpuProbe | None = None) -> Sample:
    """CPU %, RAM and per-GPU utilisation/VRAM/temperature/power now; cheap (no sleeping).

    The CPU figure is the load since the previous call (psutil's non-blocking form), so the
    first call of a process reads 0.
    """
    vm = psutil.virtual_memory()
    try:
        rss = psutil.Process().memory_info().rss
    except psutil.Error:
        rss = 0
    gpu_samples = [
        GpuSample(g.index, g.name, g.util_percent, g.vram_used, g.vram_total, g.temperature_c, g.power_w)
        for g in gpus(probe)
    ]
    return Sample(
        cpu_percent=float(psutil.cpu_percent(interval=None)),
        ram_used=int(vm.total - vm.available),
        ram_total=int(vm.total),
        ram_available=int(vm.available),
        process_rss=int(rss),
        gpus=gpu_samples,
    )
