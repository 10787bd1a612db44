"""One settings shape: each phase's resource carries exactly its profile model's fields, with the
model's defaults and descriptions, and refuses what the model refuses."""

import pytest
from pydantic import ValidationError

from surrogate_dagster.catalog.models import HubConfig
from surrogate_dagster.curation.config import CurationProfile
from surrogate_dagster.curation.resource import CurationSettings
from surrogate_dagster.evals.config import EvalsProfile
from surrogate_dagster.evals.resources import EvalSettings
from surrogate_dagster.resources import HubResource
from surrogate_dagster.synth.config import ResolvedLLM, SynthProfile
from surrogate_dagster.synth.resource import LLMResource, SynthSettings
from surrogate_dagster.training.config import TrainingProfile
from surrogate_dagster.training.executor import TrainerExecutorResource

PAIRS = [(HubResource, HubConfig, ()), (CurationSettings, CurationProfile, ()), (LLMResource, ResolvedLLM, ()),
         (SynthSettings, SynthProfile, ()), (EvalSettings, EvalsProfile, ()),
         (TrainerExecutorResource, TrainingProfile, ("base_model",))]


@pytest.mark.parametrize("resource,model,left_out", PAIRS, ids=lambda x: getattr(x, "__name__", ""))
def test_a_resource_has_its_models_fields_defaults_and_descriptions(resource, model, left_out):
    for name, info in model.model_fields.items():
        if name in left_out:
            assert name not in resource.model_fields
            continue
        field = resource.model_fields[name]
        assert field.description == info.description, name
        if info.is_required():
            assert field.is_required(), name
            continue
        default = info.get_default(call_default_factory=True)
        if name in resource.AS_DICT:  # a nested model travels as its mapping, unset members left out
            default = {k: v for k, v in default.model_dump(mode="json").items() if v is not None} \
                if hasattr(default, "model_dump") else default
        assert field.get_default(call_default_factory=True) == default, name
    assert resource.PROFILE_MODEL is model


def test_a_resource_refuses_what_its_model_refuses():
    with pytest.raises(ValidationError, match="offline hub needs mirror_dir and push_dir"):
        HubResource(mode="offline", org="o")
    with pytest.raises(ValidationError):
        SynthSettings(target_count=0)  # ge=1 on the model
    with pytest.raises(ValidationError, match="smoke_gate_reason"):
        EvalSettings(offline=True, smoke_gate="report_only")
    with pytest.raises(ValidationError, match="needs a k8s"):
        TrainerExecutorResource(executor="k8s", gpu_count=1)


def test_profile_gives_the_validated_model_back():
    ev = EvalSettings(offline=True, inference={"backend": "transformers", "batch_size": 4})
    prof = ev.profile()
    assert isinstance(prof, EvalsProfile) and prof.inference.batch_size == 4
    hub = HubResource(mode="offline", mirror_dir="m", push_dir="p", org="o")
    assert hub.profile() == HubConfig(mode="offline", mirror_dir="m", push_dir="p", org="o")


def test_the_object_store_resource_is_the_section_of_its_kind():
    from surrogate_dagster.catalog.models import LocalStoreConfig, S3StoreConfig
    from surrogate_dagster.resources import ObjectStoreResource

    for name, info in S3StoreConfig.model_fields.items():
        if name not in ("kind", "bucket"):
            assert ObjectStoreResource.model_fields[name].get_default() == info.get_default(), name
    assert isinstance(ObjectStoreResource(kind="local", root="r").profile(), LocalStoreConfig)
    assert ObjectStoreResource(kind="s3", bucket="b").profile() == S3StoreConfig(kind="s3", bucket="b")
    with pytest.raises(ValidationError):
        ObjectStoreResource(kind="local")  # no root
    with pytest.raises(ValidationError):
        ObjectStoreResource(kind="s3")  # no bucket
