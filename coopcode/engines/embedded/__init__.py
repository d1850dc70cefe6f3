"""The embedded engine: one model in this process, continuously batched, on the CPU kernels
measured fastest here (`TransformersEngine`, `--engine transformers`, the default).

    engine.py          TransformersEngine: the model, its LoRA adapters, the decode loop's forward
    batching.py        ContinuousBatcher: waiting/running rows, a token budget per step, sampling
    flat_step.py       one flat forward: StepPlan, SlotCache, slot_attention, TokenLora
    kernels.py         ForwardKind and Kernel; which kernel each kind of forward runs on
    cpu_format.py      the number format on a CPU, and the file the measurements are kept in
    kernel_weights.py  KernelWeights: copies of the weights (packed, bf16) and the fused step
    fused_decode.py    FusedDecoder: decoding rows' whole step in one compiled call
    fused_decode.cpp   its kernel, compiled on first use (package data)
    cpu_threads.py     idle threads give their OpenMP workers back

One step's life from request to sampled token, and the hooks it passes through (where each is
set, and why): docs/design/embedded-engine.md. Importing this package imports no torch; the
registry loads `engine:TransformersEngine` when an engine of this kind is asked for.
"""
