"""What a quantization costs: KL divergence of each token's distribution against a reference.

The method is llama.cpp's ``llama-perplexity --kl-divergence-base FILE`` then
``--kl-divergence`` (tools/perplexity/perplexity.cpp): the text is tokenized once by the
reference, cut into windows of ``n_ctx`` tokens, each window evaluated from an empty KV
cache with BOS first, and the second half of each window scored (``evaluate.scored_logits``,
the loop perplexity uses). For every scored position:

* KLD = sum_i p_i (log p_i - log q_i), p the reference's next-token distribution, q the
  candidate's;
* same top: the candidate's most likely token is the reference's;
* each model's negative log-likelihood of the real next token (so both perplexities and
  their ratio come out of the same pass).

Mean KLD with its standard error, the 99th percentile (linear interpolation, as llama.cpp's
``percentile``), same-top % and the perplexity change are reported.

What the reference cache keeps. The reference's logits are computed once and written to
``<data dir>/kld/<key>.kldref``, so each later candidate costs only its own pass. A full
distribution per token is n_vocab floats (llama.cpp stores it as n_vocab uint16: 96 KiB per
token for SmolLM2's 49,152 tokens, 512 KiB for Gemma 3's 262,144), so instead each scored
position keeps:

* the ``top_k`` most likely token ids (int32) and their log-probabilities (float32, that is
  logit - logsumexp: the logsumexp is folded in);
* the log of the probability mass outside those ``top_k`` (float64);
* the log-probability of the real next token (float64) and the argmax token (int32).

The KLD is then the sum over the top-k tokens, plus the tail: the mass outside them as one
"rest" bucket for each model, plus what merging hides (the tail mass times the KLD between
the two tails, estimated by the KLD inside the lower half of the kept tokens; see
``_tail_kld``). The bucket alone came out 4% low at k=512 on SmolLM2 (a small model spreads
its probability thinly); with the estimate, 0.1-0.3% low. bench/kld.py prints the
difference against the full-vocabulary sum (``--exact``) and against llama.cpp's figures
(measured: Q4_0 copy against the Q4_1 original, 4 windows of 512: mean KLD 0.29% under
llama-perplexity's, 99th percentile 0.05%, same top and both perplexities equal to 1e-5).
At k=512 a scored token costs 4,116 bytes (llama.cpp's base file: 2 bytes x n_vocab).

The cache key is the reference model file (resolved path, size, modification time), its
K/V cache types, a hash of the text, the window, the window count and ``top_k``: a changed
text or a rewritten model file makes a new reference; a damaged cache file is recomputed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import statistics
import struct
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from workstation.core.atomic import WRITE_ERRNOS, cannot_write
from workstation.core.disk_budget import budget_from_env, evict_least_recent
from workstation.core.evaluate import (
    EvalInputError,
    Progress,
    count_windows,
    mean_and_uncertainty,
    scored_logits,
)
from workstation.core.installed_models import held_part, own_part
from workstation.core.model_info import read_model_info, vocabulary_difference
from workstation.core.paths import kld_dir, own_folder
from workstation.core.phrases import Phrase
from workstation.core.results import HistoryEntry
from workstation.core.runtime import LoadedModel

FORMAT_VERSION = 1
MAGIC = b"WSKLDREF"
_HEADER = struct.Struct("<8sQQ")  # magic, metadata offset, metadata length
DEFAULT_TOP_K = 512
_ROW_BUDGET = 1 << 22  # float64 values per block of rows (32 MiB)
_META_FIGURES = ("n_ctx", "n_chunks", "n_vocab", "top_k", "ppl", "ppl_stderr", "seconds", "decode_seconds")


class VocabularyMismatch(EvalInputError):
    """The reference and a candidate do not share one vocabulary."""


def check_same_vocabulary(reference: Path, candidate: Path) -> None:
    """Refuse, in one sentence, a candidate whose token ids mean other tokens (GGUF headers only)."""
    why = vocabulary_difference(read_model_info(candidate), read_model_info(reference))
    if why:
        raise VocabularyMismatch(
            f"{candidate.name} uses {why} than the reference {reference.name}, so their "
            "next-token distributions cannot be compared."
        )


DEFAULT_CACHE_MB = 1024  # reference logits kept; WORKSTATION_KLD_CACHE_MB changes it


def reference_key(
    model_path: Path,
    kv_types: tuple[str, str],
    text: str,
    n_ctx: int,
    max_chunks: int | None,
    top_k: int,
) -> dict[str, Any]:
    """What a cached reference depends on (computable before the model is loaded)."""
    path = model_path.resolve()
    st = path.stat()
    return {
        "version": FORMAT_VERSION,
        "model": str(path),
        "model_size": st.st_size,
        "model_mtime_ns": st.st_mtime_ns,
        "type_k": kv_types[0],
        "type_v": kv_types[1],
        "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "n_ctx": n_ctx,
        "max_chunks": max_chunks,
        "top_k": top_k,
    }


def reference_folder() -> tuple[Path | None, list[Phrase]]:
    """The folder reference passes are kept in (``kld_dir``), made: the data folder's kld/ its
    owner's alone (a document's tokens, as kv-cache/); WORKSTATION_KLD_CACHE's made so when
    made, kept as it is when there. None and why where it cannot be used (a data folder that is
    a file, one not the user's to write in): the run then measures in a folder of its own and
    says the reference was not kept, as perplexity and bench measure and print, then say their
    results were not (it stopped before measuring anything)."""
    from workstation.core.atomic import write_problem
    from workstation.core.errors import WorkstationError

    try:
        folder = kld_dir()
    except WorkstationError as err:
        return None, err.said  # (the data folder's "data.unusable": it is said with its phrase)
    try:
        if os.environ.get("WORKSTATION_KLD_CACHE"):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        else:
            own_folder(folder)
    except OSError as err:  # (a file of that name: not FileExistsError's "File exists")
        why = (("file.not_a_folder", {"folder": str(folder)}) if folder.exists() and not folder.is_dir()
               else write_problem(folder, err))
        return None, [("kld.folder_unusable", {"folder": str(folder), "why": why})]
    if not os.access(folder, os.W_OK | os.X_OK):
        return None, [("kld.folder_unusable", {"folder": str(folder),
                                               "why": ("file.no_permission", {"folder": str(folder)})})]
    return folder, []


def key_path(key: dict[str, Any], directory: Path | None = None) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return (directory or kld_dir()) / f"{digest}.kldref"


# --- the numbers for a block of rows ------------------------------------------------------------
def log_softmax(logits: np.ndarray) -> np.ndarray:
    """float64 log-probabilities of rows of float32 logits (max-subtracted)."""
    x = logits.astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    x -= np.log(np.exp(x).sum(axis=1, keepdims=True))
    return x


def _rest_log_mass(logp: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """log of the probability outside ``ids`` per row (-inf when there is none)."""
    p = np.exp(logp)
    p[np.arange(len(ids))[:, None], ids] = 0.0
    with np.errstate(divide="ignore"):
        return np.log(p.sum(axis=1))


def _record_dtype(top_k: int) -> np.dtype:
    return np.dtype([
        ("ids", "<i4", (top_k,)), ("logp", "<f4", (top_k,)),
        ("log_rest", "<f8"), ("target_logp", "<f8"), ("top", "<i4"),
    ])


def _reference_records(logits: np.ndarray, targets: np.ndarray, top_k: int) -> np.ndarray:
    logp = log_softmax(logits)
    rows = np.arange(len(targets))
    k = min(top_k, logp.shape[1])
    ids = np.argpartition(-logp, k - 1, axis=1)[:, :k] if k < logp.shape[1] else np.tile(np.arange(k), (len(rows), 1))
    order = np.argsort(-np.take_along_axis(logp, ids, axis=1), axis=1, kind="stable")
    ids = np.take_along_axis(ids, order, axis=1)
    rec = np.zeros(len(rows), dtype=_record_dtype(top_k))
    rec["ids"] = ids
    rec["logp"] = np.take_along_axis(logp, ids, axis=1)
    rec["log_rest"] = _rest_log_mass(logp, ids)
    rec["target_logp"] = logp[rows, targets]
    rec["top"] = np.argmax(logits, axis=1)  # the first maximum, as llama.cpp picks it
    return rec


@dataclass
class _Sums:
    """Running sums over scored positions (llama.cpp's kl_divergence_result)."""

    nll: float = 0.0
    nll2: float = 0.0
    nll_base: float = 0.0
    nll_base2: float = 0.0
    nll_nll_base: float = 0.0
    kld: float = 0.0
    kld2: float = 0.0
    same_top: int = 0
    count: int = 0
    values: list[np.ndarray] = field(default_factory=list)


def _tail_kld(lp: np.ndarray, lq: np.ndarray, terms: np.ndarray, lp_rest: np.ndarray, lq_rest: np.ndarray) -> np.ndarray:
    """The KLD of the tokens outside the kept top-k, per row.

    Between the kept tokens and the rest: the rest as one bucket, P log(P/Q). Inside the rest,
    which that bucket hides: P times the KLD inside the lower half of the kept tokens (ranks
    k/2..k, each side renormalized), the nearest measured stand-in for how the two models
    disagree among unlikely tokens. Against the sum over the whole vocabulary this measured
    0.9971-0.9991 of the mean KLD at k=512 for Q8_0, Q4_0 and Q3_K_M copies of SmolLM2
    (bench/kld.py --exact prints it for any pair), where the bucket alone gave 0.96."""
    p_rest = np.exp(lp_rest)
    with np.errstate(divide="ignore", invalid="ignore"):
        between = np.where(p_rest > 0, p_rest * (lp_rest - lq_rest), 0.0)
    k = lp.shape[1]
    if k < 2:
        return between
    band = slice(k // 2, k)
    pb = np.exp(lp[:, band]).sum(axis=1)
    qb = np.exp(lq[:, band]).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = terms[:, band].sum(axis=1) / pb - (np.log(pb) - np.log(qb))
    inside = np.where((pb > 0) & (qb > 0) & np.isfinite(inside), np.maximum(inside, 0.0), 0.0)
    return between + p_rest * inside


def _compare_block(logits: np.ndarray, targets: np.ndarray, rec: np.ndarray, sums: _Sums) -> None:
    logq = log_softmax(logits)
    rows = np.arange(len(targets))
    ids = rec["ids"].astype(np.int64)
    # rounded like the stored reference, so a model against itself gives exactly 0
    lq = np.take_along_axis(logq, ids, axis=1).astype(np.float32).astype(np.float64)
    lp = rec["logp"].astype(np.float64)
    terms = np.exp(lp) * (lp - lq)
    kld = terms.sum(axis=1) + _tail_kld(lp, lq, terms, rec["log_rest"], _rest_log_mass(logq, ids))
    nll = -logq[rows, targets]
    nll_base = -rec["target_logp"]
    sums.nll += float(nll.sum())
    sums.nll2 += float((nll * nll).sum())
    sums.nll_base += float(nll_base.sum())
    sums.nll_base2 += float((nll_base * nll_base).sum())
    sums.nll_nll_base += float((nll * nll_base).sum())
    sums.kld += float(kld.sum())
    sums.kld2 += float((kld * kld).sum())
    sums.same_top += int((np.argmax(logits, axis=1) == rec["top"]).sum())
    sums.count += len(targets)
    sums.values.append(kld)


def _block_rows(n_vocab: int) -> int:
    """Rows per numpy block, so a block's float64 copy stays near 32 MiB whatever the vocabulary."""
    return max(1, _ROW_BUDGET // max(1, n_vocab))


# --- the reference pass and its cache file --------------------------------------------------------
@dataclass
class ReferenceLogits:
    """A reference pass on disk: its metadata, the tokens and one record per scored position."""

    path: Path
    meta: dict[str, Any]
    tokens: np.ndarray
    records: np.ndarray
    reused: bool = False
    # windows its speed (meta's decode_seconds, for all its windows) was measured over in this
    # run: all of them when the pass ran now, one when it was read from the cache (time_reference)
    timed_windows: int = 0
    # each window's llama_decode seconds timed in this run (the spread "about the same speed" is judged by)
    window_seconds: list[float] = field(default_factory=list)

    @property
    def n_ctx(self) -> int:
        return int(self.meta["n_ctx"])

    @property
    def n_chunks(self) -> int:
        return int(self.meta["n_chunks"])

    @property
    def size_bytes(self) -> int:
        return self.path.stat().st_size

    @property
    def bytes_per_1k_tokens(self) -> float:
        """Cache bytes per 1,000 tokens of text evaluated (half of each window is scored)."""
        return self.size_bytes / (self.n_chunks * self.n_ctx) * 1000


def load_reference(path: Path, key: dict[str, Any]) -> ReferenceLogits | None:
    """The cached reference at ``path`` if it is complete and made for ``key``, else None."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            magic, meta_off, meta_len = _HEADER.unpack(f.read(_HEADER.size))
            if magic != MAGIC or meta_off + meta_len != size:
                return None
            f.seek(meta_off)
            meta = json.loads(f.read(meta_len).decode("utf-8"))
        if meta.get("key") != key:
            return None
        for name in _META_FIGURES:
            float(meta[name])  # a file from an older version lacks one: computed again
        dtype = _record_dtype(int(meta["top_k"]))
        n_rec, n_tok = int(meta["n_records"]), int(meta["n_tokens"])
        if _HEADER.size + n_rec * dtype.itemsize + n_tok * 4 != meta_off:
            return None
        records = np.memmap(path, dtype=dtype, mode="r", offset=_HEADER.size, shape=(n_rec,))
        tokens = np.memmap(path, dtype="<i4", mode="r", offset=_HEADER.size + n_rec * dtype.itemsize, shape=(n_tok,))
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: the budget removes it last
    return ReferenceLogits(path, meta, np.asarray(tokens), records, reused=True)


def cache_budget() -> int:
    """Bytes of reference logits kept on disk (WORKSTATION_KLD_CACHE_MB); a bad value is
    refused in a sentence. Read before any model loads, and again once a reference is written."""
    return budget_from_env("WORKSTATION_KLD_CACHE_MB", DEFAULT_CACHE_MB)


def reference_windows(model: LoadedModel, text: str, key: dict[str, Any]) -> tuple[list[int], int]:
    """``text``'s tokens and how many windows of ``key``'s size they give (EvalInputError when
    none: too short a text), before any window is read."""
    tokens = model.tokenize(text, add_special=True, parse_special=False)
    return tokens, count_windows(len(tokens), int(key["n_ctx"]), model.n_ctx, key["max_chunks"], "eval.what_kld")


def build_reference(
    model: LoadedModel,
    text: str,
    key: dict[str, Any],
    directory: Path | None = None,
    progress: Progress | None = None,
) -> ReferenceLogits:
    """Run the reference pass over ``text`` and write its cache file (atomically)."""
    n_ctx, top_k = int(key["n_ctx"]), min(int(key["top_k"]), model.n_vocab)
    tokens, n_chunk = reference_windows(model, text, key)
    n_text_tokens = len(tokens)
    tokens = tokens[: n_chunk * n_ctx]
    dest = key_path(key, directory)
    # (a document's tokens: made its owner's alone; the data folder's kld/ made so again by reference_folder)
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = own_part(dest)  # (its lock held while written: a part left by a kill is swept)
    with held_part(tmp, ("models.being_added", {"name": dest.name, "folder": str(dest.parent)})):
        nll = nll2 = decode_seconds = 0.0
        window_seconds: list[float] = []
        count = 0
        t0 = time.perf_counter()
        try:
            with tmp.open("wb") as f:
                os.chmod(tmp, 0o600)  # the document's text as token ids, its owner's only (it was 644)
                f.write(_HEADER.pack(MAGIC, 0, 0))
                with closing(scored_logits(model, tokens, n_ctx, n_chunk, progress, "reference")) as windows:
                    step = _block_rows(model.n_vocab)
                    for rows in windows:
                        decode_seconds += rows.decode_seconds
                        window_seconds.append(rows.decode_seconds)
                        for r0 in range(0, len(rows.targets), step):
                            rec = _reference_records(rows.logits[r0 : r0 + step], rows.targets[r0 : r0 + step], top_k)
                            f.write(rec.tobytes())
                            values = -rec["target_logp"]
                            nll += float(values.sum())
                            nll2 += float((values * values).sum())
                            count += len(rec)
                seconds = time.perf_counter() - t0
                f.write(np.asarray(tokens, dtype="<i4").tobytes())
                info = read_model_info(model.path)
                mean, unc = mean_and_uncertainty(nll, nll2, count)
                meta = {
                    "key": key,
                    "format": "workstation KLD reference: top-k log-probabilities per scored token",
                    "top_k": top_k,
                    "n_vocab": model.n_vocab,
                    "vocab_fingerprint": info.tokenizer_fingerprint,
                    "model_name": info.name,
                    "n_ctx": n_ctx,
                    "n_chunks": n_chunk,
                    "n_tokens": len(tokens),
                    "n_text_tokens": n_text_tokens,
                    "n_records": count,
                    "ppl": math.exp(mean),
                    "ppl_stderr": math.exp(mean) * unc,
                    "seconds": seconds,
                    "decode_seconds": decode_seconds,
                }
                _finish(f, meta)
            os.replace(tmp, dest)
        except OSError as err:  # (a full disk: "unexpected error: OSError: [Errno 28]")
            if err.errno not in WRITE_ERRNOS:
                raise
            raise EvalInputError(said=[*cannot_write(dest, err), ("kld.cannot_write", {})]) from None
        finally:
            tmp.unlink(missing_ok=True)
    # the folder keeps to its budget: older references go, the one just made stays
    evict_least_recent(dest.parent, "*.kldref", cache_budget(), keep=dest)
    ref = load_reference(dest, key)
    if ref is None:  # pragma: no cover - only if the disk lost what was just written
        raise EvalInputError(f"The reference cache {dest} could not be read back after writing it.")
    ref.reused = False
    ref.timed_windows = ref.n_chunks
    ref.window_seconds = window_seconds
    return ref


RETIME_WINDOWS = 2  # a cached reference's first window timed again, after one to warm up


def time_reference(model: LoadedModel, ref: ReferenceLogits, progress: Progress | None = None) -> None:
    """A reference read from the cache, its speed measured again in this run: the speed kept
    with it came from another run (another moment of a shared machine's load), and against a
    candidate measured now it said 1.21x faster for a K/V type that reads slower. Its first
    window, the same work as each window of a candidate's pass, is decoded once to warm up
    and ``RETIME_WINDOWS`` times more; the median of those stands for every window (one cold
    window read 310-358 tok/s against 359-365 for a whole pass). The figures (``meta``'s
    decode_seconds) are in memory only."""
    window = ref.tokens[: ref.n_ctx].tolist()
    per_window = [0.0] * (1 + RETIME_WINDOWS)
    with closing(scored_logits(model, window * (1 + RETIME_WINDOWS), ref.n_ctx, 1 + RETIME_WINDOWS, progress,
                               "reference speed")) as windows:
        for rows in windows:
            per_window[rows.window] += rows.decode_seconds
    ref.meta = {**ref.meta, "decode_seconds": statistics.median(per_window[1:]) * ref.n_chunks}
    ref.timed_windows = RETIME_WINDOWS
    ref.window_seconds = per_window[1:]


def _finish(f: BinaryIO, meta: dict[str, Any]) -> None:
    data = json.dumps(meta, ensure_ascii=False).encode("utf-8")
    offset = f.tell()
    f.write(data)
    f.seek(0)
    f.write(_HEADER.pack(MAGIC, offset, len(data)))
    f.flush()
    os.fsync(f.fileno())


# --- the candidate pass ------------------------------------------------------------------------------
@dataclass
class KLDResult:
    """One candidate against the reference on one text."""

    document: str
    kld_mean: float
    kld_stderr: float
    kld_p99: float
    kld_median: float
    kld_max: float
    same_top: float  # fraction of scored positions
    same_top_stderr: float
    ppl: float
    ppl_stderr: float
    ref_ppl: float
    ref_ppl_stderr: float
    ln_ppl_ratio: float
    ln_ppl_ratio_stderr: float
    n_ctx: int
    n_chunks: int
    n_scored: int
    top_k: int
    seconds: float  # the whole candidate pass (decoding, KLD, reading the cache)
    ref_seconds: float  # the whole reference pass (decoding, top-k, writing the cache)
    decode_seconds: float  # llama_decode alone: the model's speed
    ref_decode_seconds: float
    cache_bytes: int
    cache_bytes_per_1k_tokens: float
    cache_reused: bool
    window_seconds: list[float] = field(default_factory=list)  # each window's llama_decode seconds

    @property
    def ppl_delta_pct(self) -> float:
        return (self.ppl / self.ref_ppl - 1) * 100

    @property
    def tokens_per_second(self) -> float:
        """The candidate's prompt-processing speed over the windows (llama_decode time)."""
        return self.n_chunks * self.n_ctx / self.decode_seconds if self.decode_seconds > 0 else 0.0

    @property
    def ref_tokens_per_second(self) -> float:
        return self.n_chunks * self.n_ctx / self.ref_decode_seconds if self.ref_decode_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["ppl_delta_pct"] = round(self.ppl_delta_pct, 4)
        d["tokens_per_second"] = round(self.tokens_per_second, 3)
        d["ref_tokens_per_second"] = round(self.ref_tokens_per_second, 3)
        d["pass_time_ratio"] = round(self.seconds / self.ref_seconds, 4) if self.ref_seconds > 0 else None
        return d


def compare_to_reference(
    model: LoadedModel,
    ref: ReferenceLogits,
    document: str = "",
    progress: Progress | None = None,
) -> KLDResult:
    """Run ``model`` over the reference's tokens and windows; KLD, same top, perplexities."""
    if model.n_vocab != int(ref.meta["n_vocab"]):
        raise VocabularyMismatch(said=[("kld.vocabulary_size", {
            "name": model.path.name, "n": model.n_vocab, "reference_n": ref.meta["n_vocab"]})])
    n_ctx, n_chunk = ref.n_ctx, ref.n_chunks
    if n_ctx > model.n_ctx:
        raise EvalInputError(said=[("eval.window_over_context", {
            "what": ("eval.what_kld", {}), "n": n_ctx, "ctx": model.n_ctx})])
    tokens = ref.tokens.tolist()
    per_window = n_ctx - 1 - n_ctx // 2
    step = _block_rows(model.n_vocab)
    sums = _Sums()
    decode_seconds = 0.0
    window_seconds: list[float] = []
    t0 = time.perf_counter()
    with closing(scored_logits(model, tokens, n_ctx, n_chunk, progress, "KL divergence")) as windows:
        for rows in windows:
            decode_seconds += rows.decode_seconds
            window_seconds.append(rows.decode_seconds)
            base = rows.window * per_window + (rows.positions[0] - n_ctx // 2)
            for r0 in range(0, len(rows.targets), step):
                r1 = min(len(rows.targets), r0 + step)
                rec = np.asarray(ref.records[base + r0 : base + r1])
                _compare_block(rows.logits[r0:r1], rows.targets[r0:r1], rec, sums)
    seconds = time.perf_counter() - t0
    n = sums.count
    values = np.concatenate(sums.values)
    kld_mean, kld_unc = mean_and_uncertainty(sums.kld, sums.kld2, n)
    log_ppl, log_ppl_unc = mean_and_uncertainty(sums.nll, sums.nll2, n)
    log_base, log_base_unc = mean_and_uncertainty(sums.nll_base, sums.nll_base2, n)
    cov = (sums.nll_nll_base / n - (sums.nll / n) * (sums.nll_base / n)) / (n - 1) if n >= 10 else 0.0
    ratio_var = log_ppl_unc**2 + log_base_unc**2 - 2 * cov
    same = sums.same_top / n
    return KLDResult(
        document=document,
        kld_mean=kld_mean,
        kld_stderr=kld_unc,
        kld_p99=float(np.percentile(values, 99)),
        kld_median=float(np.median(values)),
        kld_max=float(values.max()),
        same_top=same,
        same_top_stderr=math.sqrt(same * (1 - same) / (n - 1)) if n > 1 else 0.0,
        ppl=math.exp(log_ppl),
        ppl_stderr=math.exp(log_ppl) * log_ppl_unc,
        ref_ppl=math.exp(log_base),
        ref_ppl_stderr=math.exp(log_base) * log_base_unc,
        ln_ppl_ratio=log_ppl - log_base,
        ln_ppl_ratio_stderr=math.sqrt(ratio_var) if ratio_var > 0 else 0.0,
        n_ctx=n_ctx,
        n_chunks=n_chunk,
        n_scored=n,
        top_k=int(ref.meta["top_k"]),
        seconds=seconds,
        ref_seconds=float(ref.meta["seconds"]),
        decode_seconds=decode_seconds,
        ref_decode_seconds=float(ref.meta["decode_seconds"]),
        cache_bytes=ref.size_bytes,
        cache_bytes_per_1k_tokens=ref.bytes_per_1k_tokens,
        cache_reused=ref.reused,
        window_seconds=window_seconds,
    )


# --- the saved figures, one point per quantization (for the TUI's chart) -----------------------------
@dataclass
class QuantizationPoint:
    """One profile of a saved ``eval --kld`` run: its loss, memory and speed, documents pooled."""

    profile: str
    model: str  # file name
    file_type: str
    model_bytes: int
    reference: bool
    kld_mean: float  # weighted by scored tokens over the documents
    same_top: float  # fraction
    ppl_delta_pct: float
    tokens_per_second: float
    documents: list[str]
    kv_bytes: int = 0  # its K/V cache at the profile's context (0: a run saved before it was kept)
    key: str = ""  # what its rows are told apart by (``run_key``)
    total_bytes: int = 0  # the planner's memory for the profile, as F4 and fit say it (0: a run saved before)
    speed_left_out: bool = False  # eval left its speed out, as beyond what its settings can make (a busy moment's)

    @property
    def memory_bytes(self) -> int:
        """The memory the profile needs: the planner's total (weights, this CPU's repacked copy,
        compute buffers and K/V cache: what F4 and ``fit`` say), else, for a run saved before it
        was kept, its file and K/V cache (F12 said 186 MB where fit said 282 MB)."""
        return self.total_bytes or self.model_bytes + self.kv_bytes


def _pooled(rows: list[HistoryEntry], weights: list[int], name: str) -> float:
    """A figure over several documents, each weighted by its scored tokens."""
    total = sum(weights) or 1
    return sum(float(r.data.get(name, 0.0)) * w for r, w in zip(rows, weights, strict=True)) / total


def kld_runs(entries: list[HistoryEntry]) -> list[str]:
    """The saved runs with KL divergence figures, by run id, newest first (``entries`` as
    ``quantization_points`` takes them)."""
    return list(dict.fromkeys(e.run_id for e in entries))


def run_key(entry: HistoryEntry) -> str:
    """What a saved row's profile is told apart by in its run: the profile as -p named it (its
    ref: ``office-cpu model=a/x.gguf``), else, for a row saved before eval kept it, its name.
    By the name alone, two of one name with different model files (``model=a/x.gguf`` and
    ``model=b/x.gguf``, both "office-cpu · x") were pooled into one."""
    return str(entry.data.get("ref") or entry.profile)


def quantization_points(entries: list[HistoryEntry], run: str | None = None) -> tuple[str, list[QuantizationPoint]]:
    """A saved run with KL divergence figures, the newest where ``run`` is None: (its time, one
    point per profile, by ``run_key``; named by its profile's name, by its ref where another of
    the run has that name too). ``entries`` are ``results.history(kind="eval", test="kld_mean")``,
    newest first."""
    if not entries:
        return "", []
    run = entries[0].run_id if run is None else run
    grouped: dict[str, list[HistoryEntry]] = {}
    for e in entries:
        if e.run_id == run:
            grouped.setdefault(run_key(e), []).append(e)
    names = [rows[0].profile for rows in grouped.values()]
    points = []
    for key, rows in grouped.items():
        profile = key if names.count(rows[0].profile) > 1 else rows[0].profile
        reference = bool(rows[0].data.get("reference"))
        weights, seconds, tokens = [], 0.0, 0
        for r in rows:
            n_ctx, n_chunks = int(r.data.get("n_ctx", 0)), int(r.data.get("n_chunks", 0))
            weights.append(int(r.data.get("n_scored", n_chunks * (n_ctx - 1 - n_ctx // 2))))
            seconds += float(r.data.get("decode_seconds", 0.0))
            tokens += n_ctx * n_chunks
        first = rows[0].data
        points.append(QuantizationPoint(
            profile=profile,
            model=Path(rows[0].model).name,
            file_type=str(first.get("file_type", "?")),
            model_bytes=int(first.get("model_bytes", 0)),
            reference=reference,
            kld_mean=0.0 if reference else _pooled(rows, weights, "kld_mean"),
            same_top=1.0 if reference else _pooled(rows, weights, "same_top"),
            ppl_delta_pct=0.0 if reference else _pooled(rows, weights, "ppl_delta_pct"),
            tokens_per_second=tokens / seconds if seconds > 0 else 0.0,
            documents=[str(r.data.get("document", "")) for r in rows],
            kv_bytes=int(first.get("kv_bytes", 0)),
            key=key,
            total_bytes=int(first.get("total_bytes", 0)),
            speed_left_out=bool(first.get("speed_left_out", False)),
        ))
    return next((e.created for e in entries if e.run_id == run), ""), points
