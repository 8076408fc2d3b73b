"""The configuration reference, as Markdown, from the settings models (``daemon/config.py``): every
key of every section with its type, default, environment variable and description, read from the
fields themselves (``Field(description=...)``), so the reference and the code cannot disagree."""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from daemon.config import ENV_ONLY, ENV_PREFIX, Collaborator, JobOverride, JobsSection, Settings

INTRO = f"""\
Every key memsync reads, written from the settings models in `daemon/config.py` (`make docs`;
`memsync docs configuration` prints the same). Edits here are overwritten; a test fails when this
file and the models disagree.

**Where settings come from.** A TOML file, given with `-c FILE` or `MEMSYNC_CONFIG` (memsync has no
default config file: with neither, settings come from variables alone), then the environment,
which overrides the file, then one `.env` file read last: the file `MEMSYNC_ENV_FILE` names (a
service's secrets file), else the `.env` beside the config file, else, with no config file, the
working directory's. Every key has a variable, `{ENV_PREFIX}<SECTION>__<KEY>` (a list or a table as
JSON: `MEMSYNC_ALERTS__GRACE='{{"offline": 15}}'`). Relative paths in the file are relative to the
file's folder, and `~` is expanded. A secret comes from the environment or `.env` only; memsync
refuses it in a config file. Unknown keys and invalid values are refused in one
sentence naming each key and where it came from, with exit 78.

Start from [config/memsync.example.toml](../../config/memsync.example.toml). `<data_dir>` below is
`data_dir`'s value, and `<site>` is `site.name`.
"""
SECRETS = {f"{section}.{key}" for section, key in ENV_ONLY}


def _plain(annotation: Any) -> str:
    """A type as a reader of TOML says it."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        bounds = _bounds(list(args[1:]))
        text = f"{_plain(args[0])}{f' ({bounds})' if bounds else ''}"
    elif origin in (Union, types.UnionType):
        text = " or ".join(_plain(a) for a in args if a is not type(None))
    elif origin is Literal:
        text = " | ".join(json.dumps(a) for a in args)
    elif origin is list:
        text = f"list of {_plural(_plain(args[0]))}"
    elif origin is dict:
        text = f"table of {_plural(_plain(args[1]))}"
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        text = "table"
    else:
        names = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path", SecretStr: "string"}
        text = names.get(annotation, getattr(annotation, "__name__", str(annotation)))
    return text


def _plural(noun: str) -> str:
    head, space, rest = noun.partition(" ")
    return f"{head}s{space}{rest}" if head in {"string", "integer", "number", "boolean", "path", "table"} else noun


def _bounds(metadata: list[Any]) -> str:
    found = []
    for item in metadata:
        for kind, attribute, sign in (
            (annotated_types.Ge, "ge", ">="),
            (annotated_types.Gt, "gt", ">"),
            (annotated_types.Le, "le", "<="),
            (annotated_types.Lt, "lt", "<"),
        ):
            if isinstance(item, kind):
                found.append(f"{sign} {_number(getattr(item, attribute))}")
        if isinstance(item, annotated_types.MinLen) and item.min_length > 0:
            found.append(f"at least {item.min_length} long")
        if isinstance(item, annotated_types.MaxLen):
            found.append(f"at most {item.max_length} long")
        if isinstance(item, FieldInfo):
            found.append(_bounds(item.metadata))
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            found.append(f"matching `{pattern}`")
    return ", ".join(f for f in found if f)


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _type(field: FieldInfo) -> str:
    bounds = _bounds(field.metadata)
    return _plain(field.annotation) + (f" ({bounds})" if bounds else "")


def _toml(value: Any) -> str:
    """A default as it would be written in the TOML file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    return json.dumps(str(value))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "(required)"
    value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    if value is None or value is PydanticUndefined:
        return "unset"
    if isinstance(value, BaseModel):
        return "(a table)"
    return f"`{_toml(value)}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rows(model: type[BaseModel], path: list[str], env: list[str] | None) -> Iterator[str]:
    for name, field in model.model_fields.items():
        if name == "config_file":
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            continue  # a table of its own: a section below
        key = ".".join([*path, name])
        variable = "(none)" if env is None else f"`{ENV_PREFIX}{'__'.join(part.upper() for part in [*env, name])}`"
        if key in SECRETS:
            variable += " (secret: the environment or `.env` only)"
        description = field.description or ""
        yield f"| `{name}` | {_cell(_type(field))} | {_cell(_default(field))} | {variable} | {_cell(description)} |"


def _table(model: type[BaseModel], path: list[str], env: list[str] | None) -> list[str]:
    rows = list(_rows(model, path, env))
    if not rows:
        return []
    return ["| key | type | default | variable | meaning |", "| --- | --- | --- | --- | --- |", *rows, ""]


def _doc(model: type[BaseModel]) -> list[str]:
    doc = inspect.getdoc(model)
    own = model.__doc__ is not None and "__doc__" in vars(model)
    return [" ".join(doc.replace("``", "`").split()), ""] if doc and own else []


def _sections(model: type[BaseModel], path: list[str]) -> Iterator[str]:
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            continue
        here = [*path, name]
        yield from [f"## [{'.'.join(here)}]", ""]
        yield from _doc(annotation)
        yield from _table(annotation, here, here)
        yield from _sections(annotation, here)
        if annotation is JobsSection:
            yield from _job_tables()


def _job_tables() -> Iterator[str]:
    yield from ["## [jobs.\\<name\\>]", ""]
    yield from _doc(JobOverride)
    yield from [
        "One table a job, named by the job (`memsync jobs` lists them): `[jobs.daily-digest]`. In the "
        'environment, all of them as one JSON table: `MEMSYNC_JOBS__SCHEDULES=\'{"daily-digest": {"cron": '
        '"0 7 * * *"}}\'`.',
        "",
    ]
    yield from _table(JobOverride, ["jobs", "<name>"], None)


def render() -> str:
    """The whole reference: the top-level keys, each section (``## [section]``), the job tables and
    the collaborators."""
    lines = ["# Configuration reference", "", INTRO, "## Top level", ""]
    lines += _table(Settings, [], [])
    lines += list(_sections(Settings, []))
    lines += ["## [[collaborators]]", ""]
    lines += _doc(Collaborator)
    lines += [
        "One `[[collaborators]]` table a person. In the environment, the whole list as JSON: "
        '`MEMSYNC_COLLABORATORS=\'[{"name": "ada", "chat_id": 111111111}]\'`.',
        "",
    ]
    lines += _table(Collaborator, ["collaborators"], None)
    return "\n".join(lines).rstrip() + "\n"
