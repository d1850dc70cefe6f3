"""Models: the catalog, the embedded default, and resolving what a user names."""

from coopcode.models.catalog import CATALOG, DEFAULT_MODEL, CatalogModel
from coopcode.models.embedded import convert, is_ready, model_dir
from coopcode.models.resolve import ResolvedModel, fingerprint_folder, resolve_model

__all__ = [
    "CATALOG",
    "DEFAULT_MODEL",
    "CatalogModel",
    "ResolvedModel",
    "convert",
    "fingerprint_folder",
    "is_ready",
    "model_dir",
    "resolve_model",
]
