"""Reading the Grafana dashboard the chart ships, and turning its queries into plain PromQL.

``panel_queries`` lists every target of every panel (rows included, collapsed or not);
``substitute`` replaces Grafana's template variables the way Grafana would before it sends a
query, so a test can run each expression against a real Prometheus::

    board = load_dashboard()
    values = default_variables(board)           # every variable at All / its default
    for title, ref, expr in panel_queries(board):
        await prometheus.query(substitute(expr, values))
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

__all__ = [
    "DASHBOARD_PATH",
    "BUILTIN_VALUES",
    "load_dashboard",
    "iter_panels",
    "panel_queries",
    "variable_names",
    "variables_referenced",
    "substitute",
    "default_variables",
    "regex_selection",
]

DASHBOARD_PATH = Path(__file__).resolve().parents[2] / "helm" / "rag-monitor" / "dashboards" / "rag-monitor.json"

# Grafana's global variables as a query sees them; durations chosen so a Prometheus that has
# scraped every second for a few seconds already returns rates.
BUILTIN_VALUES: Mapping[str, str] = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__interval_ms": "15000",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
    "__auto": "15s",
}

# Grafana's four spellings: $name, ${name}, ${name:format} (or ${name.field}), [[name]] / [[name:format]].
_VARIABLE = re.compile(
    r"\$\{(?P<braced>\w+)(?:\.[^:}]*)?(?::[^}]*)?\}"
    r"|\[\[(?P<legacy>\w+)(?::\w+)?\]\]"
    r"|\$(?P<plain>\w+)"
)


def load_dashboard(path: Path = DASHBOARD_PATH) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def iter_panels(dashboard: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, rows included, in order; panels inside (collapsed) rows follow their row."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", []) if panel.get("type") == "row" else ()


def panel_queries(dashboard: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(panel title, refId, expr)`` for every PromQL target of every panel."""
    return [(panel.get("title", ""), target.get("refId", ""), target["expr"])
            for panel in iter_panels(dashboard)
            for target in panel.get("targets", [])
            if "expr" in target]


def variable_names(text: str) -> set[str]:
    """Names of the Grafana variables ``text`` refers to, in any spelling."""
    return {next(g for g in m.groups() if g) for m in _VARIABLE.finditer(text)}


def variables_referenced(dashboard: Mapping[str, Any]) -> set[str]:
    """Every variable the dashboard uses: queries, titles, descriptions, links, repeats, variable queries."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, str):
            names.update(variable_names(node))
        elif isinstance(node, dict):
            for key, value in node.items():
                if key == "repeat" and isinstance(value, str) and value:
                    names.add(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({key: value for key, value in dashboard.items() if key != "templating"})
    for variable in dashboard.get("templating", {}).get("list", []):
        walk(variable.get("query", ""))
        walk(variable.get("datasource", {}))
    return names


def substitute(expr: str, variables: Mapping[str, str]) -> str:
    """``expr`` with every Grafana variable replaced, ready for Prometheus.

    Values are inserted as Grafana renders them into a PromQL query: a single value as it is, the
    All option as the variable's ``allValue`` (``.*``), several values as ``regex_selection``
    makes them. Built-in variables (``$__rate_interval``, ``$__range``…) default to
    ``BUILTIN_VALUES`` unless ``variables`` sets them. An unknown variable raises ``KeyError``:
    an expression Prometheus would reject is better caught here, with its name.
    """
    values = {**BUILTIN_VALUES, **variables}

    def replace(match: re.Match[str]) -> str:
        name = next(g for g in match.groups() if g)
        if name not in values:
            raise KeyError(f"no value for Grafana variable {name!r} in {expr!r}")
        return values[name]

    return _VARIABLE.sub(replace, expr)


def default_variables(dashboard: Mapping[str, Any]) -> dict[str, str]:
    """Each template variable at the value the dashboard opens with: All (its ``allValue``) for
    multi-value variables, else the saved current value; datasource variables are left out (they
    pick the datasource, they are not part of a query)."""
    values: dict[str, str] = {}
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "datasource":
            continue
        if variable.get("includeAll"):
            values[variable["name"]] = variable.get("allValue") or ".*"
            continue
        current = variable.get("current", {}).get("value")
        if isinstance(current, list):
            current = current[0] if current else None
        if current is None:
            raise ValueError(f"variable {variable['name']!r} has neither All nor a current value")
        values[variable["name"]] = str(current)
    return values


_REGEX_SPECIAL = re.compile(r"[$^*{}\[\]'+?.()|]")


def regex_selection(selected: Sequence[str]) -> str:
    """Several selected values as Grafana's Prometheus datasource renders them for ``=~``: each
    regex-escaped (the backslash doubled, since it sits in a PromQL string), joined as ``(a|b)``."""
    escaped = [_REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(0), v.replace("\\", "\\\\\\\\")) for v in selected]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"
