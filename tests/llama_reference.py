"""llama-perplexity's window recipe written out independently of workstation's loop, for tests
to check our figures against: llama-cpp-python's high-level ``Llama`` (its own tokenizer call
and eval loop, logits for every position) and float64 numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def window_log_probs(
    model_path: Path, text: str, n_ctx: int, n_chunks: int, flash_attn: bool
) -> tuple[list[int], list[np.ndarray]]:
    """The text's tokens, and per window the float64 log-softmax of every position's logits
    ([n_ctx, n_vocab]): each window from an empty cache, its first token BOS when the model
    adds one."""
    import llama_cpp

    llm = llama_cpp.Llama(
        # one thread for the prompt too (its default, the machine's cores, spun on a busy CI machine: 2x the CPU)
        str(model_path), n_ctx=n_ctx, n_batch=n_ctx, n_threads=1, n_threads_batch=1, logits_all=True,
        flash_attn=flash_attn, verbose=False,
    )
    try:
        tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        adds_bos = tokens[0] == llm.token_bos()  # the vocabulary says whether BOS leads a text
        out = []
        for i in range(n_chunks):
            window = tokens[i * n_ctx : (i + 1) * n_ctx]
            if adds_bos:  # as llama-perplexity: each window starts with BOS when the model uses one
                window[0] = llm.token_bos()
            llm.reset()
            llm.eval(window)
            logits = np.array(llm.scores[:n_ctx], dtype=np.float64)
            log_probs = logits - logits.max(axis=1, keepdims=True)
            log_probs -= np.log(np.exp(log_probs).sum(axis=1, keepdims=True))
            out.append(log_probs)
    finally:
        llm.close()
    return tokens, out


def scored_positions(n_ctx: int) -> range:
    """The positions llama-perplexity scores in a window: the second half, each predicting the next."""
    return range(n_ctx // 2, n_ctx - 1)
