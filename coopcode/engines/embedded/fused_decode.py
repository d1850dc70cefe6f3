"""The decode step of 1 to `max_rows` rows in one compiled call (`fused_decode.cpp`): the
"fused" kernel the engine may choose for one-token forwards and for steps in which every row
decodes a token (`kernels.choose_kernels`).

Why: a single stream (the TUI's live view) is bound by reading the weights once a token, yet
the eager forward reached only ~53% of the machine's bandwidth limit (BENCHMARKS.md, "A
single stream"): its matrix products stream the weights at ~78% of the read bandwidth, and
the ~170 small operations between them (norms, rotary, attention, their Python, and the
OpenMP workers falling asleep and waking between kernels) take the rest. Torch offered no
way to close that here: q/k/v fused, one thread, prepacked weights and torch.compile were
measured no faster or slower. The compiled step keeps one team of threads busy for the whole
token (spinning barriers between a layer's phases), uses avx512_bf16's bf16 dot products
where the CPU has them, and does everything between the products in the same loop.

Several rows: each weight is read once for all of them. Where the CPU has bf16 dot products
the weights are also packed in pairs along the input (a copy as large as the bf16 weights),
so that one loaded vector of weights serves every row through a broadcast of its input, with
no reductions: steps of 2 to 32 rows then run near the machine's matrix-product peak (8 rows
33 ms, 16 rows 51 ms, 32 rows 92 ms for the 0.5B model, where oneDNN's prepacked forward of
as many tokens takes 55, 72 and 115 ms: BENCHMARKS.md "The fused step for many rows").
Elsewhere each weight row is dotted with every input, up to 8 rows.

Scope, checked by `unsupported`: Qwen2- and Llama-style decoders (RMSNorm, rotary of the
default kind, grouped-query attention, a SiLU-gated MLP) whose weights are bf16 or fp32 (an
fp32 model's are copied to bf16 for it, as the engine's bf16 copy does), on x86 CPUs with
AVX2 and FMA. A row under a PEFT LoRA adapter gets the adapter's deltas in the same step
(read from the adapter's own fp32 tensors at every step, so a trainer's updates show at
once); adapters it does not apply (DoRA, LoRA on the embeddings) keep the eager forward. The extension is compiled
once per machine with the C++ compiler torch's extensions use (cached under
~/.cache/torch_extensions); where that fails the kernel is simply not offered.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

SOURCE = Path(__file__).with_name("fused_decode.cpp")
ARCHITECTURES = ("qwen2", "llama")
# The most rows one step takes on any CPU (fused_decode.cpp's kMaxRowsAmx): 64 where the CPU
# has AMX tiles, 32 where it has bf16 dot products (the weights packed in pairs), 8 elsewhere
# (`FusedDecoder.max_rows`).
MAX_ROWS = 64
_built: dict[str, Any] = {}
_build_lock = threading.Lock()


def isa_level() -> int | None:
    """The kernels this process may use: 3 (AVX-512 with bf16 dot products and AMX tiles for
    several rows' products), 2 (AVX-512 with bf16 dot products), 1 (AVX-512), 0 (AVX2 and
    FMA), None (none: not offered). Follows torch's own capability, so
    `ATEN_CPU_CAPABILITY=avx2` holds these kernels to AVX2 as well."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0].split())
    except (OSError, IndexError):
        return None
    if not {"avx2", "fma"} <= flags:
        return None
    capability = torch.backends.cpu.get_cpu_capability()  # "AVX512", "AVX2", "DEFAULT", ...
    if capability.startswith("AVX512") and {"avx512f", "avx512bw"} <= flags:
        if "avx512_bf16" not in flags:
            return 1
        return 3 if {"amx_bf16", "amx_tile"} <= flags else 2
    return 0 if capability == "AVX2" else None


def version() -> str:
    """The kernel source's hash: an edited kernel is another version."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]


def _name() -> str:
    """The extension's name: its version in it, so an edited kernel is built anew."""
    return f"coopcode_fused_decode_{version()}"


def built() -> bool:
    """Whether the extension is compiled already on this machine (loading it is quick)."""
    if "module" in _built:
        return True
    return (build_folder() / f"{_name()}.so").exists()


def build_folder() -> Path:
    """Where torch's extension builder keeps this version's build (TORCH_EXTENSIONS_DIR's)."""
    from torch.utils.cpp_extension import _get_build_directory

    return Path(_get_build_directory(_name(), verbose=False))


def extension() -> Any:
    """The compiled extension (built on first use, then loaded from torch's cache), or
    raises RuntimeError with the reason it cannot be had."""
    with _build_lock:
        if "module" in _built:
            return _built["module"]
        if "error" in _built:
            raise RuntimeError(_built["error"])
        from torch.utils.cpp_extension import load

        folder = build_folder()
        try:
            with _only_builder(folder):
                module = load(name=_name(), sources=[str(SOURCE)],
                              extra_cflags=["-O3", "-mavx2", "-mfma", "-fopenmp"],
                              extra_ldflags=["-fopenmp"], verbose=False)
        except Exception as exc:  # no compiler, no headers: the eager forward stays
            _built["error"] = f"the fused decode kernel did not build: {str(exc).splitlines()[0][:200]}"
            raise RuntimeError(_built["error"]) from None
        _built["module"] = module
        remove_stale_builds(folder.parent, _name())
        return module


@contextlib.contextmanager
def _only_builder(folder: Path) -> Iterator[None]:
    """Holds this machine's one right to build or load the extension in `folder`: an flock
    on a file beside it, which the kernel lets go when the process ends however it ends.

    Torch's own guard is a `lock` file in the folder, made on entry and deleted on exit: a
    process killed between the two (Ctrl-C while the first engine loads, a CI job's end) left
    it there, and every later `load` waited for it to go, for ever (a whole CI run hung on
    one). Holding the flock, a `lock` file can only be such a leftover (every coopcode
    process takes the flock first), so it is deleted before torch looks."""
    import fcntl

    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.flock", "a+") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX)
        except OSError:  # a file system without locks: torch's own guard alone, as before
            yield
            return
        (folder / "lock").unlink(missing_ok=True)
        yield


def remove_stale_builds(root: Path, keep: str, days: float = 7.0) -> list[Path]:
    """Delete the builds of earlier versions of the kernel under torch's extension cache
    (`root`) not touched for `days` (each source edit is a new build, ~1 MB, and a new
    version of coopcode would otherwise leave the old one there for good); a checkout of an
    older version that still wants one builds it again. Returns what was deleted."""
    import shutil
    import time

    stale = [d for d in root.glob("coopcode_fused_decode_*") if d.name != keep and d.is_dir()
             and time.time() - d.stat().st_mtime > days * 86400]
    for d in stale:
        shutil.rmtree(d, ignore_errors=True)
        d.with_name(f"{d.name}.flock").unlink(missing_ok=True)
    return stale


def unsupported(model: Any) -> str | None:
    """Why `model` cannot run on the fused kernel here, or None."""
    if isa_level() is None:
        return "the CPU has no AVX2 and FMA (or torch is held below them)"
    cfg = model.config
    if cfg.model_type not in ARCHITECTURES:
        return f"a {cfg.model_type} model (the kernel knows {', '.join(ARCHITECTURES)})"
    if getattr(cfg, "hidden_act", "silu") != "silu":
        return f"activation {cfg.hidden_act}"
    rope = getattr(cfg, "rope_scaling", None) or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        return f"rotary scaling {rope}"
    if getattr(cfg, "use_sliding_window", False):
        return "sliding-window attention"
    if model.dtype not in (torch.bfloat16, torch.float32) or model.device.type != "cpu":
        return f"{model.dtype} on {model.device}"
    return None


def _weight(module: Any) -> Any:
    return getattr(module, "base_layer", module).weight.detach()


def _bias(module: Any) -> Any:
    bias = getattr(module, "base_layer", module).bias
    return torch.empty(0) if bias is None else bias.detach().float().contiguous()


class FusedDecoder:
    """The fused one-token forward of `model` (its base weights: LoRA layers are looked
    through). An fp32 model's weights are copied to bf16 here (half their bytes); a bf16
    model's are used as they are."""

    def __init__(self, model: Any, bf16_copy: Callable[[Any], Any] | None = None,
                 isa: int | None = None) -> None:
        """`bf16_copy(linear)`: a bf16 copy of an fp32 model's linear weight made already (or
        None: one is made here); `isa`: a lower kernel level than the CPU's (tests)."""
        reason = unsupported(model)
        if reason:
            raise RuntimeError(f"the fused decode kernel cannot run this model: {reason}")
        level = isa_level()
        if isa is not None and level is not None and isa <= level:
            level = isa
        module = extension()
        cfg = model.config
        inner = model.model
        rotary = inner.rotary_emb

        def bf16(linear: Any) -> Any:
            w = _weight(linear)
            if w.dtype == torch.bfloat16:
                return w.contiguous()
            made = bf16_copy(getattr(linear, "base_layer", linear)) if bf16_copy else None
            return made if made is not None else w.to(torch.bfloat16).contiguous()

        tensors = [_weight(inner.embed_tokens).contiguous(), inner.norm.weight.detach().float(),
                   bf16(model.get_output_embeddings()),
                   rotary.inv_freq.detach().float().contiguous()]
        for layer in inner.layers:
            attn, mlp = layer.self_attn, layer.mlp
            tensors += [layer.input_layernorm.weight.detach().float(),
                        layer.post_attention_layernorm.weight.detach().float()]
            for proj in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj,
                         mlp.gate_proj, mlp.up_proj, mlp.down_proj):
                tensors += [bf16(proj), _bias(proj)]
        self.heads = cfg.num_attention_heads
        self.kv_heads = getattr(cfg, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.layers = cfg.num_hidden_layers
        self.dtype = model.dtype
        self.isa = level
        self.model = model
        self._adapters: dict[str, tuple[Any, Any, int]] = {}  # name: (a layer, its A, number)
        self._numbers = 0
        self._kernel = module.FusedDecoder(
            tensors, self.layers, self.heads, self.kv_heads, self.head_dim,
            float(inner.norm.variance_epsilon), float(getattr(rotary, "attention_scaling", 1.0)),
            level)
        # Rows one step takes: 64 on AMX tiles, 32 with bf16 dot products (the weights then
        # packed in pairs as well: a copy as large as the bf16 weights), 8 elsewhere.
        self.max_rows = int(self._kernel.max_rows)

    def step(self, tokens: Sequence[int], positions: Sequence[int], slots: Sequence[int],
             cache_k: list[Any], cache_v: list[Any],
             adapters: Sequence[str | None] | None = None) -> Any:
        """Logits `[rows, vocab]` (fp32) of up to `max_rows` rows' next tokens in one call, each
        weight read once for all of them: row i's `tokens[i]` at `positions[i]` in cache slot
        `slots[i]` (distinct), under LoRA adapter `adapters[i]` (one `runs` said yes to) or
        the bare base (None); the tokens' keys and values are written to the cache
        (`flat_step.SlotCache`)."""
        numbers = [-1 if a is None else self._adapters[a][2] for a in adapters or [None] * len(tokens)]
        return self._kernel.step(list(tokens), list(positions), list(slots), cache_k, cache_v,
                                 torch.get_num_threads(), numbers)

    def runs(self, adapter: str) -> bool:
        """Whether the step applies PEFT LoRA adapter `adapter` of the model (registered
        now if it is new, or was loaded again since): plain LoRA on the decoder's products,
        fp32 weights. Not DoRA, LoRA biases, or LoRA on the embeddings or the head."""
        known = self._adapters.get(adapter)
        if known is not None:
            layer, a, _number = known
            if layer is None:
                return False
            if adapter in layer.lora_A and layer.lora_A[adapter].weight is a:
                return True
        return self._register(adapter)

    def _register(self, adapter: str) -> bool:
        inner = self.model.model
        for outer in (inner.embed_tokens, self.model.get_output_embeddings()):
            if adapter in getattr(outer, "lora_A", {}) or adapter in getattr(outer, "lora_embedding_A", {}):
                self._adapters[adapter] = (None, None, -1)
                return False
        ab: list[Any] = []
        scales: list[float] = []
        first = None
        for layer in inner.layers:
            attn, mlp = layer.self_attn, layer.mlp
            for proj in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj,
                         mlp.gate_proj, mlp.up_proj, mlp.down_proj):
                if adapter not in getattr(proj, "lora_A", {}):
                    ab += [torch.empty(0), torch.empty(0)]
                    scales.append(0.0)
                    continue
                a, b = proj.lora_A[adapter], proj.lora_B[adapter]
                if (proj.use_dora.get(adapter) or b.bias is not None
                        or a.weight.dtype != torch.float32 or b.weight.dtype != torch.float32
                        or not (a.weight.is_contiguous() and b.weight.is_contiguous())):
                    self._adapters[adapter] = (None, None, -1)
                    return False
                ab += [a.weight.detach(), b.weight.detach()]
                scales.append(float(proj.scaling[adapter]))
                first = first or (proj, a.weight)
        if first is None:
            self._adapters[adapter] = (None, None, -1)
            return False
        self._numbers += 1
        if adapter in self._adapters and self._adapters[adapter][2] >= 0:
            self._kernel.drop_adapter(self._adapters[adapter][2])
        self._kernel.set_adapter(self._numbers, ab, scales)
        self._adapters[adapter] = (first[0], first[1], self._numbers)
        return True

    def scratch_step(self, rows: int = 1) -> Any:
        """One step of `rows` rows on a cache of its own (what `choose_kernels` times)."""
        shape = (rows, self.kv_heads, 1, self.head_dim)
        k = [torch.zeros(shape, dtype=self.dtype) for _ in range(self.layers)]
        v = [torch.zeros(shape, dtype=self.dtype) for _ in range(self.layers)]
        return self.step([0] * rows, [0] * rows, list(range(rows)), k, v)
