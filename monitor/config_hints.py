""""Did you mean" for configuration errors: the known keys at the place a key was misspelt.

Pydantic reports an unknown key with its location (``receivers.http.prot``). Walking the config
model's field annotations along that location finds the section it belongs to, and difflib
the closest known key there. Discriminated unions (sampling policies) are resolved by the tag
pydantic puts into the location (``policies.0.probabilistic.rat``), which is then dropped from the
key shown to the user, who never wrote it.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Literal, Sequence, Union

from pydantic import BaseModel

__all__ = ["suggest_key", "user_loc"]


def _unwrap(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _members(annotation: Any) -> tuple[Any, ...]:
    annotation = _unwrap(annotation)
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return tuple(_unwrap(a) for a in typing.get_args(annotation) if a is not type(None))
    return (annotation,)


def _tags(model: type[BaseModel]) -> tuple[Any, ...]:
    field = model.model_fields.get("type")
    if field is None or typing.get_origin(field.annotation) is not Literal:
        return ()
    return typing.get_args(field.annotation)


def _step(annotation: Any, part: str | int) -> Any:
    """The annotation one location step below ``annotation``, or None."""
    members = _members(annotation)
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if isinstance(part, str):
        for model in models:  # a union tag names its member
            if part in _tags(model):
                return model
        for model in models:
            if part in model.model_fields:
                return model.model_fields[part].annotation
    for member in members:
        origin = typing.get_origin(member)
        args = typing.get_args(member)
        if origin in (list, tuple, Sequence, typing.Sequence) and isinstance(part, int) and args:
            return args[0]
        if origin is dict and len(args) == 2:
            return args[1]
    return None


def _known(annotation: Any) -> list[str]:
    return [k for m in _members(annotation) if isinstance(m, type) and issubclass(m, BaseModel)
            for k in m.model_fields]


def suggest_key(model: type[BaseModel], loc: Sequence[str | int]) -> str | None:
    """The known key closest to the unknown ``loc[-1]`` in its section, or None."""
    annotation: Any = model
    for part in loc[:-1]:
        annotation = _step(annotation, part)
        if annotation is None:
            return None
    close = difflib.get_close_matches(str(loc[-1]), _known(annotation), n=1, cutoff=0.6)
    return close[0] if close else None


def user_loc(model: type[BaseModel], loc: Sequence[str | int]) -> str:
    """``loc`` as the user wrote it: union tags that pydantic inserted are left out."""
    annotation: Any = model
    shown: list[str] = []
    for part in loc:
        models = [m for m in _members(annotation) if isinstance(m, type) and issubclass(m, BaseModel)]
        tagged = isinstance(part, str) and any(part in _tags(m) for m in models) and len(models) > 1
        annotation = _step(annotation, part) if annotation is not None else None
        if not tagged:
            shown.append(str(part))
    return ".".join(shown)
