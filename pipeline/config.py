"""Settings for a run: configs/default.toml, then --config, then PIPELINE_* variables, then flags."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError

DEFAULT_FILE = Path(__file__).resolve().parent.parent / "configs" / "default.toml"
ENV_PREFIX = "PIPELINE_"
STATUSES = ("solved", "multiple", "unsolvable", "invalid", "malformed", "error")
EXECUTORS = ("local", "dask")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass
class Settings:
    """Every knob of `pipeline run`, after precedence is applied."""

    output: str = "output/{stem}"
    workers: int = 0
    chunk_size: int = 20000
    in_flight_per_worker: int = 2
    first_solution: bool = False
    fail_on: list[str] = field(default_factory=list)
    puzzle_column: str = ""
    solution_column: str = ""
    timings: bool = True
    executor: str = "local"
    scheduler: str = ""
    log_level: str = "INFO"
    canonical: bool = False

    @property
    def limit(self) -> int:
        return 1 if self.first_solution else 2

    def worker_count(self) -> int:
        return self.workers if self.workers > 0 else (os.cpu_count() or 1)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def load(config_file: str | None = None, flags: dict[str, Any] | None = None,
         environ: dict[str, str] | None = None) -> Settings:
    """Settings from the layers, lowest first: defaults file, config file, env, flags."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    if DEFAULT_FILE.exists():
        values.update(_read_toml(DEFAULT_FILE))
    if config_file:
        values.update(_read_toml(Path(config_file)))
    known = {f.name: f for f in fields(Settings)}
    # Dask's own variable counts as an environment layer, below PIPELINE_SCHEDULER.
    if environ.get("DASK_SCHEDULER_ADDRESS"):
        values["scheduler"] = environ["DASK_SCHEDULER_ADDRESS"]
    for name in known:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is not None and raw != "":
            values[name] = raw
    values.update({k: v for k, v in (flags or {}).items() if v is not None})
    unknown = set(values) - set(known)
    if unknown:
        raise UsageError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    settings = Settings(**{k: _coerce(k, v, known[k].type) for k, v in values.items()})
    _validate(settings)
    return settings


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise UsageError(f"config file {path}: not found") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"config file {path}: {exc}") from None
    return data.get("run", data)


def _coerce(name: str, value: Any, type_: Any) -> Any:
    kind = str(type_)
    try:
        if kind == "int":
            if isinstance(value, bool):
                raise ValueError
            return int(value)
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind == "list[str]":
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            return [str(v) for v in value]
        return str(value)
    except (TypeError, ValueError):
        raise UsageError(f"setting {name}: {value!r} is not a valid {kind}") from None


def _validate(s: Settings) -> None:
    if s.workers < 0:
        raise UsageError(f"workers must be 0 (one per core) or more, not {s.workers}")
    if s.chunk_size < 1:
        raise UsageError(f"chunk size must be at least 1, not {s.chunk_size}")
    if s.in_flight_per_worker < 1:
        raise UsageError("in_flight_per_worker must be at least 1")
    bad = [x for x in s.fail_on if x not in STATUSES]
    if bad:
        raise UsageError(f"--fail-on: unknown status {bad[0]!r} (one of {', '.join(STATUSES)})")
    if s.executor not in EXECUTORS:
        raise UsageError(f"--executor: {s.executor!r} is not one of {', '.join(EXECUTORS)}")
    s.log_level = s.log_level.upper()
    if s.log_level not in LOG_LEVELS:
        raise UsageError(f"--log-level: {s.log_level!r} is not one of {', '.join(LOG_LEVELS)}")
