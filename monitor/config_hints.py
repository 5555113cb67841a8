""""Did you mean" for configuration errors: the known keys at the place a key was misspelt.

Pydantic reports an unknown key with its location (``receivers.http.prot``). Walking the config
model's field annotations along that location finds the section it belongs to, and difflib
the closest known key there. Discriminated unions (sampling policies) are resolved by the tag
pydantic puts into the location (``policies.0.probabilistic.rat``), which is then dropped from the
key shown to the user, who never wrote it.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any, Literal, Mapping, Sequence, Union

import yaml
from pydantic import BaseModel

__all__ = ["suggest_key", "suggest_tag", "user_loc", "bad_value", "key_lines", "unknown_metric_ids"]

# Keys whose values are never echoed in an error (an API key, a bearer token, a password, a DSN).
_SECRET_KEY = re.compile(r"key|token|password|secret|credential|url|dsn|endpoint|header", re.I)
_MAX_SHOWN = 60


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


def bad_value(loc: Sequence[str | int], value: Any) -> str:
    """``" (got 'thirty')"`` for a scalar the user gave, or ``""``: never the value of a key that
    may hold a secret (``api_key``, ``bearer_token``, a URL with credentials), never a structure."""
    if any(isinstance(p, str) and _SECRET_KEY.search(p) for p in loc):
        return ""
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
        return ""
    shown = repr(value)
    return f" (got {shown if len(shown) <= _MAX_SHOWN else shown[:_MAX_SHOWN - 1] + '…'})"


def suggest_tag(ctx: Mapping[str, Any]) -> str | None:
    """For an unknown discriminator (``type: probabilistc``): the message with the closest tag."""
    tag = ctx.get("tag")
    expected = re.findall(r"'([^']+)'", str(ctx.get("expected_tags", "")))
    if not isinstance(tag, str) or not expected:
        return None
    close = difflib.get_close_matches(tag, expected, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown type {tag!r}{hint} (known: {', '.join(expected)})"


def key_lines(text: str) -> dict[str, int]:
    """Dotted key (``sampling.policies.0.rate``) -> the 1-based line it is written on."""
    lines: dict[str, int] = {}

    def walk(node: yaml.Node, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = f"{path}.{key.value}" if path else str(key.value)
                lines[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = f"{path}.{index}"
                lines[child] = item.start_mark.line + 1
                walk(item, child)

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root, "")
    return lines


def unknown_metric_ids(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, message) for every unknown id in the raw ``evaluation.metrics`` list, each with the
    closest known id."""
    from monitor.evaluation.registry import default_registry

    evaluation = data.get("evaluation")
    metrics = evaluation.get("metrics") if isinstance(evaluation, Mapping) else None
    if not isinstance(metrics, (list, tuple)):
        return []
    known = default_registry().ids()
    found = []
    for index, item in enumerate(metrics):
        metric_id = item.get("id") if isinstance(item, Mapping) else item
        if isinstance(metric_id, str) and metric_id not in known:
            close = difflib.get_close_matches(metric_id, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            key = f"evaluation.metrics.{index}" + (".id" if isinstance(item, Mapping) else "")
            found.append((key, f"unknown metric id {metric_id!r}{hint}"))
    return found
