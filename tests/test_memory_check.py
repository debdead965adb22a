"""Estimated against allocated memory: every load records both; ``fit --check`` prints them.

Real loads of both packaged models (llama.cpp's own buffer sizes are the reference). The
sizes are deterministic, so the 5% bound is a real check, not a timing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import make_profile

from workstation.cli import main
from workstation.core.catalog import human_bytes
from workstation.core.memory_check import COMPONENTS, check, history_summary, latest
from workstation.core.profiles import KV_CACHE_TYPES
from workstation.core.results import history
from workstation.core.runtime import LoadedModel, RuntimeSettings

CONTEXTS = (1024, 4096, 8192)
KV_TYPES = ("f16", "q8_0", "q4_0")


@pytest.mark.parametrize("model", ["smollm2", "gemma"])
def test_estimates_within_5_percent_at_3_contexts_and_3_kv_types(model: str, smollm2_path: Path,
                                                                 gemma_path: Path) -> None:
    path = smollm2_path if model == "smollm2" else gemma_path
    worst = 0.0
    for ctx in CONTEXTS:
        for kv in KV_TYPES:
            m = LoadedModel(path, RuntimeSettings(n_ctx=ctx, n_threads=1, type_k=KV_CACHE_TYPES[kv],
                                                  type_v=KV_CACHE_TYPES[kv]))
            try:
                mc = check(m)
            finally:
                m.close()
            cells = " ".join(
                f"{c} {mc.estimated[c] / 2**20:7.2f}/{mc.allocated[c] / 2**20:7.2f} MiB ({mc.diff_pct(c):+.1f}%)"
                for c in COMPONENTS)
            print(f"{path.name} ctx {ctx:>5} K/V {kv:<5} estimated/allocated: {cells}")
            for c in COMPONENTS:
                assert mc.allocated[c] > 0
                assert abs(mc.diff_pct(c)) <= 5, (c, ctx, kv, mc.to_dict())
                worst = max(worst, abs(mc.diff_pct(c)))
    print(f"{path.name}: worst difference {worst:.2f}%")


def test_every_load_is_recorded_in_the_history(smollm2_path: Path) -> None:
    from workstation.core.engine import Engine

    engine = Engine(make_profile(context=2048, kv_cache={"k": "q8_0", "v": "q8_0"}))
    engine.close()
    rows = [h for h in history(kind="load") if Path(h.model).name == smollm2_path.name]
    assert sorted(h.test for h in rows) == sorted(f"mem_{c}" for c in COMPONENTS)
    total = next(h for h in rows if h.test == "mem_total")
    assert total.data["settings"]["type_k"] == "q8_0" and total.data["settings"]["n_ctx"] >= 2048
    assert total.value == total.data["allocated"] > 0 and total.data["estimated"] > 0
    assert total.data["buffers"]["KV"]  # llama.cpp's own figure per buffer
    got = latest(rows[0].model)
    assert got is not None and got["components"]["kv_cache"]["allocated"] > 0
    summary = history_summary()
    assert summary["loads"] >= 1 and set(summary["components"]) == set(COMPONENTS)


def test_fit_check_json_fields(smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text(yaml.safe_dump({"name": "p", "model": "smollm2-135m-instruct-q4_1", "context": 4096,
                                    "threads": 1, "gpu_layers": 0, "kv_cache": {"k": "q8_0", "v": "q4_0"}}))
    assert main(["fit", "-p", str(prof), "--check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "p" and Path(data["model"]).name == smollm2_path.name
    assert set(data["estimated"]) == set(data["allocated"]) == set(data["diff_pct"]) == set(COMPONENTS)
    assert data["settings"]["type_k"] == "q8_0" and data["settings"]["type_v"] == "q4_0"
    assert data["settings"]["n_ctx"] == 4096 and data["vram_process"] is None  # no GPU here
    assert abs(data["diff_pct"]["kv_cache"]) <= 5
    assert data["buffers"]["model"] and data["buffers"]["compute"]
    assert "holds" in data["verdict"]  # the same sentence as the text output


def test_fit_check_prints_both_and_the_difference(smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "-p", "office-cpu", "--check"]) == 0
    out = capsys.readouterr().out
    assert "estimated" in out and "allocated" in out and "difference" in out
    assert ": smollm2-135m-instruct-q4_1, context " in out.splitlines()[0], out  # as 'models list' names it (its file's name)
    for word in ("weights", "KV cache", "compute", "total"):  # (as fit's table says it: it read "kv cache")
        assert word in out
    assert "% of allocated" in out
    # one sentence says what it means: within 5%, fit's answer holds
    verdict = next(line for line in out.splitlines() if line.strip().startswith("verdict:"))
    assert "of what llama.cpp allocated, so what 'workstation fit' says for this profile holds" in verdict


def test_fit_check_verdicts() -> None:
    from workstation.commands.fit import check_verdict

    assert "within 2.0%" in check_verdict(102, 100) and "holds" in check_verdict(98, 100)
    assert "errs on the safe side" in check_verdict(120, 100)
    under = check_verdict(80 * 2**20, 100 * 2**20)
    assert "allocated 20 MB more than estimated: keep that much more memory free" in under
    assert "the compute estimate alone is off by -9.0%" in check_verdict(100, 101, ("compute", -9.0))
    # in Turkish where fit is said in Turkish (--lang tr, the app's language): it was English alone
    from workstation.tui.i18n import Texts

    tr = Texts("tr").get
    assert check_verdict(100, 101, ("kv_cache", -9.0), tr) == (
        "tahmin, llama.cpp'nin ayırdığı bellekten en çok %1,0 farklı (yalnızca KV önbelleği tahmini -%9,0 sapıyor); "
        "'workstation fit' komutunun bu profil için söylediğine güvenilebilir.")
    assert check_verdict(80 * 2**20, 100 * 2**20, None, tr).startswith("llama.cpp tahminden 20 MB fazla bellek ayırdı: ")
    assert check_verdict(0, 100, None, tr) == "llama.cpp karşılaştırılacak bir bellek ayırması bildirmedi."
    # its first line in Turkish words too ("flash attention" alone was English)
    assert Texts("tr")("fit_cmd.check_head", title="p", file="m.gguf", context="4,096", k="q8_0", v="q8_0", layers=0,
                       flash=Texts("tr")("fit_cmd.check_on")).endswith(", 0 GPU katmanı, hızlı dikkat hesabı (flash attention) açık")


def test_fit_check_counts_the_draft_model(smollm2_path: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A draft pair loads two models: ``fit --check`` shows the draft's estimate beside its
    allocation too, and both together (it showed the target alone)."""
    prof = tmp_path / "pair.yaml"
    prof.write_text(yaml.safe_dump({
        "name": "pair", "model": str(smollm2_path), "context": 1024, "threads": 1, "gpu_layers": 0,
        "speculative": {"mode": "draft", "draft_model": str(smollm2_path), "draft_tokens": 4},
    }))
    assert main(["fit", "-p", str(prof), "--check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    draft = data["draft"]
    assert draft is not None and Path(draft["model"]).name == smollm2_path.name
    assert draft["settings"]["type_k"] == "f16" and draft["settings"]["n_ctx"] == 1024  # the target's
    assert draft["allocated"]["weights"] > 0 and abs(draft["diff_pct"]["kv_cache"]) <= 5
    assert main(["fit", "-p", str(prof), "--check"]) == 0
    out = capsys.readouterr().out
    assert "helper model (draft):" in out and "both models:" in out
    both = data["allocated"]["total"] + draft["allocated"]["total"]
    assert human_bytes(both) in out.split("both models:")[1]
    # the whole of it in Turkish (--lang tr): its table, the pair's line and its verdict were English
    assert main(["fit", "-p", str(prof), "--check", "--lang", "tr"]) == 0
    turkish = capsys.readouterr().out
    assert "küçük yardımcı model: " in turkish and "iki model birlikte: tahmin " in turkish and "\n  sonuç: " in turkish
    assert "KV önbelleği" in turkish and "ayrılana göre" in turkish, turkish
    english = re.findall(r"\b(?:the|is|of|and|estimated|allocated|difference|weights|compute|total|verdict|both|"
                         r"draft|context|layers|on|off|holds)\b", turkish.replace(str(smollm2_path), ""))
    assert not english, (english, turkish)
    # a profile without a draft says nothing of one
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"name": "plain", "model": str(smollm2_path), "context": 1024,
                                     "threads": 1, "gpu_layers": 0}))
    assert main(["fit", "-p", str(plain), "--check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["draft"] is None


def _saved_load(model: str, allocated: int, diff_pct: float) -> None:
    """One recorded load of ``model`` (its total alone), as ``record_load`` saves it."""
    from workstation.core.results import ResultRow, save_run

    save_run("load", [ResultRow("m", "mem_total", allocated, "bytes", model,
                                {"estimated": 100, "allocated": allocated, "diff_pct": diff_pct})])


def test_the_history_shows_the_newest_load_and_the_worst_miss_either_way() -> None:
    """The dashboard showed an older load's figures for a model loaded since, and the report's
    "at worst" named a small overestimate over a large underestimate (+3% over -10%)."""
    _saved_load("/models/a.gguf", 97, 3.0)
    _saved_load("/models/a.gguf", 110, -10.0)
    got = latest("/models/a.gguf")
    assert got is not None and got["components"]["total"]["allocated"] == 110
    worst = history_summary()["components"]["total"]
    assert (worst["worst_pct"], worst["n"]) == (-10.0, 2)
