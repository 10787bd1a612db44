"""Dagster resources, thin wrappers that build the Dagster-free clients from a profile."""

from .core import HubResource, ObjectStoreResource, resources_for_profile

__all__ = ["HubResource", "ObjectStoreResource", "resources_for_profile"]
