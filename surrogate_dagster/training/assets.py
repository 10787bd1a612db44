"""Training group: `base_model`, then stage1 -> stage1.5 -> stage1.6 -> stage2 -> stage2.5 checkpoints.

Each checkpoint asset depends on its dataset mixture(s) and the previous checkpoint (from the
``asset://`` references of its stage file), runs in the ``gpu`` pool (one training run at a time)
and has the stage's config hash as code_version, so editing a stage file marks it stale.
"""


from dagster import (
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    MaterializeResult,
    MetadataValue,
    ObserveResult,
    asset,
    observable_source_asset,
)

from ..catalog.code_version import function_code_version
from ..catalog.keys import SMOKE_GATE, SMOKE_GATED_STAGE
from ..catalog.models import Profile
from ..runtime.smoke_gate import require_smoke_gate
from ..resources import HubResource, ObjectStoreResource
from ..runtime.host_pools import holds_pool_slot
from ..retries import TRAINER_RETRY
from .config import StageSpec, TrainingCatalog, load_training_catalog, training_profile
from .executor import TrainerExecutorResource
from .render import check_lora_shape, config_hash, stable_hash, upstream_assets

CATALOG: TrainingCatalog = load_training_catalog()
BASE_MODEL = AssetKey("base_model")  # built (tiny) or observed (hub), per profile
check_lora_shape(CATALOG)  # "continue the same LoRA": a stage file that drifts fails definitions

_MD_KEYS = {"loss_curve"}
_JSON_KEYS = {"datasets", "dataset_keys", "inputs", "reference_probe_logps"}


def _metadata(raw: dict) -> dict:
    out = {}
    for k, v in raw.items():
        if k in _MD_KEYS:
            out[k] = MetadataValue.md(v)
        elif k in _JSON_KEYS:
            out[k] = MetadataValue.json(v)
        elif isinstance(v, str) and v.startswith("s3://"):
            out[k] = MetadataValue.url(v)
        else:
            out[k] = v
    return out


def _store_config(object_store: ObjectStoreResource) -> dict:
    """The store as the trainer opens it: local root made absolute, S3 with env var NAMES only."""
    from ..paths import resolve_repo_path

    if object_store.kind == "local":
        return {"kind": "local", "root": str(resolve_repo_path(object_store.root or ""))}
    return {"kind": "s3", "bucket": object_store.bucket, "prefix": object_store.prefix,
            "endpoint_url": object_store.endpoint_url, "region": object_store.region,
            "access_key_env": object_store.access_key_env, "secret_key_env": object_store.secret_key_env,
            "max_attempts": object_store.max_attempts}


def build_tiny_base_model_asset():
    tiny = CATALOG.base_model.tiny

    @asset(key=BASE_MODEL, group_name="training", kinds={"pytorch", "huggingface"},
           code_version=stable_hash({"tiny": tiny.model_dump(), "builder": "tiny-qwen2-v1"}),
           deps=[AssetKey(m) for m in tiny.tokenizer_mixtures])
    def base_model(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
        """Local stand-in for Qwen2.5-Coder-7B: tiny random Qwen2, tokenizer learnt from the mixtures."""
        from .base_model import build_tiny_base

        store = object_store.get_store()
        built = build_tiny_base(store, CATALOG)
        return MaterializeResult(data_version=DataVersion(built.data_version), metadata={
            "stands_in_for": f"{CATALOG.base_model.hf_id}@{CATALOG.base_model.revision}",
            "parameters": built.parameters, "vocab": built.vocab, "tokenizer_rows": built.rows,
            "mixtures": MetadataValue.json(built.mixtures), "uri": store.uri(f"{built.prefix}/config.json"),
            "reused_existing_build": built.reused,
        })

    return base_model


def build_hub_base_model_asset():
    spec = CATALOG.base_model

    @observable_source_asset(key=BASE_MODEL, group_name="training")
    def base_model(hub: HubResource) -> ObserveResult:
        """Qwen/Qwen2.5-Coder-7B-Instruct at the pinned revision (training.yaml); `main` shown for drift."""
        from ..catalog.models import HubConfig
        from .base_model import hub_model_revision

        revs = hub_model_revision(spec, HubConfig(**hub.model_dump()))
        return ObserveResult(data_version=DataVersion(revs["pinned"]), metadata={
            "hf_id": spec.hf_id, "pinned_revision": revs["pinned"], "hub_main": revs["main"],
            "pin_is_main": revs["pinned"] == revs["main"]})

    return base_model


def build_stage_asset(stage: StageSpec, executor: str, base_source: str, catalog: TrainingCatalog | None = None):
    """The checkpoint asset of one stage, for the profile's executor."""
    catalog = catalog or CATALOG
    deps = [AssetKey(a) for a in upstream_assets(stage.load_config())]
    if stage.asset == SMOKE_GATED_STAGE:  # runbook Day 14: after stage 1.6's smoke tests (evals' blocking check)
        deps.append(AssetKey(SMOKE_GATE))

    @asset(name=stage.asset, group_name="training", pool="gpu", deps=deps, kinds={"axolotl", "pytorch"}, retry_policy=TRAINER_RETRY,
           code_version=function_code_version(__name__, "build_stage_asset", config=config_hash(stage, catalog, executor)),
           description=f"{stage.title} ({stage.config})")
    @holds_pool_slot
    def _checkpoint(context: AssetExecutionContext, object_store: ObjectStoreResource, hub: HubResource,
                    trainer: TrainerExecutorResource) -> MaterializeResult:
        from .stage_run import materialize_stage

        if stage.asset == SMOKE_GATED_STAGE:  # a run of its own must not start past a failed Day-14 gate
            require_smoke_gate(context, stage.asset)
        outcome = materialize_stage(
            context, stage, catalog, object_store.get_store(), _store_config(object_store),
            hub.get_client(), hub.mode == "offline", trainer, base_source)
        return MaterializeResult(data_version=DataVersion(outcome.data_version),
                                 metadata=_metadata(outcome.metadata))

    return _checkpoint


def training_assets(profile: Profile) -> list:
    """base_model (built or observed, per profile) and the five checkpoint assets."""
    section = training_profile(profile)
    base = build_tiny_base_model_asset() if section.base_model == "tiny" else build_hub_base_model_asset()
    return [base, *(build_stage_asset(s, section.executor, section.base_model) for s in CATALOG.stages)]


def training_resources(profile: Profile) -> dict:
    """The `trainer` resource of the profile (object_store and hub come from resources/core.py)."""
    return {"trainer": TrainerExecutorResource.from_profile(training_profile(profile))}
