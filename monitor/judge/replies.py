"""One declaration per judge reply shape: the JSON schema sent to the judge *and* the validation of
its answer, from the same pydantic model.

A metric declares its reply as a :class:`ReplyModel` subclass (or builds one with
:func:`reply_model` when the shape depends on the turn: the number of chunks or documents, the
metrics of a combined call) and wraps it in a :class:`ReplyShape`. The judge client sends
:attr:`ReplyShape.json_schema` as structured output and validates the reply with
:meth:`ReplyShape.validate` — once — before it counts the call: ``ok`` means the reply's values
are what the metric uses.

Validation is strict, as a failure is never a score: no coercion ("4" is not 4, ``true`` is not
1), no missing key filled with a default, no extra key. A whole number written as ``4.0`` is
accepted where an integer is due (JSON does not tell them apart); ``4.5`` is not. Errors are
classified the way the outcome counters need them: a value of the right kind outside what is
allowed (a range, a list length, a fraction where an integer is due) is ``out_of_range``;
anything else (wrong type, missing or unexpected key, a broken cross-field rule) is
``parse_error``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Mapping, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, create_model
from pydantic import Field as PydanticField
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from monitor.judge.types import JudgeError

__all__ = ["ReplyModel", "ReplyShape", "Reason", "whole_number", "reply_model", "OUT_OF_RANGE_ERRORS"]

# Reasons are shown on the status page and stored; cap them so a runaway judge cannot bloat rows.
MAX_REASON_CHARS = 600

OUT_OF_RANGE_ERRORS = frozenset({
    "greater_than", "greater_than_equal", "less_than", "less_than_equal", "too_short", "too_long",
    "not_whole_number", "finite_number", "out_of_range",
})
"""pydantic error types counted ``out_of_range``; every other error is a ``parse_error``."""


def _whole(value: Any) -> Any:
    # Runs before the strict int check: 4.0 becomes 4; 4.5 is a number out of an integer's range.
    if isinstance(value, float) and not isinstance(value, bool):
        if value.is_integer():
            return int(value)
        raise PydanticCustomError("not_whole_number", "{value} is not a whole number", {"value": value})
    return value


whole_number = BeforeValidator(_whole)
"""Annotate an ``int`` field with it to accept ``4.0`` and count ``4.5`` as out of range. Put it
*after* the field's constraints (``Annotated[int, Field(ge=1, le=5), whole_number]``): constraints
after a validator are emitted as raw ``ge``/``le`` keys instead of ``minimum``/``maximum``."""


def _cut_reason(value: Any) -> Any:
    return value[:MAX_REASON_CHARS] if isinstance(value, str) else value


Reason = Annotated[str, BeforeValidator(_cut_reason)]
"""A free-text reason, cut to 600 characters."""


class ReplyModel(BaseModel):
    """Base of every reply declaration: strict, closed, immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


M = TypeVar("M", bound=ReplyModel)


def reply_model(name: str, fields: tuple[tuple[str, Any, FieldInfo | None], ...],
                base: type[ReplyModel] = ReplyModel) -> type[ReplyModel]:
    """A :class:`ReplyModel` built from ``(key, type, field-info)`` triples in order, for shapes
    that depend on the turn. Callers cache what they build (``functools.cache`` on a function of
    the shape's parameters), so one shape is declared once per process."""
    definitions: dict[str, Any] = {
        key: (kind, info if info is not None else PydanticField()) for key, kind, info in fields}
    model: type[ReplyModel] = create_model(name, __base__=base, **definitions)
    return model


@dataclass(frozen=True)
class ReplyShape(Generic[M]):
    """A reply declaration as the judge client uses it."""

    name: str
    """The schema's name in ``response_format`` (letters, digits, ``_``, ``-``)."""
    model: type[M]
    json_schema: Mapping[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "json_schema", compact_schema(self.model.model_json_schema()))

    def validate(self, data: Mapping[str, Any]) -> M:
        """The validated reply, or ``JudgeError`` ``parse_error``/``out_of_range`` naming the first
        failing path."""
        try:
            return self.model.model_validate(data)
        except ValidationError as exc:
            raise _judge_error(exc) from None


def _judge_error(exc: ValidationError) -> JudgeError:
    errors = exc.errors(include_url=False)
    ranged = [e for e in errors if e["type"] in OUT_OF_RANGE_ERRORS]
    # A reply with both kinds of fault is a parse error: its shape is wrong, not just a value.
    first = errors[0] if len(ranged) < len(errors) else ranged[0]
    outcome = "out_of_range" if len(ranged) == len(errors) else "parse_error"
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    return JudgeError(outcome, f"{path}: {first['msg']}")


def compact_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """pydantic's JSON schema as sent to the judge: nested models inlined, no titles and no model
    docstrings (paid for in prompt tokens on every call and of no use to the judge)."""
    definitions = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(definitions[node["$ref"].rsplit("/", 1)[-1]])
            dropped = ("title", "$defs", "description") if node.get("type") == "object" else ("title",)
            return {k: walk(v) for k, v in node.items() if k not in dropped}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(dict(schema))
