"""The prompt fingerprint of today's code is the one the committed fair-round runs recorded.

A bench or training run refuses to resume, and `compare` to pair, runs whose prompt templates
differ; the fingerprint hashes the templates' source. An edit to `schemes/prompts.py` or
`schemes/contract_prompts.py` (a comment, an enum in place of a string) therefore makes every
committed run look like another setting. This test names the file to restore, or, where the
prompts changed on purpose, says that the committed runs no longer resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coopcode.evaluation.bench import prompt_fingerprint

REPO = Path(__file__).resolve().parent.parent
RECORDED = {  # a committed bench of each kind of scheme, made with today's prompts
    "single": REPO / "docs/divided-fair/baselines/single/meta.json",
    "contract": REPO / "checkpoints/compose-warm-pair-0.5b/validation/step-000045/meta.json",
}


@pytest.mark.parametrize("scheme", sorted(RECORDED))
def test_committed_runs_keep_their_prompt_fingerprint(scheme: str) -> None:
    meta = json.loads(RECORDED[scheme].read_text())
    assert meta["config"]["schemes"] == [scheme]
    recorded = meta["identity"]["prompts"]
    assert prompt_fingerprint([scheme]) == recorded, (
        f"the {scheme} scheme's prompt templates are not those of {RECORDED[scheme]}: "
        "restore coopcode/schemes/prompts.py (and contract_prompts.py) byte for byte, or, if the "
        "prompts changed on purpose, committed runs of this scheme no longer resume")
