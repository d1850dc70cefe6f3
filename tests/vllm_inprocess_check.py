"""Run by .venv-vllm's python (tests/test_vllm_engine.py): the in-process vLLM engine on the
embedded model with both committed adapters. Prints one JSON object of what it saw."""

from __future__ import annotations

import json
import sys


def main() -> None:
    model_dir, helper, main_adapter = sys.argv[1:4]
    from coopcode.engines import GenerationRequest, SamplingParams
    from coopcode.engines.served.vllm_engine import VLLMEngine

    engine = VLLMEngine(model_dir, max_model_len=2048)
    engine.load_adapter("helper", helper)
    engine.load_adapter("main", main_adapter)
    prompt = engine.render_chat([{"role": "user", "content": "Write a function that returns "
                                  "the running sums of a list."}]) + "```python\n"
    sampled = SamplingParams(n=3, max_new_tokens=24, temperature=1.0, seed=3)
    first = engine.generate([GenerationRequest(prompt, sampled)])[0]
    again = engine.generate([GenerationRequest(prompt, sampled)])[0]
    one = engine.generate([GenerationRequest(prompt, sampled.with_(n=1, index=2))])[0][0]
    greedy = SamplingParams(n=1, max_new_tokens=32, temperature=0.0)
    alone = engine.generate([GenerationRequest(prompt, greedy)])[0][0].text
    mixed = engine.generate([GenerationRequest(prompt, greedy, adapter="helper"),
                             GenerationRequest(prompt, greedy, adapter="main"),
                             GenerationRequest(prompt, greedy),
                             GenerationRequest(prompt, greedy, adapter="helper")])
    streamed: list[str] = []
    sub = engine.submit(GenerationRequest(prompt, greedy, adapter="main"),
                        lambda _i, text, _n: streamed.append(text))
    print("RESULT " + json.dumps({
        "samples": [c.text for c in first], "again": [c.text for c in again],
        "sample_2_alone": one.text, "tokens": [c.n_tokens for c in first],
        "base_alone": alone, "base_mixed": mixed[2][0].text,
        "helper": mixed[0][0].text, "main": mixed[1][0].text,
        "submitted": sub.result(300)[0].text, "streamed": "".join(streamed),
    }), flush=True)


if __name__ == "__main__":
    main()
