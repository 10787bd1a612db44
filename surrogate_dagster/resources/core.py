"""Object store and HF Hub resources. Secrets are env-var NAMES here; values are read at use."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..catalog.models import HubConfig, LocalStoreConfig, Profile, S3StoreConfig
from ..hub import HubClient, make_hub
from ..settings import profile_resource
from ..storage import ObjectStore
from ..storage.factory import store_from_profile_section


class ObjectStoreResource(profile_resource(S3StoreConfig, exclude=("kind", "bucket"))):
    """Local directory or any S3-compatible bucket (Wasabi), with a SHA-256 manifest: the profile's
    ``object_store`` section (catalog.models: LocalStoreConfig or S3StoreConfig by ``kind``), whose
    S3 fields and defaults are S3StoreConfig's."""

    kind: str = Field("local", description="local: a directory (root); s3: a bucket (bucket, endpoint_url, ...)")
    root: str | None = Field(default=None, description="kind local: the store's directory")
    bucket: str | None = Field(default=None, description="kind s3: the bucket")

    def profile(self) -> LocalStoreConfig | S3StoreConfig:
        """The section as the model its ``kind`` names (fields of the other kind left out)."""
        data = self.model_dump()
        if data.get("kind") == "local":
            return LocalStoreConfig.model_validate({"kind": "local", "root": data.get("root")})
        return S3StoreConfig.model_validate({k: v for k, v in data.items() if k != "root" and v is not None})

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
