"""The edges of the speed rules shared today (``speed_estimate.kv_speed`` and ``keeps_pace``,
``metrics.quiet_median``) and of size's advice on a laptop: each was open to a change of one line
that no other test saw."""

from __future__ import annotations

from workstation.core.memory_plan import DevicePlan
from workstation.core.metrics import quiet_median
from workstation.core.speed_estimate import CPU_QUANTIZED_KV_SPEED, keeps_pace, kv_speed


def _device(kind: str, layers: int) -> DevicePlan:
    return DevicePlan(kind, kind, None, layers, 0, 0, 0, 2**30, 2**30, 20.0)


def test_a_quantized_kv_cache_slows_only_a_cpu_that_runs_layers() -> None:
    """q8_0's K/V cache is counted slower on a CPU that runs layers of the model; a CPU with none
    of them (all on the GPU), a GPU, and an f16 cache keep their speed."""
    assert kv_speed(_device("cpu", 12), "q8_0", "q8_0") == CPU_QUANTIZED_KV_SPEED < 1
    assert kv_speed(_device("cpu", 0), "q8_0", "q8_0") == 1.0
    only_output = _device("cpu", 1)
    only_output.output = True  # the output layer alone on the CPU: no K/V there
    assert kv_speed(only_output, "q8_0", "q8_0") == 1.0
    assert kv_speed(_device("gpu", 12), "q4_0", "q4_0") == 1.0
    assert kv_speed(_device("cpu", 12), "f16", "f16") == 1.0


def test_a_reply_as_fast_as_people_read_keeps_pace() -> None:
    """Five words a second (README: "a person reads about 5 words a second") keeps pace; fewer do not."""
    assert keeps_pace(5.0, per_token=1.0)
    assert not keeps_pace(4.0, per_token=1.0)


def test_the_quiet_median_is_of_the_last_replies() -> None:
    """The last ``limit`` replies begun quiet are gone by (the newest: a model's speed today), not the first."""
    replies = [(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (10.0, 0.0), (20.0, 0.0), (99.0, 5.0)]
    assert quiet_median(replies, limit=2) == 15.0


def test_a_laptop_whose_own_processor_is_best_is_told_nothing_of_it_twice() -> None:
    """On a laptop where this PC's own processor is the best choice (nothing to buy), the headline
    says it once, as on any PC: no 'On this laptop's own processor, the closest is…' before it."""
    from workstation.core import calibration
    from workstation.core.sizing import local_machines, size
    from workstation.core.workload import load_workload

    w = load_workload("office-20", 1)
    w.quality.min_params_b = 0.0  # (any model will do: this PC's CPU meets the targets)
    speed, cal = calibration.this_machine()
    local = local_machines(speed, [], 16 * 2**30, 16 * 2**30, 20.0)
    laptop, desktop = (size(w, local, cal, {}, flag) for flag in (True, False))
    assert laptop.best is not None and laptop.best.here, laptop.headline()
    assert laptop.headline() == desktop.headline()
