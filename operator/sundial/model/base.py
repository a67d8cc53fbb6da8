"""The base model: camelCase aliases, populated by either name, frozen values."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
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
    """Status parts: unknown fields are kept as they were read (``model_extra``) and written back, so a field
    of a newer version inside a status entry survives a write by this one (an older operator can read a newer
    status, and does not erase what it cannot read). Only fields the CRD's status schema declares can be
    there (the API server prunes the rest), so what is kept is bounded by that schema.

    The top level (:class:`sundial.model.status.ScheduledJobStatus`) ignores unknown fields instead: its
    write is a merge patch of the fields this version owns, so the API server keeps the others itself."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_null_extras(cls, data: Any) -> Any:
        """A null unknown field is an absent one (merge-patch semantics): never kept, so reading and writing
        back round-trip (a kept ``null`` would be dropped by the write's ``exclude_none``)."""
        if not isinstance(data, dict):
            return data
        known = {name for name in cls.model_fields} | {f.alias for f in cls.model_fields.values() if f.alias}
        return {key: value for key, value in data.items() if value is not None or key in known}
