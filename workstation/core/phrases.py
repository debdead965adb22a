"""What the core says in sentences that the TUI shows in Turkish too.

A sentence is a list of phrases, each a key and its values (a value may be a phrase itself, or
a list of phrases):
``[("fit.gpu", {"where": ("fit.where_one", {}), "used": "5.2 GB", "total": "24 GB"})]``. The
command line and JSON print it in English with ``say(phrases)``; the TUI passes its locale's
lookup (``say(phrases, texts.get)``), and Turkish lives in ``tui/locales/tr.yaml`` under the
same keys. English is here, in one place: the planner's verdicts, the sizing headline, and
the errors a person meets most (``WorkstationError(said=...)``: the office server, a model
file, a document).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import string
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from workstation.core.letters import number_suffix
from workstation.core.moments import MOMENT, Moment, local_text

Phrase = tuple[str, dict[str, Any]]
Lookup = Callable[[str], str | None]  # a translation by key (the TUI's Texts.get), None: English

# a key's day limit's tokens, explained where the office server's refusal or stop gives their number
# (Turkish says it in each sentence's own case: "sözcük parçası (token)")
SERVER_TOKENS = "tokens (pieces of words, as the server counts text)"

ENGLISH: dict[str, str] = {
    # the memory plan's verdict (planner.plan)
    "fit.gpu_too_small": ("does not fit: {layers} layers on the {where} need {need} of VRAM, "
                          "{usable} is usable; set gpu_layers to auto ({auto} layers fit)"),
    "fit.too_big": ("does not fit: needs {need}, this machine has {have} free for it (what is free, "
                    "less {reserve} kept for the system and other programs)"),
    # what to change, with the names F3 → E (the profile's load settings) gives them: "a 4,096-token
    # context" and "q8_0 K/V" were words for engineers, and where to change them was not said
    "fit.context_hint": ("; its Context of {context} tokens (the chat and documents it reads at once) alone takes "
                         "{kv}: lower Context, or set Context memory K and V to q8_0, in F3 → E"),
    "fit.context_hint_fits": ("; its Context of {context} tokens (the chat and documents it reads at once) alone "
                              "takes {kv}: with Context set to {fits} in F3 → E it fits here"),
    "fit.context_hint_q8": ("; its Context of {context} tokens (the chat and documents it reads at once) alone "
                            "takes {kv}: with Context memory K and V set to q8_0 in F3 → E, a Context of {q8} fits here"),
    "fit.context_hint_both": ("; its Context of {context} tokens (the chat and documents it reads at once) alone "
                              "takes {kv}: with Context set to {fits} in F3 → E it fits here, or with {q8} and "
                              "Context memory K and V set to q8_0"),
    # after what does not fit in memory: the other way out
    "fit.smaller_model": "; or choose a smaller model in F4",
    # a context that fits only with its weights read from the disk (``paged_bytes``) runs slowly
    "fit.context_hint_slower": "; {slow} tokens fit too, but run slowly (the model is then read from the disk as it writes)",
    "fit.context_hint_slow": "; slowly, though: the model is then read from the disk as it writes",
    "fit.too_big_limit": ("does not fit: needs {need}, and the memory limit this program runs under "
                          "leaves {have} for it"),
    "fit.gpu": "fits entirely on the {where}: {used} of {total}",
    "fit.partial": ("{layers} of {n_layer} layers on the {where} ({used} of {total}), "
                    "the rest on the CPU: it runs, more slowly"),
    "fit.cpu": "runs on the CPU{why}: needs {need} of the {free} of memory free",
    # weights that do not fit in the memory free are read from the model's file as it runs
    "fit.cpu_paged": "runs on the CPU{why}, but slowly: {said}",
    "fit.paged": "; slower still: {said}",
    # (plain words: "extra memory it takes on this CPU, to write faster … (repack)" was not understood,
    # nor "a second copy of the model, laid out for this CPU" before it)
    "fit.repacked": "; {size} of that is extra memory this processor uses so that answers come quicker",
    "fit.paged_why": ("it needs {need} of memory and {free} is free for it, so {short} of the model is "
                      "read from the disk again for every word it writes; {short} more free memory ({how}) "
                      "makes it fast"),
    "fit.paged_close": "close other programs",
    "fit.paged_more_ram": "this PC has {total} in all, so more memory fitted in it",
    "fit.paged_note": "the model runs slowly here, because {said}",
    "fit.paged_limit": "a larger memory limit for this program",
    "fit.cpu_layers_zero": " (gpu_layers is 0)",
    "fit.cpu_no_room": " (no room on the GPU)",
    "fit.where_one": "GPU",
    "fit.where_many": "{n} GPUs",
    # the draft model is "a small helper model", as F3's row says it ("with its draft model 8.8 GB in
    # RAM": one thing had two names on one row, and "RAM" where the verdict before said "memory")
    # a draft model asked onto a GPU (draft_gpu_layers) that has no room for it
    "fit.draft_gpu_too_small": ("does not fit: its small helper model's {layers} layers on the {where} need {need} "
                                "of VRAM, {usable} is usable; set draft_gpu_layers to auto{fewer}"),
    "fit.draft_gpu_fewer": ", or to {layers} or fewer",
    # the model and its draft both asked onto a GPU (gpu_layers, draft_gpu_layers) without room for either
    "fit.pair_gpu_too_small": ("does not fit: {layers} layers on the {where} need {need} of VRAM and its small "
                               "helper model's {draft_layers} layers {draft_need}, {usable} is usable; set gpu_layers "
                               "and draft_gpu_layers to auto"),
    # the model asked onto a GPU (gpu_layers) that has room for its draft but not for both
    "fit.beside_draft_gpu_too_small": ("does not fit beside its small helper model: {layers} layers on the {where} "
                                       "need {need} of VRAM, and {usable} is usable once the helper model's "
                                       "{draft_layers} layers have {draft_need}; set gpu_layers to auto ({auto} "
                                       "layers fit)"),
    "fit.draft_pair_too_big": ("does not fit with its small helper model: together they need {need} of memory, "
                               "and {have} is free for them"),
    # (under a memory limit, as the target alone says it: "is free" was not why)
    "fit.draft_pair_too_big_limit": ("does not fit with its small helper model: together they need {need} of "
                                     "memory, and the memory limit this program runs under leaves {have} for them"),
    "fit.refused": "The profile {profile} was not loaded; it {verdict}.",
    "fit.draft_pair": "; with its small helper model it needs {on_gpu}{ram} of memory",
    "fit.draft_on_gpu": "{gpu} on the GPU and ",
    # settings that load but work against the user (profile_plan.setting_phrases)
    "fit.threads_past_cores": ("threads is {threads} but this PC has {cores} physical cores: more threads than "
                               "cores make llama.cpp slower, not faster; use {cores} or auto"),
    "fit.context_past_trained": ("context is {context} tokens but {model} was trained for {trained}: past "
                                 "that its answers degrade"),
    "fit.no_chat_template": ("{model} was not made for chat (it has no chat template: a base model, probably), so "
                             "its replies may ramble; a model made for chat (an -Instruct or -it one) answers better"),
    "fit.setting_note": "Note: {what}.",
    # the plan's notes (MemoryPlan.note_phrases): what it counted, and how
    "fit.no_gpu_found": "gpu_layers asks for GPU layers but no NVIDIA GPU was found; all layers run on the CPU.",
    "fit.model_shaped": ("{model} is not downloaded yet: planned from its published shape at {quant}; "
                         "'{command}' downloads it{size}"),
    "fit.model_size": ", about {size}",
    "fit.draft_not_downloaded": "its helper model for faster replies (draft), {model}, is not downloaded yet, so it is not counted",
    "fit.draft_counted": ("counts its helper model for faster replies (draft), {model}: {weights} for the model itself "
                          "(weights) and {kv} of context memory at full size (f16 K/V) {where}{shaped}"),
    "fit.draft_on_the_gpu": "on the GPU",
    "fit.draft_on_the_cpu": "on the CPU",
    "fit.draft_shaped": " (planned from its published shape: it is not downloaded yet)",
    # why a draft model cannot draft for its model (model_info.draft_problem)
    "draft.vocabulary": "The draft model {name} uses {why}, so it cannot draft for {model}.",
    "draft.context": ("The draft model {name} was trained for {trained} tokens of context but this profile uses "
                      "{context}; lower the context or pick another draft model."),
    "draft.vocabulary_size": "a different vocabulary ({draft} tokens, where the model it drafts for has {target})",
    "draft.tokenizer": "a different tokenizer ({draft} vs {target})",
    "draft.token_text": "a different vocabulary (token {n} is {draft} there, not {target})",
    # fit --check: can fit's answer be trusted here (commands/fit.check_verdict)
    "fit.check_none": "llama.cpp reported no allocation to compare with.",
    "fit.check_within": ("the estimate is within {pct} of what llama.cpp allocated{part}, so what '{command}' says "
                         "for this profile holds."),
    "fit.check_above": ("the estimate is {pct} above what llama.cpp allocated{part}: '{command}' errs on the safe "
                        "side for this profile."),
    "fit.check_below": ("llama.cpp allocated {size} more than estimated{part}: keep that much more memory free than "
                        "'{command}' asks for this profile."),
    "fit.check_worst": " (the {component} estimate alone is off by {pct})",
    "fit.part_weights": "weights",
    "fit.part_kv_cache": "KV cache",
    "fit.part_compute": "compute",
    "fit.part_total": "total",
    "fit.freed_counted": "It fits once {model}, loaded now, is closed, which frees {size}: the switch does that first.",
    "fit.slow": ("Slow here: it would write about {words} words a second (a page of answer in about {minutes} "
                 "minutes), slower than people read."),
    "engine.not_a_number": ("The model's numbers for this text came out as NaN (not a number): its file is damaged "
                            "or was converted wrongly, or a setting (its K/V cache type, its GPU layers) does not "
                            "suit it; download or convert it again, or change the setting."),
    "fit.small_for_language": ("{name} is a very small model ({n} parameters): its answers in languages other than "
                               "English are often nonsense; a larger model (F4) writes them better."),
    # a key's file (serve's --api-key-file, a desk profile's remote.api_key_file: keys.key_from_file)
    "key.named_remote": "The key file (remote.api_key_file)",
    "key.file_open": "{named} {path} can be read by {readers}, so the key in it is no secret; {who}, then {then}.",
    "key.readers_all": "every user of this computer",
    "key.readers_group": "its group, not only by you",
    "key.only_you": "let only you read it (chmod 600 {path})",
    "key.only_service": ("let only the server's user read it (chmod 600 {path}, or a file of root's with the "
                         "service's group as its group: chown root:workstation, chmod 640)"),
    "key.then_try": "try again",
    "key.then_restart": "start the server again",
    "key.file_unreadable": "{named} {path} cannot be read ({why}); give the path of a file whose first line is the key.",
    "key.file_not_text": "{named} {path} is not text; its first line should be the key.",
    "key.file_empty": "{named} {path} has no key on its first line; write the key there (one line), then {then}.",
    "key.file_bearer": ("{named} {path} has 'Bearer ' before the key; write only the key, without 'Bearer ', "
                        "then {then}."),
    "key.bearer": "The key from {named} starts with 'Bearer '; write only the key, without 'Bearer '.",
    "fit.small_for_language_server": ("{name}, the office server's model, is a very small model ({n} parameters): its "
                                      "answers in languages other than English are often nonsense; ask whoever runs "
                                      "the server for a larger one."),
    # people's keys (core/keys.py, commands/keys.py): the mistakes; what the command says is keys_cmd.* in en.yaml
    "keys.control_character": ("The key name {name} holds a tab, a line break or another control character; type it "
                               "with plain spaces between its words."),
    "keys.name_not_allowed": ("The key name {name} is not allowed; a name is 1 to 64 letters, digits, spaces, '.', "
                              "'_', '@' or '-', starting with a letter or digit (a name of several words in quotes: "
                              "\"Ayşe Yılmaz\")."),
    "keys.tokens_per_day": "--tokens-per-day is {n}; it must be 1 or more, or 0 for no limit.",
    "keys.max_parallel": "--max-parallel is {n}; allowed values are 1 to 64, or 0 for the server's default.",
    "keys.profile_comma": "The profile name {profile} holds a comma; list profiles as a,b.",
    "keys.other_capitals": ("'{name}' is '{person}' in other capitals, and '{person}' already has a key; revoke it "
                            "first ({command})."),
    "keys.has_key": "'{name}' already has a key; revoke it first ({command}).",
    "keys.rename_taken": "The name '{name}' is taken by '{person}', whose usage would mix with this person's; choose another.",
    "keys.revoked_no_limits": ("The key of '{name}' was revoked on {when}, so it has no limits to change; make a new "
                               "one with: {command}"),
    "keys.already_revoked": "The key of '{name}' was already revoked on {when}; a running server refuses it.",
    "keys.no_active_key": "There is no active key named '{name}'; active keys: {names}.",
    "keys.none": "none",
    "keys.say_what": "Say what to change: --tokens-per-day, --max-parallel or --profiles.",
    "keys.no_profiles_add": ("--profiles names no profile, so no key was made; to let it use every profile, give "
                             "--profiles any."),
    "keys.no_profiles_set": ("--profiles names no profile, so the key was left as it was; to let it use every "
                             "profile, give --profiles any."),
    "keys.no_such_profile": "There is no profile '{profile}' in the profiles folder.{guess} {then}",
    "keys.no_key_made": "No key was made.",
    "keys.left_as_it_was": "The key was left as it was.",
    # ``usage --since``'s day it cannot read (core/usage.parse_since)
    "usage.since_bad": ("--since is {text}; write a day as YYYY-MM-DD (or DD.MM.YYYY), today, yesterday or 7d "
                        "(the last 7 days), or a time as YYYY-MM-DDTHH:MM."),
    # the sizing headline (sizing.SizingResult.headline)
    "headline.here_cpu": "This machine's CPU is enough",
    "headline.use": "Use {machine}",
    "headline.buy": "Buy a {machine}",
    "headline.buy_priced": "Buy a {machine} (about ${price})",
    "headline.buy_for_desktop": "Buy a {machine} for a desktop PC",
    "headline.buy_for_desktop_priced": "Buy a {machine} (about ${price}) for a desktop PC",
    "headline.buy_desktop_laptop": ("Buy a desktop PC with a {machine} (a laptop cannot take a graphics card; "
                                    "an external GPU box can)"),
    "headline.buy_desktop_laptop_priced": ("Buy a desktop PC with a {machine} (about ${price} for the card; a laptop "
                                           "cannot take a graphics card; an external GPU box can)"),
    # the first line (sizing.SizingResult.answer_phrases): this PC for the office, plainly
    "headline.this_pc": "this PC",
    "headline.this_laptop": "this laptop",
    "headline.pc_yes": ("Yes: {pc} can serve {people} with {model} {quant}: it answers {at_once}{parallel}; at the "
                        "busy hour a person waits about {ttft} for the first word, then gets about {tps} tokens a "
                        "second{crowd}."),
    # fast enough, but a model under the workload's size floor: not a "Yes" (it said "Yes: this PC can serve
    # 6 people" and only after it that the model is too small for the work)
    "headline.pc_small": ("No, not for real work: {pc} is fast enough for {people} with {model} {quant}, but that "
                          "model is too small for office work: it answers {at_once}{parallel}; at the busy hour a "
                          "person waits about {ttft} for the first word, then gets about {tps} tokens a "
                          "second{crowd}."),
    "headline.pc_no": ("No: {pc} cannot serve {people} at these targets with {model} {quant} ({misses}): it answers "
                       "{at_once}{parallel}; at the busy hour a person would wait about {ttft} for the first word, "
                       "then get about {tps} tokens a second{crowd}; {served}."),
    "headline.crowd": (" (about {tps} tokens a second each with {n} at once; one who asks while all {n} are "
                       "answered waits about {wait} for the first word)"),
    "headline.crowd_one": " (one who asks while another is answered waits about {wait} for the first word)",
    "headline.pc_overloaded": ("No: {pc} cannot serve {people} with {model} {quant}: it answers {at_once}{parallel}, "
                               "and the busy hour brings more chats than it can answer ({misses}); {served}."),
    "headline.pc_nothing_fits": "No: no candidate model fits {pc}'s memory.",
    # this PC's CPU speed not measured: the line above is an estimate (it read as a fact, "fast enough")
    "headline.estimate": " This PC's speed was not measured: these are estimates, by the figures of {where}.",
    "headline.estimate_noisy": (" This PC's measured speeds disagree too much to go by: these are estimates, by the "
                                "figures of {where}."),
    "headline.small_model": (" This model is very small: its answers are often wrong; a {billions}B-or-larger model "
                             "({billions} billion weights or more) answers better"),
    "headline.small_model_needs": ", and needs about {memory} of memory (the options below)",
    "headline.small_model_end": ".",
    "headline.quality_below": " Its answers scored {points} points below the best model measured on '{tasks}'.",
    "headline.desk_pc": ("This sizes this PC; your profile asks the office server at {server}, whose own sizing is "
                         "'{cmd}' run on the server. "),
    "headline.parallel": " (start the server with '{cmd}')",
    # how many people 'serve' answers at once (serve's first line, and the sizing's)
    "serve_cmd.one_at_a_time": "one person at a time",
    "serve_cmd.at_once": "up to {n} people at once",
    "headline.thinking_off": " with thinking off",
    "headline.slot": "{n} slot",
    "headline.slots": "{n} slots",
    "headline.everyone": "each of {people} people",
    "headline.one_person": "the one person",
    "headline.best": ("{where}: run {model}{thinking} at {quant} with a {kv} K/V cache and {slots}{parallel}; "
                        "{who} gets about {tps} tokens a second at the busy hour, the first "
                        "word in {ttft}, and {docs} documents fit in a night."),
    # how to get the recommended model file (sizing.SizingResult.get_it)
    "headline.get_pull": " Get the model with '{cmd}'.",
    "headline.get_installed": " It is on this PC as {name}: '{cmd}' makes a profile that runs it.",
    "headline.get_elsewhere": (" The catalog does not have {model} at {quant}: download a {quant} GGUF "
                               "file of it (on Hugging Face) and add it with '{add} {file}'."),
    # a command's placeholders where a sentence shows how to type it ('chat -c NAME "..."'; the
    # commands' own lines, t("cli.file"), and the core's phrases, ("cli.file", {})): as --help's usage
    # lines and argparse's mistakes name them, in Turkish too (hints said AD, DOSYA beside --help's NAME)
    "cli.name": "NAME",
    "cli.file": "FILE",
    "headline.nothing_fits": ("Nothing meets this workload: no candidate model fits any candidate machine "
                            "at {context} tokens per slot; try a smaller context or more memory."),
    # what is missed first, then the closest option (it read "Nothing meets… Closest: … it would serve
    # 7,443 people", the miss of the model's size in brackets between)
    "headline.closest": ("Nothing meets this workload ({people}): even the closest option misses it ({misses}). "
                         "The closest: {what}; {served}."),
    "headline.fast_enough": "it is fast enough for {people}, but not what the workload asks for",
    "headline.n_people": "{n} people",
    "headline.n_person": "1 person",
    "headline.closest_what": "{machine}: {model} {quant}, K/V {kv}, {slots}",
    "headline.would_serve": "it would serve {people} at these targets",
    "headline.misses_one": "it misses the targets even for one person",
    "headline.this_cpu": "this machine's CPU",
    "headline.never": "never (overloaded)",
    "headline.summary": ("{where}: {model} {quant}, K/V {kv}, {slots}: about {tps} tokens a second a person, the "
                         "first word in {ttft}"),
    # how far the memory estimates have been off on this machine (memory_check.describe_history)
    "memory_check.none": "No model loads recorded on this machine yet: nothing to compare the estimates with.",
    "memory_check.lead": "Memory needs were checked against {n:|real model load|real model loads} on this machine",
    "memory_check.total": ": the estimates were off by {mean}% on average (at worst {worst}%)",
    "memory_check.total_exact": ": the estimates were exact every time",
    "memory_check.by_part": ". By part: {parts}.",
    "memory_check.end": ".",
    "memory_check.part": "{part} {mean}% (at worst {worst}%, {model})",
    "memory_check.part_exact": "{part} exact",
    "memory_check.weights": "weights",
    "memory_check.kv_cache": "K/V cache",
    "memory_check.compute": "compute buffers",
    # the targets an option misses (sizing.SizingOption.miss)
    "miss.no_fit": "does not fit",
    "miss.quality": "quality {points} points below the best",
    "miss.params": "a model smaller than {billions}B weights",
    "miss.overloaded": "overloaded: takes at most {most} chats an hour, the busy hour brings {busy}",
    "miss.tps": "{tps} tokens a second a person, under the {goal} wanted",
    "miss.ttft": "the first word in {ttft}, over the {goal} s wanted",
    "miss.docs": "{docs} documents a night, under the {goal} wanted",
    # size with nothing to size (commands/size.run)
    "size.people_min": "--people must be 1 or more, not {n}.",
    "size.no_such_workload": ("No workload file or shipped workload named '{ref}'; shipped ones are {names} (in {dir}). "
                              "For an office of another size, give the number of people: '{people}'; for other chats, "
                              "documents or targets, copy one and edit it: '{copy}', then '{own}'."),
    "size.nothing": ("Give a workload (a YAML file or a shipped name such as office-20), the office's number of "
                     "people ('{command}'), or --measure."),
    # the size table's (size_report.text_report): what its short headers mean, said under it
    "size.table_key": ("tok/s/person: tokens a second each person gets at the busy hour; TTFT: the wait for the "
                       "first word then; K/V: how the memory that holds each conversation is stored (q8_0 and q4_0 "
                       "keep it smaller); slots: how many people are answered at once."),
    "size.overloaded": "overloaded",
    "size.gpu_speeds": "GPU speeds: a bandwidth model fitted to published llama-bench figures (see --json or -o for each).",
    # the table's cells
    "size.here": "here",
    "size.price": "${price}",
    "size.no_price": "-",
    "size.this_cpu": "this machine (CPU)",
    "size.memory_of": "{need} of {have}",
    "size.yes": "yes",
    "size.not_measured": "not measured",
    "size.no_floor": "no quality floor asked",
    "size.quality_on": "{percent} on '{tasks}'",
    "size.ranking": ("Ranked by price (a machine you already have comes first when it is enough), then model "
                     "size, bits per weight, K/V precision, speed."),
    "miss.and": "; ",
    # what 'audit verify' finds in the server's audit trail (core/audit.verify)
    "audit.where": "{file} line {line}",
    "audit.span": "{first} to {last}",
    "audit.comma": ", ",
    "audit.and_more": " and {n} more",
    "audit.not_a_line": "{where} is not an audit line: it was changed.",
    "audit.inserted_one": "{where} was inserted: the line after it links to the line before it.",
    "audit.inserted": "{span} inserted: {where} links to {before}.",
    "audit.removed_one": "1 line removed before {where} (seq {seq} is missing).",
    "audit.removed": "{n} lines removed before {where} (seq {first} to {last} are missing).",
    "audit.link_changed": "{where} was changed: the next line's link to it does not match.",
    "audit.no_start": "{where} does not link to the start of the trail.",
    "audit.wrong_seq": "{where} has seq {seq}, expected {expected}.",
    "audit.hash_changed": "{where} was changed: its content does not match its hash.",
    "audit.after": "after {where}",
    "audit.from_start": "from the start",
    "audit.removed_after_one": "1 line removed {after}: the usage file records seq {seq}.",
    "audit.removed_after": "{n} lines removed {after}: the usage file records seq {seq}.",
    "audit.head_changed": "{where} was changed: the usage file records another hash for it.",
    "audit.changed_one": ("{listed} was changed: the usage file records another hash for it (the chain was made "
                          "again after)."),
    "audit.changed": ("{listed} were changed: the usage file records another hash for them (the chain was made "
                      "again after)."),
    # what the speeds of this machine go by (calibration.this_machine's source; the size report's line)
    # a writing speed in words a second, its tokens a second after it where figures are to be compared
    # (F5's headline beside its rows, bench's replay summary): one phrase for both
    "speed.words_a_second": "about {words} words a second{rate}",
    "speed.rate_term": " ({tps} tok/s)",
    "speed.reference": "a 2-core reference PC",
    "speed.reference_scaled": "a 2-core reference PC scaled to this one's {cores} cores and {gbps} GB/s",
    "speed.not_measured": "not measured here: figures of {where} (run '{cmd}' to measure this one)",
    "speed.fitted": "fitted to {n} decode figures measured here ({models}; {by})",
    "speed.too_noisy": ("an estimate, not a measurement (figures of {where}): the {n} figures measured here disagree "
                        "too much to go by (each one left out of the fit was predicted {off} off on average), as "
                        "another program was probably using the CPU; measure again with '{cmd}' when the PC is "
                        "quiet (other programs closed)"),
    "speed.cpu_kv_slower": ("counted about a fifth slower ({speed}x) on the CPU for its context memory smaller than "
                            "full size (a quantized K/V cache), which the CPU is slower to write and read"),
    "size.speed_here": "This machine's speed: {source}",
    "size.speed_off": "; off by {off} on average here (each figure left out of the fit)",
    "size.speed_model": "This machine's speed model: {source}.",
    "size.mean_error": "mean error {off}",
    # --measure's table: each figure measured beside the prediction of a fit that left it out
    "size.col.number": "#",
    "size.col.machine": "machine",
    "size.col.price": "price",
    "size.col.quant": "quant",
    "size.col.kv": "K/V",
    "size.col.memory": "memory",
    "size.col.tps_person": "tok/s/person",
    "size.col.ttft": "TTFT",
    "size.col.docs_night": "docs/night",
    "size.col.quality": "quality",
    "size.col.meets": "meets",
    "size.col.model": "model",
    "size.col.slots": "slots",
    "size.col.measured": "measured tok/s",
    "size.col.predicted": "predicted (left out)",
    "size.col.error": "error",
    "size.thinks": ("{which} thinks before answering: these figures are for thinking off ('thinking: false' in the "
                    "profile); with thinking on, a reply first spends hundreds to thousands of tokens thinking, so "
                    "answers take several times longer."),
    "size.think": ("{which} think before answering: these figures are for thinking off ('thinking: false' in the "
                   "profile); with thinking on, a reply first spends hundreds to thousands of tokens thinking, so "
                   "answers take several times longer."),
    "size.names_and": "{names} and {last}",
    "size.cpu_kv": ("On a CPU a q8_0 or q4_0 K/V cache saves memory but costs time: those rows' speeds are "
                    "{slower}, as F3 and 'fit' count them. Their wait for the first word is not counted slower, "
                    "though with a long prompt it is much later. 'bench --replay' on profiles with each K/V type "
                    "measures both on your prompts."),
    "size.not_considered": "Not considered (no known shape): {models}.",
    "size.wrote": "wrote {paths}",
    # size -o's Markdown report (size_report.markdown_report) and its charts
    "report.title": "Sizing: {name}",
    "report.workload": "The workload",
    "report.what": "what",
    "report.value": "value",
    "report.people": "people",
    "report.chats": "chats per person per hour (busy hour)",
    "report.prompt_reply": "prompt / reply tokens",
    "report.context": "context per slot",
    "report.context_value": "{n} tokens",
    "report.documents": "documents per day",
    "report.documents_value": "{n} of {tokens} tokens, {hours} h a night",
    "report.latency": "latency wanted",
    "report.latency_value": "first token within {ttft} s, {tps} tokens/s per person",
    "report.quality": "quality floor",
    "report.quality_value": "at most {loss} below the best on '{tasks}'",
    "report.no_quality": "none",
    "report.ranked": "Ranked options",
    "report.closest": "Nothing meets the workload: the closest options",
    "report.meeting": "{n} of {total} options meet every target. ",
    "report.per_machine": "The best option on each machine",
    "report.charts": "Charts",
    "report.people_chart": "tokens/s per person against people",
    "report.memory_chart": "memory stack per option",
    "report.calibrated": "How the speeds were calibrated",
    "report.decode": ("Decode: each step reads the weights once for all the sequences decoding together and each "
                      "sequence's K/V cells, plus a little compute per token; prompts are compute-bound."),
    "report.this_cpu": "**This machine (CPU):** {source}.",
    "report.checks": "Each measured figure beside the prediction of a fit that left it out:",
    "report.predicted": "predicted tok/s",
    "report.gpus": "GPUs:",
    "report.gpus_fitted": " fitted to published llama-bench figures (rows marked fit) and checked against others:",
    "report.col.gpu": "GPU",
    "report.col.test": "test",
    "report.col.published": "published tok/s",
    "report.col.predicted": "predicted",
    "report.col.role": "role",
    "report.col.source": "source",
    "report.memory": "Memory estimates on this machine",
    "report.assumptions": "Assumptions",
    "report.poisson": "Chats arrive at random (Poisson) at the busy hour's rate; a wait for a slot is Erlang C.",
    "report.on_card": ("A GPU option holds the whole model, K/V cache and compute buffers on the card (flash "
                       "attention on)."),
    "report.shapes": ("Models not on disk are planned from their published shapes at the quantization's average bits "
                      "per weight; quality is 'not measured' unless `{eval}` saved a score for that file."),
    "report.map_reduce": "Documents are summarized map-reduce: chunks of the slot's context, one summary each.",
    "report.chart_people": "people in the office (busy hour)",
    "report.chart_tps": "tokens/s per person",
    "report.chart_speed": "Reply speed each person gets",
    "report.chart_target": "target",
    "report.chart_weights": "weights",
    "report.chart_kv": "K/V cache",
    "report.chart_compute": "compute buffers",
    "report.chart_card": "card memory",
    "report.chart_stack": "Memory stack per option",
    # a file a person named cannot be written (atomic.cannot_write: an export, -o)
    "data.unusable": "The data folder {path}, where conversations and measurements are kept, cannot be used: {why}; "
                     "set WORKSTATION_DATA to a folder you can write in.",
    "data.other_owner": ("The data folder {path} belongs to the user {user}, and files root made there could "
                         "not be opened by that user (the server's keys, usage and audit trail, or the "
                         "conversations); run the command as that user: {command} (in a container where that user "
                         "does not exist, set WORKSTATION_ALLOW_ROOT=1 to let root work there)"),
    "profiles.office_missing": ("WORKSTATION_PROFILES names the folder {path}, which is not there (a typo?), so the "
                                "office's profiles are not listed, only the shipped ones and your own; set it to the "
                                "folder that holds them."),
    "models.dir_missing": ("WORKSTATION_MODEL_DIRS names the folder {path}, which is not there (a typo?), so its "
                           "models are not listed; set it to the folder that holds them (folders separated by '{sep}')."),
    "file.cannot_write": "Cannot write {path}: {why}.",
    "store.draft_not_saved": "The draft could not be saved in {path} ({reason}).",
    "file.not_a_folder": "{folder} is a file, not a folder",
    "file.no_folder": "the folder {folder} does not exist",
    "file.no_new_files": "the folder {folder} does not take new files",
    "file.no_permission": "there is no permission to write in {folder}",
    "file.disk_full": "the disk is full",
    # a byte budget given in the environment (WORKSTATION_KV_CACHE_MB, WORKSTATION_KLD_CACHE_MB)
    "budget.not_a_size": ("{name} is '{raw}'; it must be a whole number of MiB, 0 and up (0 keeps nothing on "
                          "disk; unset, it is {default})."),
    # the saved KV states (core/kv_state.py, core/prompt_cache.py): said in the log, the prompt read as usual
    "kv.ignored": "Ignored a saved KV state: {why}; the prompt is read as usual.",
    "kv.not_ours": "{file} is not a workstation KV state file",
    "kv.truncated": "{file} is truncated",
    "kv.damaged_header": "{file} has a damaged header",
    "kv.unreadable": "{file} cannot be read ({reason})",
    "kv.other_settings": "{file} was saved for another model or settings",
    "kv.corrupt": "{file} is corrupt",
    "kv.refused": "Ignored a saved KV state: llama.cpp could not load {file}.",
    "kv.other_cells": "Ignored a saved KV state: {file} holds other cells than its header says.",
    "kv.not_saved": "Could not save a KV state: {why}.",
    "kv.no_room": "there is no room for one of {size}: the disk holding {folder} is (nearly) full",
    "kv.over_budget": ("one of {size} is larger than the {budget} that WORKSTATION_KV_CACHE_MB lets the saved "
                       "states take; with a larger value, long conversations go on at once when reopened"),
    "kv.being_written": "{file} is being written now",
    # the prompts a server was asked (kv_state.SEEN_FILE): forgotten, only a later save of theirs costs it
    "kv.seen_unreadable": "Ignored the prompts asked before: {file} cannot be read ({reason}).",
    "kv.seen_damaged": "Ignored the prompts asked before: {file} is damaged.",
    "kv.seen_not_kept": "Could not keep the prompts asked before: {why}.",
    "file.read_only": "it is on a disk that takes no writes (read-only)",
    "file.is_a_folder": "that is a folder; give a file name",
    "file.is_input": "it is one of the files read, and would be replaced; give another file name",
    "file.os_says": "{reason}",
    "quantize.no_room": "the copy needs about {need} and its disk has {free} free",
    # a sampling setting out of range (profile_check.check_sampling: a profile, chat's options, Ctrl+E)
    "check.between": "{name} is {value}; allowed values are {low} to {high}.",
    "summary.max_tokens_least": "--max-tokens is {value}; a summary takes at least {least} tokens (fewer is a few words), so give {least} or more.",
    "check.between_off": "{name} is {value}; allowed values are {low} to {high} ({off} is off).",
    "check.above_zero": "{name} is {value}; allowed values are above 0 up to {high}.",
    # serve's options (commands/serve.py), in the command line's language
    "check.at_least": "{name} is {value}; it must be {low} or more.",
    "check.between_seconds": "{name} is {value}; allowed values are {low} to {high} seconds.",
    "check.stops": "{name} may hold up to {most} texts, none of them empty.",
    # a file the user named, read as text (atomic.read_text_file): {what} is one of the file.what_* below
    "file.missing": "{what} {path} does not exist.",
    "file.folder": "{what} {path} is a folder; give the file in it.",
    "file.no_read_permission": "{what} {path} cannot be read: there is no permission to read it.",
    "file.not_utf8": "{what} {path} cannot be read: it is not UTF-8 text.",
    "file.unreadable": "{what} {path} cannot be read ({why}).",
    "file.unreadable_because": "{what} {path} cannot be read: {why}",
    "file.what_profile": "Profile file",
    "file.what_workload": "Workload file",
    "file.what_task_set": "Task set",
    "file.what_replay": "Replay file",
    "file.what_schema": "The JSON schema file",
    "file.what_text": "Text file",
    # a settings file's YAML (settings_file.load_yaml), after the file's name ({src})
    "yaml.invalid": "{src} is not valid YAML{where}.",
    "yaml.tab": "{src} is not valid YAML{where}: it is indented with a tab, and YAML takes spaces only.",
    "yaml.at_line": " at line {line}",
    "yaml.too_large": "{src} is larger than {kib} KiB, too large for a settings file.",
    "yaml.too_large_hint": "{what} {src} is larger than {kib} KiB; {hint}.",
    "yaml.few_lines_profile": "a profile is a few lines",
    "yaml.few_lines_workload": "a workload is a few lines",
    "yaml.alias": "{src} uses a YAML alias (*name; a settings file may not use one){where}.",
    "yaml.twice": "{src} has '{key}' twice (the second would replace the first){where}.",
    # a profile file's problems (profile_check.profile_from_dict: each field checked, every problem said at once)
    "profile.empty": "{src} is empty; a profile holds settings, one a line, such as 'model: NAME'.",
    "profile.not_settings": "{src}: a profile holds settings, one a line, such as 'model: NAME' (this file holds something else).",
    "profile.in": "{src}: ",
    "profile.problems": "{src} has {n} problems: {list}",
    "profile.item": "({i}) {text}",
    "profile.next": " ",
    "profile.field": "field '{field}'",
    "profile.whole_or_word": "field '{field}' must be a whole number or a word such as auto, not {value}.",
    "profile.whole": "field '{field}' must be a whole number, not {value}.",
    "profile.number": "field '{field}' must be a number, not {value}.",
    "profile.text": "field '{field}' must be text, not {value}.",
    "profile.texts": "field '{field}' must be a text or a list of texts, not {value}.",
    "profile.true_false": "field '{field}' must be true or false, not {value}.",
    "profile.mapping": "field '{field}' must be a mapping of settings, not {value}.",
    "profile.api_key": ("remote.api_key is not a profile field: the key stays out of the file; put it in a "
                        "file only you can read and name that with remote.api_key_file (as in api_key_file: "
                        "~/.config/workstation/api-key), or in an environment variable named by "
                        "remote.api_key_env."),
    "profile.unknown": "unknown field '{field}'; {hint}",
    "profile.hint_fields": "allowed fields are {names}.",
    "profile.hint_close": "did you mean '{name}'?",
    "profile.hint_belongs_in_block": "it belongs as {name}: {value} in the {section}: block already there.",
    "profile.hint_meant_in_block": "did you mean {name}: {value} in the {section}: block already there?",
    "profile.hint_belongs_under": "it belongs under {section}, written as {section}: {{{name}: {value}}}.",
    "profile.hint_meant_under": "did you mean {section}: {{{name}: {value}}}?",
    "profile.choice": "field '{field}' is {value}; allowed values are {allowed}.",
    "profile.no_model": "field 'model' is missing; give a catalog name or a .gguf path.",
    "profile.context": ("field 'context' is {value}; allowed values are {low} to {high} tokens (a context must hold "
                        "a prompt token and a reply token)."),
    "profile.gpu_layers": "field 'gpu_layers' is {value}; allowed values are auto, all, or 0 and up.",
    "profile.threads": "field 'threads' is {value}; allowed values are auto or 1 to {high}.",
    "profile.parallel": "field 'parallel' is {value}; allowed values are 1 to 64 slots.",
    "profile.base_url": ("field 'remote.base_url' is {value}; it must be a server's address starting with http:// "
                         "or https://, as in http://office-pc:8088/v1."),
    "profile.v_needs_flash": ("kv_cache.v is {v} but flash_attn is off; llama.cpp needs flash attention for a "
                              "quantized V cache, so set flash_attn to auto or on, or v to f16."),
    "profile.draft_missing": "speculative.mode is draft but speculative.draft_model is missing.",
    "profile.draft_tokens": "field 'speculative.draft_tokens' is {value}; allowed values are 1 to 64.",
    # the app's engine cannot have a process of its own (engine_process.EngineProcess)
    "engine.no_process": "The model could not be started in a process of its own: {why}.",
    "engine.gpu_crashed": ("The model crashed while loading onto the GPU, so it runs on the CPU this time "
                           "(slower). Setting gpu_layers to 0 in the profile starts it on the CPU at once."),
    "engine.shm_read_only": ("this system's shared memory (/dev/shm) takes no writes (read-only); "
                             "ask whoever runs this PC to make it writable"),
    "engine.shm_full": "this system's shared memory (/dev/shm) is full; close other programs, then load it again",
    "engine.too_many_files": ("this program may have only {most} files open at once; raise the limit "
                              "(ulimit -n 4096) and start the app again"),
    "engine.library_broken": ("The install is incomplete: llama.cpp's library, which runs the models, could not "
                              "be loaded ({why}). Set it up again: delete the folder {venv}, then start {run} "
                              "(it installs llama.cpp again, and builds it anew if the kept build does not load: "
                              "5 to 10 minutes)."),
    "engine.library_broken_pip": ("llama.cpp's library, which runs the models, could not be loaded ({why}); "
                                  "install llama-cpp-python again for this machine (pip install --force-reinstall "
                                  "--no-cache-dir llama-cpp-python)."),
    "engine.no_new_process": ("the system refuses new processes now (too many running, or too little "
                              "memory); close other programs, then load it again"),
    # the app's own process under a memory limit too small for it (core/address_space.py): the whole sentence
    "app.does_not_fit": ("The app does not fit: it needs about {need} of memory, and the memory limit this program "
                         "runs under (ulimit -v) leaves {have}; start it with a larger limit (whoever looks after "
                         "this PC can raise it)."),
    # memory ran out in the app's own process (a thread it could not start, Python's MemoryError)
    "app.ran_out_limit": ("The program stopped because it ran out of memory: the memory limit it runs under "
                          "(ulimit -v) is {have}, and it needs about {need}; start it with a larger limit "
                          "(whoever looks after this PC can raise it)."),
    "app.ran_out": "The program stopped because this PC ran out of memory; close other programs and start it again.",
    # the model's process ended (engine_process.EngineStopped): the whole sentence
    "engine.stopped_killed_loading": ("The computer ran out of memory while loading the model, so the system stopped "
                                      "it; close other programs, lower Context (or set Context memory K and V to "
                                      "q8_0) in F3 → E, or choose a smaller model in F4 ('fit' says what fits), then "
                                      "load it again."),
    "engine.stopped_killed": ("The system stopped the model, most often because the computer ran out of memory; "
                              "close other programs, then load the profile again."),
    "engine.stopped_crash": "The model crashed inside llama.cpp ({signal}); load the profile again.",
    "engine.crash_gpu_hint": " If it crashes again, set gpu_layers to 0 in the profile to run it on the CPU.",
    "engine.stopped_crash_both": ("The model crashed inside llama.cpp ({signal}) on the GPU, then again on the CPU: "
                                  "the model file or this build of llama.cpp, not the GPU; load the profile again."),
    "engine.stopped_unexpectedly": "The model's process stopped unexpectedly; load the profile again.",
    # the model's process ended (engine_process.EngineStopped.how): "The model's process stopped (...)"
    "engine.ended_killed": "it was killed: most often the system does that when memory runs out",
    "engine.ended_crash": "it crashed inside llama.cpp: {signal}",
    "engine.ended_code": "it ended unexpectedly",  # (its exit code said nothing to office staff)
    # a turn refused before it read a model file changed on disk (model_file.FileStamp.check)
    "engine.model_file_changed": ("The model file {name} changed on disk since it was loaded (overwritten, cut "
                                  "short or replaced); restart to load it again (a model file must not be replaced "
                                  "while it is in use)."),
    # the API cannot start (server.process.bind_socket)
    "serve.port_in_use": "Port {port} on {host} is already in use; stop the other server or choose another with --port.",
    # a second serve on one data folder (commands/serve.py: its lock): each counted the day's tokens on its own
    "serve.running_here": ("Another office server already runs on this data folder (process {pid}, port {port}): stop "
                           "it first, or give this one another data folder with WORKSTATION_DATA."),
    "serve.running_here_starting": ("Another office server already runs on this data folder (process {pid}, still "
                                    "starting): stop it first, or give this one another data folder with "
                                    "WORKSTATION_DATA."),
    "serve.port_in_use_here": ("Port {port} on {host} is already in use by the office server already running from "
                               "this data folder (process {pid}): use that one, or stop it first."),
    "serve.port_denied": "Not allowed to bind port {port} on {host}; choose a port above 1023.",
    "serve.no_address": "Cannot bind to {host}: no such address on this machine.",
    "serve.not_this_pc": ("{host} is not one of this PC's addresses; serve on one that is ({addresses}), on {every} "
                          "(all of them) or on {loopback} (this PC alone)."),
    "serve.not_this_pc_none": ("{host} is not one of this PC's addresses (it has none on a network now); serve on "
                               "{loopback} (this PC alone), or on {every} to take its network address when it has one."),
    # serve (or the scheduler) given a desk PC's profile (backend: openai), by the name typed (-p office-server)
    "serve.remote_profile": ("The profile '{profile}'{title} sends its messages to the server at {url}; it has no "
                             "model on this PC to serve. Choose a profile with a model on this PC ('{command}' "
                             "shows each one's model)."),
    # serve's --host refused (server.process.check_host): off loopback a key is needed
    "serve.host_with_port": "--host is {host}; give the port on its own: --host {name} --port {port}.",
    "serve.short_key": ("The operator's key is {n} characters long, short enough to be guessed by anyone who "
                        "reaches {host}; use one of {least} or more (python3 -c \"import secrets; "
                        "print(secrets.token_urlsafe(32))\" makes one), or people's keys alone."),
    "serve.no_key": ("Refusing to serve on {host} without an API key; set --api-key-file, --api-key or "
                     "WORKSTATION_API_KEY, make people's keys with '{command}', or bind 127.0.0.1."),
    # the office server, seen from a desk PC (remote.RemoteEngine)
    "remote.unreachable": "Cannot reach the server at {url}: {reason}.",
    # a desk PC's profile loaded (load_notes.remote_notes): where the text goes
    "remote.serves_other": ("the server at {url} serves {served}, not {model}, so its replies may come from "
                            "another model than the profile names (set remote.model to one it serves, or leave it "
                            "out for the first)"),
    "remote.unused": ("these settings of this profile are not used: {keys} (the server decides them with its own "
                      "profile; they are for a model loaded on this PC)"),
    "remote.sends": "your messages, the conversation before them and the documents you attach go to the server at "
                    "{server}, which answers them; they leave this PC",
    "remote.sends_unencrypted": ("your messages and the documents you attach go to the server at {server} "
                                 "unencrypted, as its address starts with http://; ask whoever runs it for an "
                                 "https:// address"),
    "remote.lost": "Lost the connection to {url}: {reason}.",
    # (it said "connection refused or host unreachable": words for IT, and nothing on what to do)
    "remote.refused": ("nothing answers there; the office server may be stopped, or this PC cannot reach it over "
                       "the network (ask whoever runs the office server)"),
    # (a connection that never came, or a request that could not be sent: "timed out" said nothing to do)
    "remote.timed_out": ("it did not answer in time; this PC may not reach it over the network, or the office "
                         "server may be stopped (ask whoever runs the office server)"),
    "remote.not_https": "it does not answer in HTTPS there; an office server's address usually starts with http://",
    "remote.bad_certificate": "this PC does not trust its HTTPS certificate",
    "remote.no_such_host": "this PC cannot find a computer named {host}; check the name in remote.base_url",
    "remote.no_lookup": "this PC cannot look up the name {host} now; is it on the office network?",
    "remote.wrong_address": "The server at {url} has no OpenAI-style API at that address (HTTP 404 for {route}){hint}.",
    "remote.ends_v1": "; remote.base_url usually ends in /v1, as in {example}",
    "remote.closed": "the server closed the connection in the middle of the reply (it stopped or restarted)",
    "remote.busy": "The server at {url} is busy or down (HTTP {status}); try again later.",
    "remote.loading": "The office server at {url} is starting (it is loading its model); try again {when}.",
    "remote.lists_no_models": "The server at {url} lists no models (HTTP {status}); set remote.model in the profile.",
    "remote.no_models": "The server at {url} serves no models; set remote.model.",
    "remote.needs_key": ("The server at {url} needs an API key; ask whoever runs it for yours, then set the "
                         "environment variable {env} (export {env}=YOUR-KEY, in ~/.profile to keep it)."),
    "remote.needs_key_file": ("The server at {url} needs an API key; ask whoever runs it for yours, then put it "
                              "on the first line of the file {file}, readable by you alone (chmod 600 {file})."),
    "remote.needs_key_env": "The server at {url} needs an API key; set remote.api_key_env in the profile.",
    "remote.key_refused": ("The server at {url} refused the API key{source}: {message}; ask whoever runs "
                           "the server for a new one."),
    "remote.key_unknown": ("The server at {url} does not know the API key{source}; check that it was copied "
                           "whole, or ask whoever runs the server for yours."),
    "remote.key_not_here": "The server at {url} does not let your key use it: {message}.",
    "remote.key_from": " from {env}",
    "remote.answered": "The server at {url} answered HTTP {status}: {message}.",
    "remote.day_used": ("The server at {url} says your key has used its {limit} " + SERVER_TOKENS + " for today; "
                        "{again}, or ask whoever runs the server to raise your daily limit."),
    # when a key whose day ran out is answered again: the refusal's, a reply cut's, the status line's
    "remote.again_at": "it can answer again at {resets}",
    "remote.prompt_too_big": ("The server at {url} says this request needs more than the {left} " + SERVER_TOKENS +
                              " your key has left today (all it sends counts: in a chat, the conversation so far and its "
                              "instructions, not only your message); {advice}."),
    # what helps, by whether a new conversation would fit what is left (``answered_phrase``)
    "remote.day_new_fits": "a new conversation needs fewer and fits, or wait until {resets}",
    "remote.day_wait": "wait until {resets}, or ask whoever runs the server for a larger daily limit",
    "remote.over_whole_day": ("The server at {url} says this request alone needs about {n} " + SERVER_TOKENS +
                              ", more than your key's whole day of {limit}, so waiting will not help: send a shorter "
                              "text (in a chat, a new conversation sends less), or ask whoever runs the server for a "
                              "larger daily limit."),
    "remote.over_whole_day_in_summary": ("The server at {url} says the summary's next step alone needs about {n} "
                                         + SERVER_TOKENS + ", more than your key's whole day of {limit}, so waiting "
                                         "will not help: ask whoever runs the server for a larger daily limit."),
    "remote.prompt_too_big_in_summary": ("The server at {url} says the summary's next step needs more than the {left} "
                                         + SERVER_TOKENS + " your key has left today, so the summary stopped there; the limit "
                                         "resets at {resets}. A shorter document needs fewer, or ask whoever runs "
                                         "the server for a larger daily limit."),
    "remote.day_held": ("The server at {url} says your requests still running hold the rest of your "
                        "tokens for today; send again when they have finished."),
    "remote.all_busy": "The server at {url} is busy with other people's requests; try again in {seconds} s.",
    "summarize.again": " Nothing was written; run the same command again once the server answers.",
    "remote.stopped_reply": "The server stopped the reply: {message}.",
    "remote.server_said": "{message}.",
    "remote.quota_cut": ("The reply stopped there: your key has used its tokens for today on the server "
                         "(its daily limit); {again}, or ask whoever runs the server to raise your daily limit."),
    "remote.quota_cut_part": ("The server stopped the summary: your key has used its tokens for today (its daily "
                              "limit), so it can go on at {resets}, or ask whoever runs the server to raise your "
                              "daily limit."),
    "remote.silent": ("The server at {url} sent nothing for {seconds} s (remote.timeout_s in the profile); "
                      "the request may be too long for it."),
    "remote.cannot_forget": "The server at {url} could not forget the conversation's saved cells.",
    "remote.empty": "The message is empty; type something to send.",
    # a refusal said by the code the server sends with it (its own sentence where the code is not one of these)
    "remote.in_seconds": "in {seconds} s",
    "remote.in_a_moment": "in a moment",
    "remote.stopping": "The office server at {url} is stopping or restarting; try again {when}.",
    "remote.too_long": ("The server at {url} says this request is longer than it can read at once{figures}; start "
                        "a new conversation, or send a shorter text or document."),
    "remote.no_model": ("The server at {url} does not serve the model {model}; set remote.model in the profile to "
                        "one it serves, or leave it empty for its first."),
    "remote.key_revoked": ("The server at {url} refused the API key{source}: it was revoked; ask whoever runs the "
                           "server for a new one."),
    "remote.key_for_others": ("The server at {url} serves the profile '{served}', and your key may use only "
                              "{profiles}; ask whoever runs the server to let your key use '{served}'."),
    "remote.cut_by_stopping": ("The office server is stopping or restarting, so the reply was cut off; send it again "
                               "once the server is back."),
    "remote.cut_by_stopping_in_summary": ("The office server is stopping or restarting, so the summary was cut off; "
                                          "it can go on once the server is back."),
    "remote.too_large": ("The server at {url} takes requests of up to {size}, and this one is larger; send a "
                         "shorter text or document, or start a new conversation."),
    "remote.model_changed": ("The office server at {url} cannot answer: its model file changed on disk since it was "
                             "loaded; ask whoever runs the server to restart it."),
    "engine.too_long": ("The message is {n} tokens; with {reserve} kept for the reply, this profile's context "
                        "({ctx} tokens) cannot hold it. Shorten it, or summarize the document (F6 in the app, "
                        "'{summarize}' on the command line)."),
    "engine.over_prompt_limit": ("The message is {n} tokens; the server reads at most {most} tokens a request. "
                                 "Shorten it, or summarize the document (F6 in the app, '{summarize}' on the "
                                 "command line)."),
    "engine.instructions_too_long": ("The instructions take {n} of this profile's {ctx} tokens of context, and "
                                     "{reserve} are kept for the reply: no message fits beside them. Shorten "
                                     "them (Alt+I in the app, --system on the command line) or the profile's "
                                     "system prompt."),
    "engine.too_long_in_summary": ("A step of the summary (a part of the document, or their summaries put "
                                   "together) is {n} tokens; with {reserve} kept for what it writes, the context "
                                   "({ctx} tokens) cannot hold it, so the summary stopped there. Load the profile "
                                   "again (F3 in the app) and summarize again: its parts are then cut to fit."),
    "engine.over_prompt_limit_in_summary": ("A step of the summary (a part of the document, or their summaries put "
                                            "together) is {n} tokens; the server reads at most {most} tokens a "
                                            "request, so the summary stopped there. Load the profile again (F3 in "
                                            "the app) and summarize again: its parts are then cut to the server's "
                                            "limit."),
    "remote.too_long_figures": " ({n} tokens; it reads at most {most} tokens a request, and its context holds {ctx})",
    "remote.all_busy_own": "The server at {url} is busy with your other request; send this one again once it has ended.",
    # a model file that llama.cpp would refuse (gguf_check.preflight)
    "gguf.technical": "{detail}",  # the check's own words, English in every language: Turkish says so
    "gguf.unusable": "{path} is not a usable GGUF model: {what} (at byte {offset}).",
    # the sentence a user can act on first, the check's detail after it (it came first)
    "gguf.unusable_cut": ("{path} is not a usable GGUF model: the file is incomplete, as an interrupted download or copy "
                          "leaves it; download or copy it again. Details: {what} (at byte {offset})."),
    "gguf.unusable_damaged": ("{path} is not a usable GGUF model: what is inside it cannot be loaded (the file is "
                              "damaged, or made for a newer llama.cpp than this app's). Details: {what} (at byte {offset})."),
    "gguf.not_gguf": "it does not start with 'GGUF', so it is not a GGUF file",
    "gguf.too_small": "it holds {size} bytes, too few to start with 'GGUF'",
    "gguf.not_a_file": "The model path {path} is not a file.",
    "gguf.a_folder": "The model path {path} is a folder; name the .gguf file in it ({listed}).",
    "gguf.no_models_in": "no .gguf files are in it",
    "gguf.unreadable": "The model file {path} cannot be read ({reason}).",
    # a model download (model_download.pull)
    "models.changed_meanwhile": ("{name} changed while you were asked (another window or command put another "
                                 "file in its place); nothing was deleted. Look at the list again and choose once more."),
    "models.being_added": ("{name} is being copied into {folder} already (by another window or command); it is "
                           "ready when that copy ends."),
    "models.left_copy_removed": ("Removed the unfinished copy of {name} ({size}) from {folder}: adding it was "
                                 "stopped before it ended. Add it again to use it."),
    "models.left_copies_removed": ("Removed {n} unfinished copies ({names}; {size} in all) from {folder}: adding "
                                   "them was stopped before it ended. Add them again to use them."),
    # the K/V cache types in plain words ('profiles show', F5, 'profiles list'), as E's help says them
    "kv.said": "context memory {kv}",
    "kv.pair": "K {k}, V {v}",
    "kv.f32": "double size",
    "kv.f16": "full size",
    "kv.bf16": "full size",
    "kv.q8_0": "half size",
    "kv.q5_0": "1/3 size",
    "kv.q5_1": "1/3 size",
    "kv.q4_0": "quarter size",
    "kv.q4_1": "quarter size",
    "kv.iq4_nl": "quarter size",
    "models.left_quantized_removed": ("Removed the unfinished quantized copy {name} ({size}) from {folder}: "
                                      "quantizing was stopped before it ended. Quantize again to make it."),
    "models.left_quantized_removed_n": ("Removed {n} unfinished quantized copies ({names}; {size} in all) from "
                                        "{folder}: quantizing was stopped before it ended. Quantize again to make "
                                        "them."),
    "models.left_download_removed": ("Removed the unfinished download of {name} ({size}) from {folder}: it was "
                                     "stopped before it ended. Download it again to use it."),
    "models.left_downloads_removed": ("Removed {n} unfinished downloads ({names}; {size} in all) from {folder}: "
                                      "they were stopped before they ended. Download them again to use them."),
    "kld.left_reference_removed": ("Removed an unfinished KL divergence reference ({size}) from {folder}: its "
                                   "measurement was stopped before it ended; the next one makes it again."),
    "kld.left_references_removed": ("Removed {n} unfinished KL divergence references ({size} in all) from "
                                    "{folder}: their measurements were stopped before they ended; the next ones "
                                    "make them again."),
    # eval --kld without a folder for the reference pass (kld.reference_folder): measured, printed, then said
    "kld.not_kept": ("The reference model's figures (KL divergence) were not kept, so the next run measures them "
                     "again: {why} WORKSTATION_KLD_CACHE names another folder for them."),
    "kld.folder_unusable": "The folder {folder} cannot be used: {why}.",
    "pull.removing_running": ("{name} is being downloaded into {folder} now (in another window or command), so "
                              "nothing was removed; stop that download first, then remove it."),
    "pull.already": ("{name} is being downloaded into {folder} already (started earlier here, in another "
                     "window or by `models pull`); it is ready when that download ends."),
    # models pull: its progress on stderr, and what stops it
    "pull.progress": "downloading {name}: {done}",
    "pull.progress_of": "downloading {name}: {done} of {total} ({share})",
    "pull.only_https": "Cannot download '{url}': only https:// (or http://) addresses are supported.",
    "pull.stopped_why": "The download of {url} stopped at {done} bytes ({why}); run the same command again to resume.",
    "pull.stopped_at": ("The download of {url} stopped at {done} of {total} bytes; run the same command again to "
                        "resume."),
    "pull.not_resumed": "The download of {url} could not be resumed; run the same command again.",
    "pull.appeared": "A model named {name} appeared in {folder} meanwhile; it was kept.",
    "pull.not_in_catalog": "'{ref}' is no model of the catalog; did you mean {guess}?",
    "pull.not_in_catalog_or": "'{ref}' is no model of the catalog; did you mean {guess} or {last}?",
    "pull.unknown": "'{ref}' is neither a known model nor a URL; known models: {names}.",
    "pull.not_gguf": "'{url}' does not point to a .gguf file.",
    "pull.there_differs": ("A model named {name} is already in {folder} and its sha256 differs from the expected one, "
                           "so it was kept (remove it first to download it again)."),
    "pull.there_unchecked": ("A model named {name} is already in {folder} and no sha256 is known to compare it with, "
                             "so it was kept (remove it first to download it again)."),
    "pull.http": "The download of {url} failed: the server answered {code} {reason}.",
    "pull.offline": ("The download failed: {host} cannot be reached from this PC (no network, or the name "
                     "cannot be looked up). Check the connection and try again."),
    "pull.failed": "The download of {url} failed: {reason}.",
    "pull.no_room": ("There is no room for {name} ({size}): the disk holding {folder} has {free} free, and "
                     "{keep} of it stays free for your conversations and the system; free {need} (or set "
                     "WORKSTATION_MODELS to a folder on a larger disk), then download it again."),
    "pull.disk_full": ("The download of {name} stopped: the disk holding {folder} is full. The part downloaded "
                       "was removed, so the disk has its room back; free at least {need}, then download it again."),
    "pull.disk_full_kept": ("The download of {name} stopped at {kept} of {total}: the disk holding {folder} is "
                            "full. What was downloaded is kept, less a little given back so that your conversations "
                            "can still be saved; free {need}, then download it again and it goes on from there (or "
                            "delete {part} to get its room back)."),
    "pull.disk_full_unsized": ("The download of {name} stopped: the disk holding {folder} filled after {done}. The "
                               "part downloaded was removed, so the disk has its room back; the server did not say "
                               "the file's size: free more than that, then download it again."),
    "pull.bad_sha256": "The download of {name} has sha256 {got}…, expected {expected}…; the damaged file was removed.",
    "pull.not_a_model": "The download of {name} is not a usable model ({why}); it was removed.",
    # how to run a model just added, pulled or quantized (-p takes profiles: profile_lookup.how_to_make_one)
    "model.how_to_use": ("to use it, run {command}: it makes a profile for it (or names the one that runs it) and "
                         "says the command that chats with it; the app's model list, F4, does the same with U"),
    # -p naming a model, not a profile (profile_lookup._model_how)
    "model.run_by_profile": "the profile {profile} runs it: {command}",
    "model.run_by_profiles": "the profiles {profiles} run it: {command}",
    "model.pull_first": "download it with {pull}, then {new} makes a profile that runs it",
    # a profile's model file (installed_models.missing_model_error)
    "model.not_downloaded": "The model {name} is not downloaded yet; run '{command}'{size}.",
    "model.about_gb": " (about {size})",
    # bench --replay and --document: a profile's turns under its table
    "bench.prompts": "{n:|prompt|prompts}",
    "bench.prompts_rounds": "{n:|prompt|prompts} × {rounds} rounds",
    "bench.documents": "{n:|document|documents}",
    "bench.documents_rounds": "{n:|document|documents} × {rounds} rounds",
    # bench's pp/tg table: what its two main figures mean, in words a second (pp512 and tg128 said
    # nothing to a newcomer); one run said as one (a "± 0.00" read as sure); and two figures of the
    # same writing far apart in one run (tg128 6.76 beside chat tg 65.86 tok/s) said as a busy PC
    "bench.means_both": "What this means: {profile} reads your documents at about {read} words a second and writes about {write} words a second.",
    "bench.means_read": "What this means: {profile} reads your documents at about {read} words a second.",
    "bench.means_write": "What this means: {profile} writes about {write} words a second.",
    # (its two writing figures far apart: a busy moment in one of them, so neither is said as its speed)
    "bench.means_both_range": ("What this means: {profile} reads your documents at about {read} words a second and "
                               "writes somewhere between about {low} and {high} words a second: its two writing "
                               "figures disagree (see the note below), so neither is sure."),
    "bench.means_write_range": ("What this means: {profile} writes somewhere between about {low} and {high} words a "
                                "second: its two writing figures disagree (see the note below), so neither is sure."),
    "bench.once": ("note: each test ran once, and one run cannot tell whether another program was using the CPU "
                   "meanwhile; -r 3 runs each test three times and says how much the runs differ."),
    "bench.busy": ("note: {profile}'s {test} ({tg} tok/s) and chat tg ({chat} tok/s) both time its writing, yet one is "
                   "{times}x the other: another program was probably using the CPU, so compare these figures with "
                   "care; run again when the machine is quiet, or with more repetitions (-r)."),
    # bench's progress on stderr (core/bench.py), its notes under the table and the replay's
    # lines (commands/bench.py), in the command line's language; the table's columns stay llama-bench's
    "bench.progress_loading": "{profile}: loading {model}",
    "bench.progress_warmup_pp": "{profile}: warm-up pp{n}",
    "bench.progress_pp": "{profile}: pp{n} run {i}/{reps}",
    "bench.progress_warmup_tg": "{profile}: warm-up tg",
    "bench.progress_tg": "{profile}: tg{n} run {i}/{reps}",
    "bench.progress_tg_tokens": "{profile}: tg{n} run {i}/{reps}: {done}/{n} tokens",
    "bench.progress_chat": "{profile}: chat turn {i}/{reps} (TTFT)",
    "bench.progress_round": "round {r}/{rounds}: {what}",
    "bench.progress_replay": "{profile}: replay prompt {i}/{n}",
    "bench.progress_document": "{profile}: summarizing document {i}/{n}",
    "bench.progress_about": "about",
    "bench.progress_left": "{what} ({eta} left)",
    "bench.rounds": ("The profiles ran in {rounds} rounds, each loading them in turn (every other round in reverse "
                     "order) for one repetition of each test, so a busy moment on this PC slows them alike."),
    "bench.as_fast": "as fast",
    "bench.x_as_fast": "x as fast",
    "bench.times_slower": "{r}x slower",
    "bench.as_long": "as long",
    "bench.fraction_as_long": "1/{n} as long",
    "bench.less": "{p} less",
    "bench.longer": "{p} longer",
    "bench.times_as_long": "{r}x as long",
    "bench.unsure": "not sure: within how much the repetitions varied",
    "bench.one_repetition": "one repetition each, which a busy moment can sway: -r 3 repeats it",
    # bench --replay/--document's comparisons: a figure within how much the rounds varied (said once a
    # line), one round (said once, under them all), and two writing speeds within a PC's drift
    "bench.unsure_rounds": "not sure: within how much the rounds varied",
    "bench.unsure_both": "neither is sure: both within how much the rounds varied",
    "bench.one_round": "One round each, which a busy moment can sway: run with -r 3 to be sure.",
    "bench.about_as_fast": "about as fast",
    "bench.reads": "reads a prompt {how}",
    "bench.writes": "writes a reply {how}",
    "bench.writes_no_drafts": "writes a reply, without drafting, {how}",
    "bench.writes_chat": "writes a reply in a chat turn ('chat tg', drafts included) {how}",
    "bench.writes_chat_plain": "writes a reply in a chat turn ('chat tg') {how}",
    "bench.against_first": "In plain words, against {name}: {profile} {said}{doubt}.",
    "bench.fastest": "Fastest at writing here: {profile} ({costs}).",
    "bench.fastest_unsure": ("Fastest at writing here: not sure; {profile} wrote faster than {name} by less than "
                             "their repetitions varied. Run again when the machine is quiet, or with more repetitions "
                             "(-r)."),
    "bench.costs_quality": "what it costs in quality: {command}",
    "bench.another_model": "another model; how well each answers: {command}",
    "bench.speeds_one_model": ("These are speeds alone; what the answers lose on these documents, and the memory "
                               "each needs: {command}"),
    "bench.speeds_models": "These are speeds alone; how well each model answers: {command}",
    "bench.tg_without_drafts": ("note: tg is timed without drafting, as llama-bench times it; the 'chat tg' row is a "
                                "chat turn with the drafts (what speculation buys is there)."),
    "bench.drafting_off": "note: {profile} stopped drafting for the rest of the session: {reason}.",
    "bench.drafted_nothing": ("note: {profile} drafted nothing in these turns: its adaptive policy drafts only where "
                              "a draft is expected to pay (a draft model's measured costs; for lookup, text to copy "
                              "from the prompt); 'chat -p' with a longer reply shows what it drafts there."),
    "bench.ran_as": ("note: {profile} ran exactly as {name} here (the same model file, {layers} layers on the GPU, "
                     "{threads} threads, K/V {k}/{v}): what it changes makes no difference on this PC (GPU layers "
                     "where llama.cpp has no GPU to use, say), so any difference in their figures is the machine's, "
                     "not the setting's."),
    "bench.spread": ("note: {profile}'s {test} repetitions differ by ±{spread}: {why}, so compare these figures with "
                     "care; run again when the machine is quiet, or with more repetitions (-r)."),
    "bench.spread_busy": "another program was probably using the CPU",
    "bench.spread_own": ("the other profiles, run in the same rounds, held steady, so it is this profile's own (a "
                         "first run slower while its memory settles, say)"),
    # what the tables' columns and tests mean (commands/bench.py: table_legend), joined by legend_sep
    "bench.legend_sep": "; ",
    "bench.legend_ngl": "ngl: GPU layers, how many of the model's layers run on the graphics card (0: all on the CPU)",
    "bench.legend_kv": ("K/V: how the model's memory of the conversation is stored (f16: in full; q8_0, q4_0: "
                        "packed smaller)"),
    "bench.legend_fa": "fa: flash attention, a way of computing that saves memory (1: on, 0: off)",
    "bench.legend_pp": "pp{n}: reading {n} tokens of a prompt",
    "bench.legend_tg": "tg{n}: writing {n} tokens of a reply",
    "bench.legend_ttft": "{name}: the wait from sending a prompt to its first word",
    "bench.legend_chat_tg": "chat tg: writing a reply in a chat turn, as the app does (a helper model's guesses included, where the profile has one)",
    "bench.legend_accepted": "accepted: of the helper model's guessed tokens, the share kept",
    "bench.legend_tok_s": "tok/s: tokens (pieces of words, about 4 for 3 English words) a second",
    "bench.legend_prompt_tok": "prompt tok: the tokens read",
    "bench.legend_cached": "cached: of them, those kept from the prompt before (not read again)",
    "bench.replay_summary": ("{prompts}: TTFT mean {mean} ms, median {median} ms, p90 {p90} ms; writing {writing} "
                             "over {n} tokens{accepted}"),
    "bench.replay_accepted": ", guesses kept {p}",
    # a round of a profile's far below its others (core/bench.py: busy_rounds), left out of its figure
    "bench.busy_round": ("Round {r} of {profile} wrote at {tps} tok/s, under half as fast as its other rounds, "
                         "while the PC was busy: left out of its figure and of the comparison."),
    "bench.replay_writes": "writes {how} (tok/s {r}x)",
    "bench.replay_waits": "waits {how} for its first word (median TTFT)",
    "bench.replay_against": "{profile} against {name}: {said}.",
    "bench.replay_lengths": ("wrote {n} tokens where {name} wrote {first}, replies too unlike in length to compare "
                             "their writing speeds by (a short reply spends more of its time starting)"),
    "bench.sample_differently": ("The profiles sample differently ({what}): their replies differ in words and "
                                 "length, and so does their speed; profiles alike but for what is compared (a K/V "
                                 "type, speculation) measure that alone."),
    # bench's refusals of its options and of a document too long for a profile (commands/bench.py,
    # core/bench.py), why a draft model stopped drafting (speculative.py: its figures), and the
    # sampling its profiles differ in (sampling_differences: Ctrl+E's names in another language)
    "bench.at_least": "{name} must be {low} or more, not {value}.",
    "bench.replay_or_document": "Give --replay or --document, not both.",
    "bench.over_context": "{name} {n} is larger than profile '{profile}''s context of {ctx} tokens.",
    "bench.document_too_long": ("{name} is {n} tokens with the instruction to summarize it: more than {profile} holds "
                                "in one message (a context of {ctx} tokens, {reserve} of them kept for the reply), so "
                                "bench cannot time it. Summarize it part by part instead (F6 in the app, '{command}' "
                                "on the command line){longer}."),
    "bench.document_longer": ", or time it with a longer context: '-p {profile}'",
    "bench.drafting_cannot_pay": ("a drafted token costs {draft} ms + {verify} ms to verify against {plain} ms for a "
                                  "plain step: drafting cannot pay on this machine"),
    "bench.values_sep": ", ",
    "bench.random": "random",
    "bench.system_prompt": "system prompt",
    "weights.four_bit": ("{name} holds no more than a 4-bit file, though its file type says more: it was made from a "
                         "4-bit file (with models quantize --allow-requantize) or the model was made at 4 bits ({four} "
                         "of the {sampled} parts of it looked at keep only the 16 values a 4-bit file has room for)"),
    "weights.note": "Note: {name} is not a good yardstick: ",
    "weights.not_the_loss": (". So what the others lose against it is not what they lose against the original model: "
                             "the comparison may understate the loss; a file downloaded at Q8_0 or F16 is a good "
                             "yardstick."),
    # eval --kld: a candidate whose perplexity on a document came out lower than the reference's
    # eval's notes under its table (commands/eval.py: format_eval and the notes it gathers)
    "eval.baseline": "(baseline)",
    "eval.tasks_unsure": "not sure: the tasks that came out differently do not lean clearly one way",
    "eval.pts_accuracy": "{d} pts accuracy",
    "eval.pct_perplexity": "{d}% perplexity",
    "eval.same_speed": "the same speed",
    "eval.x_faster": "x faster",
    "eval.ppl_windows": "{profile}: perplexity over {n:|window|windows} of {ctx} tokens ({scored} tokens scored).",
    "eval.reference_windows": "KL divergence against {profile} in windows of {ctx} tokens; the reference keeps its top {top_k} log-probabilities per scored token: {size} {kept} for these {tokens} tokens of text (about {per_1k} for each 1,000 tokens of text), {reused} of {n:|document|documents} read from the cache{again}.",
    "eval.cached": "cached",
    "eval.not_kept": "not kept",
    "eval.timed_again": " (its speed measured again in this run, over one window)",
    "eval.left_out": "Left out {why}",
    "eval.all_documents": "{profile} against {name} over all {n} documents: {said}.",
    "eval.kld_practically": "writes practically as well",
    "eval.kld_very_nearly": "writes very nearly as well",
    "eval.kld_little_worse": "writes a little worse",
    "eval.kld_noticeably_worse": "writes noticeably worse",
    "eval.kld_clearly_worse": "writes clearly worse",
    "eval.differs_but": "differs from it, but {better}",
    "eval.plain_kld": "In plain words, on {document}: {profile} picks the same next word as {name} {share} of the time, and {words}.",
    'eval.both_ways': "note: {profile}'s speed against {name} went both ways ({low}x to {high}x on these documents): each is one pass, so another program using the CPU decides it; {command} compares their speed, repeated side by side.",
    'eval.unbelievable': "note: {profile}'s {what} against {name} is left out: it came out {how}, more than these settings can make (at most {most}x), so another program busy on this PC slowed one of them; {command} compares their speed, repeated side by side.",
    "eval.speed_reading": "reading speed (of the documents)",
    "eval.speed_writing": "writing speed (of the replies)",
    # eval --kld's choice under the table: each profile side by side with the reference, then which to pick
    "eval.sep": "; ",
    "eval.and": " and ",
    "eval.or": " or ",
    "eval.and_list": ", and ",
    "eval.side_by_side": "Side by side, {profile} against {name} on these documents: it {said}.",
    # (its parts beside its own total: after "against {against}" they read as the other's)
    "eval.needs_memory": ("needs {total} for the model and its context memory at a context of {context} tokens "
                          "(the model itself (weights) {weights},{copy} working memory while it writes (compute) "
                          "{compute}, and {kv} of context memory, {kv_words}, which holds {context} tokens of "
                          "conversation and documents; as {command} and F4 count it), against {against}"),
    "eval.second_copy": " a second copy of its weights laid out for this processor {size},",
    "eval.reads_documents": "reads your documents {how}",
    "eval.writes_replies": "writes replies {how}",
    # a speed difference within the run's own noise (commands/eval.py: ratio_sure): never "faster" or "slower"
    "eval.about_same": "about the same speed on this run",
    "eval.about_same_how": "at about the same speed on this run",
    "eval.rough_windows": (" (rough: timed over {n:|window|windows} of {ctx} tokens, once, which another program busy "
                           "on this PC can sway)"),
    "eval.rough_spread": " (rough: {low}x to {high}x on these documents)",
    "eval.it_scored_better": ("scored better than the reference {reference} on {document} (perplexity {delta}), so "
                              "{reference} is not a good yardstick"),
    "eval.which_to_pick": "Which to pick: {said}.",
    "eval.pick_reference": "{name}; {profile} {words} on these documents{though}",
    "eval.pick_though_less": ", though it needs {size} less memory: take it only where {name} does not fit",
    "eval.where_memory": "memory is short",
    "eval.where_reading": "long documents are read",
    "eval.where_writing": "people wait for replies",
    "eval.gain_memory": "it needs {size} less, so a longer context fits in the same memory",
    "eval.gain_it": "it {how}",
    "eval.less_memory": "needs {size} less memory",
    "eval.pick_no_gain": "{name}: {profile} {memory}{speed} here",
    "eval.more_memory": "needs more memory",
    "eval.no_memory_saved": "saves no memory",
    "eval.and_worse": " and {worse}",
    "eval.no_faster": " and is no faster",
    "eval.pick_trade": "{profile} where {where} ({gains}) and {words}; else {name}, as {profile} {worse}",
    "eval.pick_other": "{profile}: it {better} and {words}{more}",
    "eval.if_more_memory": ", if the PCs have {size} more memory for it",
    "eval.note": "Note: {said}.",
    # eval's refusals (the window, the text, the options)
    "eval.what_perplexity": "perplexity",
    "eval.what_kld": "KL divergence",
    "eval.window_too_small": "The {what} window must be at least 16 tokens, not {n}.",
    "eval.window_over_context": "The {what} window of {n} tokens is larger than the loaded context of {ctx}.",
    "eval.text_too_short": ("The text is only {n} tokens; {what} with a window of {ctx} needs at least {ctx} (use a "
                            "longer text or a smaller --ctx)."),
    "eval.text_empty": "Text file {path} is empty.",
    # a task set file's problems (evaluate.task_set_from_data); a field's wrong type or value in profile.*'s words
    "tasks.where": "{src}: task {index}: ",
    "tasks.where_named": "{src}: task {index} ('{id}'): ",
    "tasks.not_mapping": "a task must be a mapping with prompt, match and answer, not {value}.",
    "tasks.schema": "field 'json_schema': {why}",
    "tasks.missing": ("field '{field}' is missing: each task needs a prompt, a match (one of {kinds}) and an answer; "
                      "the example task set {example} shows the format."),
    "tasks.prompt_empty": "field 'prompt' must be non-empty text.",
    "tasks.answer_empty": "field 'answer' must not be empty text.",
    "tasks.bad_regex": "field 'answer' is not a valid regular expression ({why}).",
    "tasks.choices_missing": "field 'choices' is missing; match 'choice' needs the list of options.",
    "tasks.choices_short": "field 'choices' must be a list of at least two options.",
    "tasks.choices_unused": "field 'choices' is only used with match 'choice', not {value}.",
    "tasks.max_tokens": "field 'max_tokens' is {value}; allowed values are 1 to 4096.",
    "tasks.lang": "field 'lang' must be text such as en or tr, not {value}.",
    "tasks.none": "field 'tasks' must be a non-empty list of tasks.",
    "tasks.id_repeats": "field 'id' repeats '{id}'; each task's id must be different.",
    "eval.document_why": "{name}: {why}",
    "eval.reference_not_given": "--reference {name} is none of the -p given ({given}); name one of them as it was typed.",
    "eval.kld_needs_two": ("--kld compares profiles with a reference: give the reference first and at least one "
                           "candidate, as -p REFERENCE -p CANDIDATE."),
    "kld.vocabulary_size": ("{name} has {n} tokens but the reference was made with {reference_n}, so their next-token "
                            "distributions cannot be compared."),
    "kld.cannot_write": (" The KL divergence keeps the reference model's figures there while it compares; free some "
                         "space there, then run it again."),
    # eval's table: its columns, and the reference's cells
    "eval.col_profile": "profile",
    "eval.col_model": "model",
    "eval.col_accuracy": "accuracy",
    "eval.col_other": "other",
    "eval.col_gen_ts": "gen tok/s",
    "eval.col_ppl_ts": "ppl tok/s",
    "eval.col_document": "document",
    "eval.col_kld_mean": "KLD mean",
    "eval.col_same_top": "same top",
    "eval.col_kld_ts": "KLD tok/s",
    "eval.col_vs": "vs {name}",
    # the line under eval's table: its columns in plain words (as bench's; commands/eval.py: eval_legend)
    "eval.legend_accuracy": "{name}: the tasks answered right",
    "eval.legend_pts": "pts: percentage points of that, against the first profile",
    "eval.legend_gen_ts": "{name}: tokens of the replies written a second",
    "eval.legend_perplexity": "perplexity: how surprised the model is by the text (lower is better)",
    "eval.legend_ppl_ts": "{name}: tokens of the text read a second",
    "eval.legend_kld_mean": ("{name}: how far its odds for each next word are from the reference's, on average "
                             "(KL divergence; 0: the same)"),
    "eval.legend_kld_p99": "KLD p99: the same for the worst word in 100",
    "eval.legend_same_top": "{name}: how often it picks the same most likely next word as the reference",
    "eval.legend_kld_ppl": "KLD ppl: its perplexity on the document, how surprised it is by the text (lower is better)",
    "eval.legend_dppl": "Δppl: that perplexity against the reference's",
    "eval.legend_kld_ts": "{name}: tokens of the documents read a second",
    "eval.col_task": "task",
    "eval.col_lang": "lang",
    "eval.col_ok": "ok",
    "eval.col_expected": "expected",
    "eval.col_reply": "reply",
    "eval.yes": "yes",
    "eval.no": "no",
    "eval.reference_cell": "(reference)",
    "eval.timed_again_cell": " (window 1, timed again)",
    # a variant's settings in its name (-p "office-cpu kv_cache=q8_0": "office-cpu · K/V half size")
    "variant.kv": "K/V {kv}",
    "variant.context": "context {n}",
    "eval.window_speeds": ("These speeds are of windows of {ctx} tokens; {command} times whole documents: the wait "
                           "for the first word and the writing."),
    "kld.better_than_reference": ("{name} scored better than the reference {reference} on {document} (perplexity "
                                  "{delta}), so {reference} is not a good yardstick"),
    "kld.pick_unsure": ("this run cannot tell, as {better}; compare them against a file downloaded at Q8_0 or F16 "
                        "(eval --reference names the yardstick)"),
    "model.not_made": "The model file {file} is not made yet; make it from {source} with '{command}'.",
    "model.missing": "The model file {path} does not exist; run '{command}' to see what is installed.",
    "model.meant": "Did you mean '{name}'?",
    # -p naming no profile (profile_lookup.load_profile)
    "profile.is_a_model": "{ref} is a model, not a profile; {how}.",
    "profile.default_missing": ("No profile was named (-p PROFILE, or WORKSTATION_PROFILE for every command), and the "
                                "default one, '{ref}', is not here; available profiles: {names}."),
    "profile.no_such": "There is no profile named '{ref}'{by}; available profiles: {names}.{meant}",
    "profile.named_by_env": " (WORKSTATION_PROFILE names it)",
    "profile.none_here": "none",
    "profile.meant": " Did you mean '{name}'?",
    # a model named for inspect, quantize, profiles new (installed_models.find_installed)
    "model.no_such": "There is no model '{name}' here; run '{command}' to see what is installed.",
    "model.no_file": "The file {path} does not exist.",
    "model.link_gone": ("The model file {path} is a link to {target}, which is not there any more (moved or "
                        "deleted); add the file again from where it is now: '{command}'."),
    # a conversation as the chat shows it, and as F7 exports it (store.to_markdown)
    "role.user": "You",
    "chat.document": "Document: {name}",  # (over a message's attached document: tui/turn.py, summary_chunks.attached_named)
    "role.assistant": "Assistant",
    "role.system": "System",
    "thought.saved": "Thinking",
    "chat.stopped_before": "*Stopped before the reply began.*",
    "metric.ttft": "TTFT {ms} ms",
    "metric.tps": "{tps} tok/s",
    "metric.tokens": "{n} tokens",
    "metric.one_token": "1 token",
    # of the conversation's word pieces, read before and not again: the wait it saved (F1 says it); none
    # where none were ("reused 0 of 711" said nothing a person could use)
    "metric.cache": "{hit} of {total} already read",
    "metric.restored": "{n} from disk",
    "metric.draft": "guesses kept {rate}% ({acc}/{n})",  # not "speed-up": a reply can keep most guesses and still be slower
    "metric.stopped": "stopped",
    "metric.stopped_new": "stopped when a new conversation was started",
    "metric.failed": "cut off by an error",
    "metric.interrupted": "unfinished: saved while it was being written",
    "metric.length": "length limit",
    "metric.quota": "cut off: your key's tokens for today ran out",
    "metric.quota_day": "cut off: {day}",  # (day: the status line's "your key has used its tokens for today; …")
    "metric.context": "context full",
    "metric.loop": "stopped: it began repeating itself",  # core/loops.py: the repeats left out
    "metric.sampling": "own settings: {settings}",
    "metric.left_out": "the model did not see the first {n} messages",
    "metric.failed_why": "cut off: {why}",
    "metric.ttft_s": "TTFT {s} s",  # a wait of 1 s and more (``ttft_said``): "TTFT 19,865 ms" made a reader count
    # the first reply after a profile switch (metrics.switch_reading): why it waited, or did not
    "metric.switch_read": "read the conversation again after the switch: {words} words",
    "metric.switch_kept": "kept from before the switch: {kept} of {total} words",
    # a conversation name or number no saved one has (conversations show|export|rename|delete, chat -c #12)
    "saved.no_such": "There is no saved conversation \"{name}\" ('{command}' lists them, with their numbers).",
    "saved.did_you_mean": " Did you mean {meant}?",
    # chat's figures on stderr (TurnMetrics.summary_line): the prompt read and what was kept of it
    "metric.prompt": "prompt {n} (+{cached} cached{restored}) at {tps} tok/s",
    "metric.prompt_restored": ", {n} of them from disk",
    "metric.draft_accepted": "guesses kept {acc}/{n}",
    "export.when": "Started {first}; last message {last}",
    "export.profile": "Profile: {profile}",
    "export.served_model": " (the server's model: {model})",
    "export.profiles": "Profiles: {profiles} (each reply says which)",
    "export.instructions": "Instructions for this conversation (in place of the profile's system prompt):",
    # a document that cannot be read (documents.read_document)
    "doc.missing": "'{path}' does not exist{where}.",
    "doc.in_folder": " in {folder}",
    "doc.meant": " Did you mean '{path}'?",
    "doc.broken_link": "'{name}' is a link to {target}, which is not there.",
    "doc.folder": "{name} is a folder, not a document. To summarize every document in it, run: {command}",
    "batch.not_folder": "'{path}' is a document, not a folder; '{command}' summarizes it.",
    "batch.not_a_folder": "'{path}' is a file, not a folder of documents.",
    # the folder's lock (BatchLock): one run at a time per output folder
    "batch.busy": "Another batch run (process {pid}) is already working on '{folder}'; wait for it to finish, or "
                  "stop it with Ctrl-C in the window it runs in (it goes on later from where it stopped).",
    "batch.cannot_write": "The batch run cannot write in '{folder}' ({why}): it keeps its lock and its queue there "
                          "beside the summaries. Make the folder writable for this user, or choose another one with -o.",
    "batch.cannot_write_full": "The batch run cannot write in '{folder}' ({why}): it keeps its lock and its queue "
                               "there beside the summaries. Free some space on that disk, or choose a folder on "
                               "another one with -o.",
    "batch.lock_changing": "Cannot lock '{path}': the file keeps changing under this run.",
    # why a document of the overnight queue failed (batch_queue: kept in its queue, said by --status)
    "batch.last_try": "{why} This was try {n} at this document, so it is not tried again.",
    "batch.failed_foreign": "'{path}' failed: {what}",
    "batch.not_in_folder": "'{path}' is not a document in '{folder}' (the queue file names it, the folder does not); skipped.",
    "batch.outside_output": "The summary of '{path}' would be written outside '{folder}'; skipped.",
    # the one file that holds every summary of a batch's folder, to read them all (batch_queue.write_all_summaries)
    "batch.all_file": "All summaries.md",
    "batch.all_title": "All summaries of {folder}",
    "batch.all_skipped": "{path}: skipped: {why}",
    "batch.all_failed": "{path}: not summarized: {why}",
    "batch.all_taken": "Taken from F6's summary of {name}, made {at}: the same document, summarized with the same "
                       "profile, so it was not summarized again.",
    "batch.all_pending": "{path}: not summarized yet (the run stopped before it was done); run the batch again to go on.",
    "batch.not_ours": ("'{path}' is there already and was not written by workstation, so it was left as it was; "
                       "move it away, then run the batch again."),
    "doc.too_big": "'{name}' is {mib} MiB, more than the {limit} MiB limit for one document.",
    "doc.empty": "'{name}' is empty.",
    "doc.name_not_text": "The file name '{name}' is not UTF-8 text (it probably came from another computer or an old "
                         "zip archive); rename the file, then try again.",
    "doc.binary": "'{name}' is a binary file, not text.",
    "doc.binary_or_encoding": "'{name}' is a binary file or uses an unknown text encoding.",
    "doc.password_pdf": "'{name}' is a password-protected PDF; save an unprotected copy.",
    "doc.password": "'{name}' is protected by a password; save an unprotected copy.",
    "doc.scanned_pdf": ("'{name}' has no text in it, only pictures of its pages (a scanned PDF, probably); "
                        "the text recognition (OCR) of a scanner's or a PDF program makes a copy with text to read."),
    "doc.renamed": ("'{name}' is not a real {what} file: its content is something else (perhaps a file "
                    "renamed to .{suffix}); open it in its program and save it as {what} again."),
    "doc.zip_not_word": "'{name}' is a zip archive but not a Word document; open it in its program and save it as DOCX again.",
    "doc.zip": "'{name}' is a ZIP archive, not a document (Word, Excel, PowerPoint, OpenDocument) or text.",
    "doc.zip_not_excel": "'{name}' is a zip archive but not an Excel workbook; open it in its program and save it as XLSX again.",
    "doc.zip_not_powerpoint": ("'{name}' is a zip archive but not a PowerPoint presentation; open it in its program and "
                               "save it as PPTX again."),
    "doc.zip_not_ods": ("'{name}' is a zip archive but not an OpenDocument spreadsheet; open it in its program and save "
                        "it as ODS again."),
    "doc.zip_not_odp": ("'{name}' is a zip archive but not an OpenDocument presentation; open it in its program and "
                        "save it as ODP again."),
    "doc.office_locked": ("'{name}' is protected by a password, or saved in Office's format from before 2007; open it in "
                          "its program and save an unprotected copy as {what}."),
    # the line that ends a sheet read in part (in the document's text: the model and the summary see it)
    "doc.sheet_cut": "[Only the first {rows} rows of this sheet were read: a workbook is read up to {limit} cells.]",
    "doc.sheet_not_read": ("[This sheet was not read: its first row holds more cells than were left of the {limit} "
                           "a workbook is read up to.]"),
    # what a workbook's reader left out, said beside its text (the attach line, the summary's head)
    "doc.workbook_cut": "Only part of this workbook was read (a workbook is read up to {limit} cells); cut short: {names}.",
    "doc.hidden_sheet": "The hidden sheet {names} was left out; show it in Excel or LibreOffice to have it read.",
    "doc.hidden_sheets": "The {n} hidden sheets {names} were left out; show them in Excel or LibreOffice to have them read.",
    # a table's facts counted by the program (core/table_facts.py): before its rows for the model, under a summary for the user
    "facts.label": "Facts counted by the program from every row:",  # (summary_chunks.FACTS_LABEL: over a block of them)
    "facts.head": "{title}: {rows} rows under the header row, {columns} columns.",
    "facts.head_no_header": "{title}: {rows} rows, {columns} columns (no header row).",
    "facts.head_cut": "{title}: the first {rows} rows, read up to the workbook's cells, {columns} columns.",
    "facts.total_rows": " Rows that read Total or VAT ({n}) are left out of these figures.",
    "facts.sum_row": " Its last row, the sum of the rows above, is left out of these figures.",
    "facts.column": "{name} (column {letter})",
    "facts.table": "Table {n}",
    "facts.sheet": "Sheet: {name}",
    "facts.sheet_hidden": "Sheet: {name} (hidden)",
    "facts.numbers": "- {name}: numbers; total {total}, smallest {smallest}, largest {largest}, average {average}.",
    "facts.percents": "- {name}: percentages; smallest {smallest}, largest {largest}, average {average}.",
    "facts.rates": "- {name}: prices or rates (not added up); smallest {smallest}, largest {largest}, average {average}.",
    "facts.product": "- {a} × {b}, added up over all {rows} rows: {figure}.",
    "facts.dates": "- {name}: dates from {first} to {last}.",
    "facts.text": "- {name}: text, {distinct} different values; most common: {top}.",
    "facts.text_unique": "- {name}: text, different in every row ({first} to {last}).",
    "facts.text_same": "- {name}: text, the same in every row: {text}.",
    "facts.text_few": "- {name}: text, {distinct} different values.",
    "facts.value_count": "{text} ({n})",
    "facts.and": ", ",
    "facts.filled": " Filled in {filled} of {rows} rows.",
    "facts.other": " Cells of another kind, left out of these figures: {n}.",
    "facts.guessed": " A guess: {text} was read as {value}, not {other} (nothing in the file says which).",
    "facts.more_columns": "- and {n} more columns.",
    # under a reply to a question about an attached table: the program's figure, not the model's (counted_answer)
    "facts.counted": "Counted by the program: {items}",
    "facts.counted_total": "{name} total {figure}",
    "facts.counted_average": "{name} average {figure}",
    "facts.counted_largest": "{name} largest {figure}",
    "facts.counted_smallest": "{name} smallest {figure}",
    "facts.counted_rows": "{title}: {rows} rows",
    "facts.counted_distinct": "{name}: {n:|different value|different values}{names}",  # ("how many customers?")
    # a figure per value of a text column ("how many invoices does each customer have?": counted_answer)
    "facts.counted_per_rows": "rows for each {by}: {values}{more}",
    "facts.counted_per_total": "{name} total for each {by}: {values}{more}",
    "facts.counted_per_total_most": "{name} total for each {by}, the most first: {values}{more}",
    "facts.counted_per_total_least": "{name} total for each {by}, the least first: {values}{more}",
    "facts.counted_per_rows_most": "rows for each {by}, the most first: {values}{more}",
    "facts.counted_per_rows_least": "rows for each {by}, the fewest first: {values}{more}",
    "facts.owes_most": "{name} owes the most: {figure}{then}{more}",
    "facts.owes_least": "{name} owes the least: {figure}{then}{more}",
    "facts.owes_then": "; then {values}",
    "facts.owes_none": "no one owes anything (no unpaid rows)",
    "facts.per_value": "{text} {figure}",
    "facts.per_more": ", and {n} more",
    "facts.of_table": "{title}: {items}",  # (the figures of one of two tables or more: "table 2 in your message: …")
    "facts.counted_all": "{name}, all {rows} rows: {figures}",
    "facts.counted_without": "{name}, the amount without {label}, all {rows} rows: {figures}",
    "facts.counted_with": "{name}, the amount with {label}, all {rows} rows: {figures}",
    "facts.counted_product": "the total, {a} × {b} over all {rows} rows: {figure}",
    "facts.figure_total": "total {figure}",
    "facts.figure_average": "average {figure}",
    "facts.figure_largest": "largest {figure}",
    "facts.figure_smallest": "smallest {figure}",
    "facts.figure_largest_of": "largest {figure} ({row})",
    "facts.figure_smallest_of": "smallest {figure} ({row})",
    # the rows a question named, counted (counted_answer: "unpaid invoices over 1,000"), under the reply and for the model
    "facts.counted_where": "{name} where {conditions}: {n:|row|rows}{names}{figures}",  # (names: " (INV-102, INV-104)")
    "facts.counted_where_rows": "{n:|row|rows} where {conditions}{names}",
    "facts.counted_where_distinct": "{name} where {conditions}: {n:|different value|different values}{names}",
    "facts.counted_where_things": "{n} {word} where {conditions}{names}",  # ("2 customers where Status is unpaid")
    # what is owed by one who owes nothing ("how much does Ceren AS owe?": no unpaid rows of it)
    "facts.owes_nothing": "{name} owes nothing (no unpaid rows)",
    "facts.where_is": "{name} is {text}{more}",
    "facts.where_over": "{name} over {a}",
    "facts.where_year": "{name} in {text}",
    "facts.where_days": "{name} from {a} to {b}",  # (a month asked: "Date from 2025-03-01 to 2025-03-31")
    "facts.where_under": "{name} under {a}",
    "facts.where_least": "{name} at least {a}",
    "facts.where_most": "{name} at most {a}",
    "facts.where_between": "{name} between {a} and {b}",
    "facts.where_and": " and ",
    "facts.or_value": " or {text}",
    "facts.letter": "column {letter}",
    "facts.then": "; ",
    # a table pasted in a message (core/pasted_tables.py): its title, and its arithmetic checked by the program
    "facts.pasted": "the table in your message",
    "facts.pasted_n": "table {n} in your message",
    "facts.row_check": "row '{name}': {a} × {b} = {figure}, the table says {said}",
    "facts.sum_check": "the amounts add up to {figure}; the message says {label} {said}",
    "facts.tax_check": "{rate} of {of} is {figure}; the message says {label} {said}",
    "facts.due_check": "the subtotal and the tax add up to {figure}; the message says {label} {said}",
    "facts.for_question": "- For this question, the program counted: {item}.",
    # the rows of a long sheet left out of a summary's input (summary_chunks.with_facts), and the summary's heading over the facts
    "facts.rows_left_out": "[Rows {a} to {b} of this table are left out here; the figures above were counted from every row.]",
    "summary.facts": "Facts counted from the rows (by the program, not the model)",
    # two versions of a document compared by the program (core/document_changes.py): under the reply, and for the model
    "changes.found": "Found by the program: {n:|change|changes} between {file} and {name}:",
    "changes.none": "Found by the program: no changes between {file} and {name} (the same sentences).",
    "changes.removed": "- removed: {text}",
    "changes.added": "- added: {text}",
    "changes.changed": "- changed: {text}",
    "changes.was_now": "was “{source}”, now “{text}”",  # (source: the older version's sentence; text: the newer's)
    "changes.more": "- and {n} more",
    # (a heading over the facts, not a sentence: a model wrote "The program (not the model) compared
    # lease_v1.txt with lease_v2.txt has been updated …", the program's words as its own)
    "changes.for_model": ("Changes between {file} (the earlier version) and {name} (the document above), "
                          "{n:|change|changes}, found by comparing the two files:"),
    "doc.zip_not_odt": ("'{name}' is a zip archive but not an OpenDocument text; open it in its program and save it "
                        "as ODT again."),
    "doc.no_text": "'{name}' contains no text.",
    "doc.bad_encoding": "'{name}' starts like {enc} text but is not valid {enc}.",
    "doc.unknown_encoding": "'{name}' uses an unknown text encoding.",
    "doc.not_pdf": "'{name}' is damaged or not really a PDF; open it in the program it came from and save it as a PDF again.",
    "doc.pdf_nested": "'{name}' is a damaged PDF (its page tree nests too deeply).",
    "doc.pdf_damaged": "'{name}' is a damaged or truncated PDF; copy or download it again, or open it in the program it came from and save it as a PDF again.",
    "doc.zip_damaged": "'{name}' is a damaged or truncated {what} file (its end is missing); copy or download it again.",
    "doc.pdf_no_pages": "'{name}' is a damaged or truncated PDF (no pages found).",
    "doc.pdf_unreadable": "'{name}' is a damaged PDF: no page could be read.",
    "doc.invalid": "'{name}' is not a valid {what} file ({detail}).",
    "doc.docx_damaged": "'{name}' is a damaged DOCX file ({detail}).",
    "doc.binary_not_html": "'{name}' is a binary file, not HTML.",
    "doc.bad_html": "'{name}' is not readable HTML ({detail}).",
    "doc.not_regular": "'{path}' is not a regular file (a pipe or a device), so it cannot be read as a document.",
    "doc.no_permission": "'{name}' cannot be read (Permission denied).",
    "doc.unreadable": "'{name}' cannot be read ({reason}).",
    "doc.no_memory": "'{name}' needs more memory to read than is available.",
    "doc.too_nested": "'{name}' is nested too deeply to read safely.",
    "doc.reader_memory": "'{name}' needs more than {mib} MiB of memory to read.",
    "doc.reader_failed": "'{name}' could not be read ({detail}).",
    "doc.too_slow_here": "Reading '{name}' took longer than {seconds} s; the file is too large or too complex.",
    "doc.too_slow": "Reading '{name}' took longer than {seconds} s and was stopped; the file is too large or too complex.",
    "doc.too_much_text": "'{name}' holds more than {chars} characters of text, more than this workstation reads from one document.",
    "doc.too_many_pages": "'{name}' has {pages} pages, more than the limit of {limit}; split it first.",
    "doc.zip_members": "'{name}' holds {members} zip members, more than the limit of {limit}; it is not a normal {what} file.",
    "doc.zip_bomb_size": "'{name}' would unpack to more than {mib} MiB (a zip bomb?); it was not opened.",
    "doc.zip_bomb_ratio": "'{name}' contains a member compressed {ratio} to 1 (a zip bomb?); it was not opened.",
    "doc.reader_crashed": ("Reading '{name}' crashed the document reader (exit code {code}); the file is damaged "
                           "or hostile."),
    # a summary's Markdown around the model's words (summarize.render_markdown)
    "summary.title": "Summary of {name}",
    "summary.stopped": "Stopped after {done} of {total} parts; the points below cover {cover} only.",
    "summary.nothing": "nothing",
    "summary.points": "Points by part",
    "summary.parts_why": ("The document is too long for the model to read at once, so it was read in {n} parts, "
                          "one after the other; each part's points are below, with where it is in the document."),
    "summary.part": "Part {n} ({cite})",
    "summary.none": "(no summary)",
    # what the summary took, in words its reader pictures (it said "4 of 4 parts, 2,918 document
    # tokens, 5 model calls, 61.2 s."); the words counted in the document (``rounded_words``)
    "summary.footer": "Read in {total} parts (about {words} words); {calls}; {time}.",
    "summary.footer_one": "Read in one go (about {words} words); {calls}; {time}.",
    # a stopped summary: the words its parts cover, and the calls that ended (not the one stopped)
    "summary.footer_stopped": "{done} of {total} parts read (about {words} of the document's {all} words); {calls}; {time}.",
    # where a part of a document came from (documents.Document.cite)
    "cite.page": "p. {n}",
    "cite.pages": "pp. {a}–{b}",
    "cite.named": "{names}",
    "cite.line": "line {n}",
    "cite.lines": "lines {a}–{b}",
    "unit.s": "{n} s",
    # a time in words (summarize.duration: "1 min 5 s", not "1m05s" nor "65.0 s")
    "summarize.eta_hours": "{h} h {m} min",
    "summarize.eta_minutes": "{m} min {s} s",
    "summarize.eta_seconds": "{s} s",
    # a rough time left (before a part of the run has ended) as a range, and one revised up (``TimeLeft``)
    "summarize.eta_rough": "about {a}–{b} min",
    "summarize.eta_rough_hours": "about {a}–{b} h",
    "summarize.eta_under_minute": "under a minute",
    "summarize.eta_revised": "{time} (longer than first thought)",
    # whole hours and minutes (``time_formats``): "1 min", not "1 min 0 s"
    "summarize.eta_hours_whole": "{h} h",
    "summarize.eta_minutes_whole": "{m} min",
    # the words a token is, in the language a sentence is said in (``words_per_token``): measured on
    # the UI's texts, English 0.76 words a token with SmolLM2's and Gemma 3's tokenizers alike; the
    # texts that say it in words say this (F1's "three quarters of a word", bench's "4 for 3")
    "number.words_per_token": "0.75",
    # a plain office text in the UI's language: a model's own words a token in it are measured with
    # its tokenizer (``language_words.model_figures``): SmolLM2's spends about 4 tokens on a
    # Turkish word, Gemma 3's 2, both about 1.2 on an English one
    "number.words_sample": ("Please read the attached contract and tell me when the payment is due, who signs it "
                            "for the company, and what happens if the delivery is late. The meeting with the "
                            "supplier is on Monday at ten; bring last year's invoices and the new price list, "
                            "and send the minutes to everyone in the office by Friday."),
    # under a reply asked about an attached document too long for a message, F6's summary sent in its
    # place: the answer's figures are the summary's (a small model's summary invented a fair's takings)
    "chat.from_summary": "Answered from F6's summary of {name}, not the document itself: a summary can miss or "
                         "change names, dates and figures.",
    # under a very small model's reply about an attached document (``reply_check.unchecked_phrases``),
    # where the reply gives figures, dates or names the document does not have
    "check.against": "Check figures, dates and names against {name}: this model often gets them wrong. ",
    "check.not_in_1": "“{text}” is not in {name}.",
    "check.not_in_2": "“{text}” and “{text2}” are not in {name}.",
    "check.not_in_3": "“{text}”, “{text2}” and “{text3}” are not in {name}.",
    "check.not_in_more": "“{text}”, “{text2}”, “{text3}” and {n} more are not in {name}.",  # (n: those not named)
    # a figure the reply gives as the answer that is not what the program counted for the question
    # (``reply_check.miscounted_figures``): the total of every invoice given for the unpaid ones'
    "check.not_counted": "The reply's “{text}” is not the program's count for this question ({counted}).",
    "check.not_counted_is": "The reply's “{text}” is not the program's count for this question ({counted}): "
                            "{text} is {what}.",
    "check.all_rows_total": "the total of {name} in all {n} rows",
    "check.all_rows_average": "the average of {name} in all {n} rows",
    "check.then": " ",  # (between two sentences of the check)
    # a context said in words, with what they are words of (``context_words``): the UI language's
    # figure for the model, this conversation's own (its replies' words a token), a document's own
    "words.language": "about {n} words",
    "words.document": "about {n} words of this document",
    # what a profile's context holds, said one way on F3, its E, F4 and an attached document's refusal
    # (``holds_words``): F3's "reads about 1,100 words at once" stood beside a refusal of an 850-word
    # contract, a message holding less (the reply's room is kept)
    "words.holds": "a conversation of about {conversation} words; a message up to about {message_n}",
    "words.holds_short": "about {conversation} words; a message up to {message_n}",  # (F3 → E's row, 80 columns)
    "words.holds_document": ("a conversation of about {conversation} words of this document; a message up to "
                             "about {message_n}"),
    # said once beside a language's figure under half the model's English one (``WordsBasis.costly``)
    "words.costly": "(this model spends more of its room on words of this language than on English ones)",
    "number.date": "{y}-{m}-{d}",
    "unit.ms": "{n} ms",
    "summary.call_none": "the model was not asked",
    "summary.call": "the model was asked once",
    "summary.calls": "the model was asked {n} times",
    "summary.calls_and_kept": "{calls}, and {kept} parts were kept from a run that stopped",
    "summary.calls_and_kept_one": "{calls}, and {kept} part was kept from a run that stopped",
    # a summary stopped while its parts' summaries were put together, and the time of a run gone on with
    "summary.stopped_combining": ("All {total} parts were summarized; only putting them together into one summary "
                                  "was stopped, so the points below are by part. Going on finishes it."),
    "summary.time_this_run": "this run took {time}",
    "summary.small_model": ("Check names, dates and figures against the document: {name} is a very small model "
                            "({n} parameters) and gets them wrong, and it writes well in English only. A larger "
                            "model summarizes more faithfully."),
    "summary.busy_elsewhere": ("{name} is being summarized in another window or command now; summarize it again "
                               "once that summary has finished or been stopped."),
    "summary.cut_short": "The summary above stopped at its length limit, so it ends mid-sentence (…); {finish}",
    "summary.cut_short_context": ("The summary above used all the room the context leaves it, so it ends mid-sentence "
                                  "(…); {finish}"),
    "summary.cut_short_longest": ("The summary above reached the longest a summary is written, so it ends mid-sentence "
                                  "(…); {finish}"),
    # the advice for a summary cut short, by what held it (``summarize.CUT_FINISH_KEYS``): the file's
    # note above and the command line's line say the same
    "summary.finish_reply": "a larger max_tokens (the profile's, or --max-tokens) lets it finish.",
    "summary.finish_context": "a profile with a larger context lets it finish.",
    "summary.finish_longest": "ask a question about a point for more on it.",
    # the conversations (core/store.py)
    "store.title_taken": ("Another conversation is named \u201c{title}\u201d; choose another name (two of one name "
                          "cannot be told apart, and chat -c continues only the newest)."),
}


# a number as English writes it, perhaps with its unit: 8,192 / 23.0 GB / -1.5% / 120 ms /
# ~4.9 GB (and 8192: nothing to change there)
_ENGLISH_NUMBER = re.compile(
    r"(?P<about>~?)(?P<sign>[-+]?)(?P<n>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
    r"(?P<unit>(?: ?(?:%|°C|[KMGT]i?B|B|ms|sn|s|W|tok/s|token/sn))?)")  # the units we write
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")  # a day as a table's facts say it (``number.date``)
# (a title like "2,500 Dollars" or "3.5 Haiku" is a name, not a figure)


def local_number(text: str, lookup: Lookup | None) -> str:
    """``text``, where it is wholly a number written the English way (perhaps about, ~, and
    with its unit), with the separators of ``lookup``'s language (``number.thousands`` and
    ``number.decimal``: Turkish writes 8.192 and 23,0) and its way with a percentage
    (``number.percent``: Turkish writes %78 and +%0,6); anything else (a name, a path, a
    version inside a name) as it is. Once: 8.192 given again reads as English 8 point 192."""
    if lookup is not None and _ISO_DAY.fullmatch(text):  # a day: 2026-01-03, Turkish 03.01.2026
        day = lookup("number.date")
        return day.format(y=text[:4], m=text[5:7], d=text[8:10]) if day else text
    found = _ENGLISH_NUMBER.fullmatch(text) if lookup is not None else None
    if found is None or lookup is None:
        return text
    marks = {",": lookup("number.thousands"), ".": lookup("number.decimal")}
    number = "".join(marks.get(c) or c for c in found["n"])
    percent = lookup("number.percent")
    if found["unit"].strip() == "%" and percent:
        return found["about"] + found["sign"] + percent.format(n=number)
    return found["about"] + found["sign"] + number + found["unit"]



def local_numbers(text: str, lookup: Lookup | None) -> str:
    """``text`` with each of its space-separated numbers (``local_number``) in ``lookup``'s
    language's writing, a sign such as − or ± before one kept: a table's cell "12.3456 ± 0.0123",
    "45.0% (9/20)" read 12,3456 and %45,0 under ``--lang tr``."""
    if lookup is None:
        return text

    def one(piece: str) -> str:
        lead = piece[0] if piece[:1] in ("−", "±", "(") else ""
        return lead + local_number(piece[len(lead):], lookup)

    return " ".join(one(piece) for piece in text.split(" "))

def read_number(typed: str, whole: bool, thousands: str = ",") -> float | int:
    """A number typed the English way or the Turkish (0.7 or 0,7); a whole one may mark its
    thousands as the UI's language does (``thousands``: 2,048 in English, 2.048 in Turkish,
    where 1.500 typed in English is no 1500). ValueError for anything else (2.5 in a whole
    number's box is not 25)."""
    if whole:
        if re.fullmatch(rf"[-+]?\d{{1,3}}({re.escape(thousands)}\d{{3}})+", typed):  # thousands marked
            typed = typed.replace(thousands, "")
        return int(typed)
    if "," in typed and "." in typed:
        raise ValueError(typed)
    return float(typed.replace(",", "."))


PAGE_WORDS = 500  # a page of text, single-spaced


def words_per_token(lookup: Lookup | None = None) -> float:
    """The words a token is, about, in English or ``lookup``'s language (``number.words_per_token``:
    three quarters of an English word; fewer of a Turkish one, which takes more tokens a word)."""
    return float(say([("number.words_per_token", {})], lookup))


@dataclass(frozen=True)
class WordsBasis:
    """What a context's tokens are said in words by (``context_words``): ``per_token``, the words a
    token; ``of``: "document" (the document's own words over its tokens) or "language" (the UI language's figure for the model,
    its tokenizer measured on a text of that language, or the language's general one); ``costly``:
    that figure is under half the model's English one (an English model reading Turkish)."""

    per_token: float
    of: str = "language"
    costly: bool = False

    def count(self, tokens: float) -> str:
        """``tokens`` as the words they are about, bare ("3,100"), for a sentence that names what
        they are words of itself (the line under the box: "… more words in this conversation")."""
        return rounded_words(tokens * self.per_token)


def context_basis(lookup: Lookup | None = None, model: tuple[float, float] | None = None) -> WordsBasis:
    """The basis a context is said in words by: the UI language's figure for the model (``model``: its
    words a token in the UI's language and in English, ``language_words.model_figures``), else the
    language's. The server's "each conversation up to about 3,100 words" and a desk PC's "room for
    about 3,500 more words" of the same 4,096 tokens stand on it alike (no model file on a desk PC:
    the language's). Not a conversation's own replies: the room went up after replies, and jumped on
    reopening (wordsroom3)."""
    if model is not None:
        own, english = model
        return WordsBasis(own, "language", own < english / 2)
    return WordsBasis(words_per_token(lookup))


def context_words(tokens: float, basis: WordsBasis, lookup: Lookup | None = None) -> str:
    """The one way from a context's (or a part of it) ``tokens`` to "about N words": F3, F4, the
    attach line, the line under the box. What they are words of is said where it is not the UI
    language's figure ("of this conversation's kind of text", "of this document"): F3 said 3,700
    of an English conversation's and 890 of a Turkish one's, and the attach line 810 of a Turkish
    contract's, all as plain "words", beside F4's 3,300 for the same model."""
    return say([(f"words.{basis.of}", {"n": basis.count(tokens)})], lookup)


def holds_words(context: float, message: float, basis: WordsBasis, lookup: Lookup | None = None,
                short: bool = False) -> str:
    """What a context of ``context`` tokens holds in words, the one phrase F3's profile line, its E,
    F4 and an attached document's refusal say it by: a conversation of all of it, a message of
    ``message`` tokens (the context less the reply's room, ``engine_api.answer_reserve``, and
    where known the message's frame with the instructions). F3 said a profile "reads about 1,100
    words at once" and F6 read an 850-word contract in one go that a message could not hold."""
    key = "words.holds_short" if short else "words.holds_document" if basis.of == "document" else "words.holds"
    return say([(key, {"conversation": basis.count(context), "message_n": basis.count(max(0.0, message))})], lookup)


def costly_note(basis: WordsBasis, lookup: Lookup | None = None) -> str:
    """" (this model spends more of its room on …)" where ``basis`` is so, else ""."""
    return " " + say([("words.costly", {})], lookup) if basis.costly else ""


def about_words(tokens: float, lookup: Lookup | None = None, per_token: float | None = None) -> str:
    """``tokens`` as the words they are about in English or ``lookup``'s language (the app's, not
    the document's: ``words_per_token``), rounded as a person says an estimate (two figures: 4,096
    tokens are "3,100" English words, 8,192 "6,100"; under 2 with a decimal, "1.4"), in English
    writing (a sentence's values turn it into the UI's: ``local_number``). Tokens meant nothing
    to the office staff the app is for. Where the text is there to count, ``rounded_words`` of its
    words says it in any language; ``per_token``: the words a token measured of the text these
    tokens are of (replies' own words over their tokens), in place of the language's: the same
    English replies were "41 words a second" in English and 22 after F9 to Turkish."""
    return rounded_words(tokens * (per_token or words_per_token(lookup)))


def writing_said(tps: float, lookup: Lookup | None = None, per_token: float | None = None, terms: bool = True,
                 figure: str | None = None) -> Phrase:
    """A writing speed as a person pictures it, "about 29 words a second" (``about_words``), and
    with ``terms`` its tokens a second after it, "(38.7 tok/s)", where it stands beside figures in
    tok/s: F5's headline beside its rows and bench's replay summary say it so (bench said "tok/s"
    alone where fit said words a second). ``figure``: the tok/s as to be said (its spread, "38.7 ±
    0.4"), else ``tps`` with a decimal."""
    rate: Phrase | str = ("speed.rate_term", {"tps": figure or f"{tps:.1f}"}) if terms else ""
    return ("speed.words_a_second", {"words": about_words(tps, lookup, per_token), "rate": rate})


def part_percent(fraction: float) -> int:
    """A share that is neither none nor all as a whole percent, 1 to 99: "0%" of a load under way
    read as not begun, "100%" of a GPU that holds all but one layer as all of it."""
    return min(99, max(1, round(fraction * 100)))


def share_percent(fraction: float) -> str:
    """A share as a percent a person reads: whole where that is true to it ("91%"), else with as
    many decimals (two at most) as keep it off the ends: 0.9961 is "99.6%", not "100%" (``eval
    --kld`` said a quantization picks the same next word "100% of the time" beside 99.61%), 0.004
    "0.4%"; only all of it is "100%", only none "0%". ``part_percent``'s rule, for a figure kept."""
    if fraction >= 1 or fraction <= 0:
        return f"{round(min(1.0, max(0.0, fraction)) * 100)}%"
    for decimals in (0, 1, 2):
        text = f"{fraction * 100:.{decimals}f}"
        if 0 < float(text) < 100:
            return f"{text}%"
    return "99.99%" if fraction > 0.5 else "0.01%"


def rounded_words(words: float) -> str:
    """A count of words as a person says an estimate: two figures ("3,100"), under 2 with a decimal."""
    if words < 2:
        return f"{words:.1f}"
    digits = len(str(int(words)))
    return f"{round(words, 2 - digits) if digits > 2 else round(words):,.0f}"


def speed_figure(tps: float, decimals: int = 0) -> str:
    """Tokens a second as size, F10 and fit say them (English writing: ``say`` gives it the UI's
    language's, Turkish 0,3): with ``decimals`` from 2 on ("26"), one decimal under 2 and as many
    as its first figure needs under 0.1 ("0.04"): a big model on a slow CPU was "about 0 tokens a
    second", read as "it does not work"; only none is 0."""
    if tps > 0:
        decimals = max(decimals, 1 if tps < 2 else 0, -math.floor(math.log10(tps)))
    said = f"{tps:,.{decimals}f}"
    return said.rstrip("0") if decimals > 1 and tps < 0.1 else said  # (0.095 rounded up: "0.1", not "0.10")


# Chinese and Japanese write no spaces between words: their characters (Han, kana) are counted
# as words at this many a word (a Chinese word is 1 to 2 characters, 1.5 on average), and their
# punctuation (、。「」, full-width ！？) is no word. Hangul is written with spaces: split as English.
CJK_CHARACTERS_PER_WORD = 1.5
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f]")
_CJK_PUNCTUATION = re.compile("[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]")


def words_in(text: str) -> int:
    """The words ``text`` has, as a person counts them: split at spaces (as wc -w), and its Chinese
    and Japanese characters at ``CJK_CHARACTERS_PER_WORD`` a word (split at spaces, a Chinese
    paragraph was one word or two). The one count of words from a text (``rounded_words`` says it)."""
    cjk = len(_CJK.findall(text))
    if not cjk:
        return len(text.split())
    rest = _CJK_PUNCTUATION.sub(" ", _CJK.sub(" ", text)).split()
    return len(rest) + max(1, round(cjk / CJK_CHARACTERS_PER_WORD))


# values that are people's words or names (a conversation titled "2,500", a draft reading
# "1.5", a file, a model, a server): written as they are, never taken for a figure
WORDS = frozenset({
    "title", "text", "name", "names", "path", "file", "folder", "what", "reason", "why", "server", "url",
    "host", "model", "source", "message", "detail", "machine", "command", "cmd", "code", "env", "suffix",
    "status", "verdict", "reference", "members", "label", "query", "profile", "key", "person", "id",
    "text2", "text3",
})


def local_value(name: str, value: Any, lookup: Lookup | None) -> Any:
    """A value given to a sentence as ``name``: a figure in the lookup's language's writing
    (``local_number``); a stored time (``Moment``) as the language writes one; people's words
    (``WORDS``) and anything else not a string as they are."""
    if isinstance(value, Moment):
        return local_text(value, (lookup("date.moment") if lookup is not None else None) or MOMENT)
    return local_number(value, lookup) if isinstance(value, str) and name not in WORDS else value


class _Wording(string.Formatter):
    """str.format, and the words a number is joined with where a sentence asks for them: a
    noun's one and many forms, ``{n:|prompt|prompts}``, "1 prompt", "3 prompts" (it said "1
    prompts"; Turkish writes its noun as it is after any number: "{n} istem"); and a number's
    suffix: ``{done:'si}`` is ``done`` and its Turkish suffix as it follows that number (1'i,
    2'si, 3'ü, 6'sı, 10'u; ``number_suffix``), so a translation says "3 bölümden 1'i" without
    "tanesi"."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        if format_spec.startswith("'"):
            return f"{value}'{number_suffix(value, format_spec[1:])}"
        if format_spec.startswith("|"):
            one, _, many = format_spec[1:].partition("|")
            return f"{value} {one if str(value).strip() == '1' else many or one}"
        return super().format_field(value, format_spec)


_WORDING = _Wording()


def fill_in(text: str, values: dict[str, Any]) -> str:
    """``text.format(**values)``, with ``{n:'si}`` for a number's suffix and ``{n:|one|many}``
    for its noun (``_Wording``)."""
    return _WORDING.vformat(text, (), values) if ":'" in text or ":|" in text else text.format(**values)


def log_said(logger: logging.Logger, phrases: list[Phrase]) -> None:
    """A warning for the log, in English, its phrases kept with it: a command run in another
    language says it in that one (``logs_said_in``)."""
    logger.warning("%s", say(phrases), extra={"said": phrases})


class _SaidHandler(logging.Handler):
    """The core's warnings on stderr, as Python says them with no handler set (its "last
    resort"), each said with phrases (``log_said``) in the command's language."""

    def __init__(self, lookup: Lookup) -> None:
        super().__init__(logging.WARNING)
        self.lookup = lookup

    def emit(self, record: logging.LogRecord) -> None:
        try:
            said = getattr(record, "said", None)
            text = say(said, self.lookup) if said else record.getMessage()
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - (logging's own way: a broken stderr is no crash)
            self.handleError(record)


@contextlib.contextmanager
def logs_said_in(lookup: Lookup | None) -> Iterator[None]:
    """While a command runs: the warnings of workstation's loggers said with ``lookup`` (a
    saved KV state that could not be used or kept was said in English under --lang tr)."""
    if lookup is None:
        yield
        return
    logger = logging.getLogger("workstation")
    handler = _SaidHandler(lookup)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def say(phrases: list[Phrase], lookup: Lookup | None = None) -> str:
    """The sentence's words: each phrase's text from ``lookup(key)`` (a translation, None where
    there is none) or the English above, its values filled in (phrases among them first, and
    numbers written the lookup's language's way: ``local_number``)."""

    def one(key: str, values: dict[str, Any]) -> str:
        text = (lookup(key) if lookup else None) or ENGLISH[key]
        filled = {k: fill(k, v) for k, v in values.items()}
        return fill_in(text, filled) if filled else text

    def fill(name: str, value: Any) -> Any:  # a phrase, or a list of them (a sentence within the sentence)
        if isinstance(value, tuple):
            return one(*value)
        if isinstance(value, list):
            return "".join(one(*v) for v in value)
        return local_value(name, value, lookup)

    return "".join(one(key, values) for key, values in phrases)
