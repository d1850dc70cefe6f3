"""Engines served by another program: an OpenAI-compatible server (`--engine openai`), vLLM
in this process (`--engine vllm`), and starting `vllm serve` from its own virtualenv.

    openai_engine.py  OpenAIEngine: any OpenAI-compatible server, replicas least-loaded first
    vllm_engine.py    VLLMEngine: vLLM's offline `LLM` with one LoRARequest per agent
    vllm_launch.py    vLLM's CLI run from `.venv-vllm` with its traps worked around (stdlib only)
    vllm_server.py    VLLMServer: `vllm serve` on loopback, for tests and benchmarks
"""
