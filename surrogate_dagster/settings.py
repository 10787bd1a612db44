"""One settings shape: a phase's Dagster resource is its profile model.

Every profile section is a strict pydantic model (`catalog.models.Strict`: unknown keys refused)
with its defaults, bounds and descriptions declared once. `profile_resource(Model)` makes the
Dagster resource base of that section from the model's own fields, so the YAML, the resource and
the UI's launchpad (which shows each field's description) cannot drift apart, and a resource
built with values the model refuses fails at construction with the model's own error.
`resource.profile()` gives the section back as the validated, Dagster-free model the logic takes.

A nested model (a Kubernetes pod spec, say) is not a Dagster config type: `as_dict` names such
fields, which the resource carries as plain mappings and `profile()` validates back into the
model.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dagster import ConfigurableResource
from pydantic import BaseModel, Field, create_model, model_validator


class ProfileResource(ConfigurableResource):
    """A resource whose fields are a profile model's (see `profile_resource`)."""

    PROFILE_MODEL: ClassVar[type[BaseModel] | None] = None
    AS_DICT: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _nested_as_mappings(cls, data: Any) -> Any:
        # A nested section travels as a mapping without its unset (None) members: Dagster's config
        # maps take no null values, and the model's defaults give them back in `profile()`.
        if isinstance(data, dict):
            data = {k: _without_none(v) if k in cls.AS_DICT and v is not None else v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _valid_as_profile(self) -> "ProfileResource":
        if type(self).PROFILE_MODEL is not None:
            self.profile()  # the model's validators (cross-field rules included) run on the resource
        return self

    def profile(self) -> Any:
        """The resource's fields as the validated profile model."""
        model = type(self).PROFILE_MODEL
        if model is None:
            raise TypeError(f"{type(self).__name__} has no profile model")
        return model.model_validate({k: getattr(self, k) for k in model.model_fields if k in type(self).model_fields})


def profile_resource(model: type[BaseModel], *, base: type[ConfigurableResource] = ProfileResource,
                     as_dict: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> type[ProfileResource]:
    """A resource base class with `model`'s fields (annotation, default, bounds, description);
    `base` may add behaviour shared by several resources (it must derive from ProfileResource)."""
    if not issubclass(base, ProfileResource):
        raise TypeError(f"{base.__name__} must derive from ProfileResource")
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name in exclude:
            continue
        if name in as_dict:
            default = info.get_default(call_default_factory=True)
            if isinstance(default, BaseModel):
                default = _without_none(default.model_dump(mode="json"))
            elif isinstance(default, dict):
                default = _without_none({k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v
                                         for k, v in default.items()})
            fields[name] = (dict[str, Any] | None, Field(default, description=info.description))
        else:
            fields[name] = (info.annotation, info)
    cls = create_model(f"{model.__name__}Fields", __base__=base, **fields)
    cls.PROFILE_MODEL = model
    cls.AS_DICT = tuple(as_dict)
    cls.__doc__ = f"The fields of {model.__module__}.{model.__name__}, as a Dagster resource."
    return cls


def _without_none(value: Any) -> Any:
    """A mapping (and the mappings inside it) without its None members."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value
