"""The base model: camelCase aliases, populated by either name, frozen values."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class SpecModel(BaseModel):
    """Spec parts: unknown fields are errors (the API server prunes them; the webhook names them)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=False,
    )


class StatusModel(BaseModel):
    """Status parts: unknown fields are ignored, so an older operator can read a newer status."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
    )
