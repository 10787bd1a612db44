"""Typed models of assets/*.yaml (the catalog) and resources/*.yaml (profiles), validated at load."""

from .loader import CatalogError, load_profile, load_sources, load_yaml_model
from .models import Profile, SourceSpec, SourcesCatalog

__all__ = ["CatalogError", "Profile", "SourceSpec", "SourcesCatalog", "load_profile",
           "load_sources", "load_yaml_model"]
