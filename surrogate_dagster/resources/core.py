"""Object store and HF Hub resources. Secrets are env-var NAMES here; values are read at use."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource

from ..catalog.models import HubConfig, Profile
from ..hub import HubClient, make_hub
from ..storage import ObjectStore, make_object_store


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
        from ..paths import resolve_repo_path

        cfg = self.model_dump()
        if self.kind == "local":
            if not self.root:
                raise ValueError("object_store: kind local needs a root directory")
            return make_object_store({"kind": "local", "root": str(resolve_repo_path(self.root))})
        cfg.pop("root")
        return make_object_store({k: v for k, v in cfg.items() if v is not None})


class HubResource(ConfigurableResource):
    """The HF Hub: online (datasets streaming + HfApi) or an offline mirror directory."""

    mode: str = "offline"
    mirror_dir: str | None = None
    push_dir: str | None = None
    org: str = "axentx"
    token_env: str = "HF_TOKEN"

    def get_client(self) -> HubClient:
        return make_hub(HubConfig(**self.model_dump()))


def resources_for_profile(profile: Profile) -> dict[str, Any]:
    """All resources of a profile, keyed as the assets' parameters name them."""
    from ..curation.config import CurationProfile
    from ..curation.resource import CurationSettings
    from ..ops.executors import executor_settings

    store_cfg = profile.object_store.model_dump()
    curation = CurationProfile(**profile.phases.get("curation", {}))
    return {
        "object_store": ObjectStoreResource(**store_cfg),
        "hub": HubResource(**profile.hub.model_dump()),
        "curation": CurationSettings(**curation.model_dump(), datatrove_executor=executor_settings(profile)),
    }
