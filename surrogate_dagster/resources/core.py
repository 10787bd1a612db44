"""Object store and HF Hub resources. Secrets are env-var NAMES here; values are read at use."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource

from ..catalog.models import HubConfig, Profile
from ..hub import HubClient, make_hub
from ..settings import profile_resource
from ..storage import ObjectStore
from ..storage.factory import store_from_profile_section


class ObjectStoreResource(ConfigurableResource):
    """Local directory or any S3-compatible bucket (Wasabi), with a SHA-256 manifest."""

    kind: str = "local"
    root: str | None = None
    bucket: str | None = None
    prefix: str = ""
    endpoint_url: str | None = None
    region: str = "us-east-1"
    access_key_env: str = "WASABI_ACCESS_KEY"
    secret_key_env: str = "WASABI_SECRET"
    max_attempts: int = 8

    def get_store(self) -> ObjectStore:
        return store_from_profile_section(self.model_dump())


class HubResource(profile_resource(HubConfig)):
    """The HF Hub: online (datasets streaming + HfApi) or an offline mirror directory; the fields
    are the profile's `hub` section (catalog.models.HubConfig)."""

    def get_client(self) -> HubClient:
        return make_hub(self.profile())


def resources_for_profile(profile: Profile) -> dict[str, Any]:
    """The shared resources of a profile (object store, hub), keyed as the assets' parameters name
    them; each phase adds its own (`curation_resources`, `synth_resources`, ...)."""
    return {
        "object_store": ObjectStoreResource(**profile.object_store.model_dump()),
        "hub": HubResource(**profile.hub.model_dump()),
    }
